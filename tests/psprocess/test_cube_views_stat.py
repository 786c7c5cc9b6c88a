"""psprocess stat against CubeLib's cube_stat on the real cubes under
data/scorep: the top-N flat profile (cube_stat -t N: calls, exclusive and
inclusive time, by exclusive time) and the statistics across locations
per metric and routine (cube_stat -%), number by number; and where
cube_stat is wrong or refuses, what psprocess does instead: a variance of
0 for identical values (cube_stat: -1.38778e-17), a flat profile of a cube
without Score-P's visits (cube_stat -t: "Cannot find metric 'Visits'").

The cube_stat outputs are CubeLib 4.8.2's, stored by make.sh
(data/scorep/text/stat-*.txt, commands in commands.tsv); the numbers
psprocess prints are also checked at full precision (relative 1e-9)
against CubeLib's values (data/scorep/values). Every run of psprocess
goes through the real command."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.psprocess.cube_views_cubes import guide_cube
from tests.psprocess.cubelib_reference import DATA, REL, anchor, cubelib_values, cubex


def psprocess(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def close(value: float, printed: str) -> bool:
    """value as cube_stat prints it: six significant digits."""
    want = float(printed)
    return abs(value - want) <= 5e-6 * abs(want) + 1e-15


STAT_CUBES = ["mpi1", "mpi3r", "omp", "remap"]  # make.sh ran cube_stat on these (text/stat-*.txt)


def region_values(cube: str, metric: str, call_tree: str, region: str) -> dict[str, float]:
    """Per location id (and 'all'), CubeLib's value of REGION summed over its call paths (values/, metric tree
    inclusive): exclusive values of every call path of it, inclusive ones of those not inside another of it."""
    a = anchor(cubex(cube))
    want = cubelib_values(cube)
    names = dict(zip(a.cnodes, (p[0] for p in a.paths), strict=True))
    picked = [c for c in a.cnodes if names[c][-1] == region
              and (call_tree == "excl" or region not in names[c][:-1])]
    assert picked, region
    return {loc: sum(want.get(("incl", call_tree, metric, c, loc), 0.0) for c in picked)
            for loc in [*map(str, a.locations), "all"]}


@pytest.mark.parametrize("cube", STAT_CUBES)
def test_top_equals_cube_stat(cube):
    """cube_stat -t 5 (text/stat-t5-CUBE.txt): the same regions in its order (by exclusive time), calls, and
    times to its six digits; and the times and calls at full precision: CubeLib's values summed per region."""
    reference = (DATA / "text" / f"stat-t5-{cube}.txt").read_text()
    proc = psprocess("stat", str(cubex(cube)), "-t", "5", "-f", "csv")
    assert proc.returncode == 0, proc.stderr
    got = list(csv.reader(io.StringIO(proc.stdout)))
    want = list(csv.reader(io.StringIO(reference)))
    assert got[0] == ["region", "calls", "exclusive time", "inclusive time"]
    assert len(got) == len(want) == 6
    for g, w in zip(got[1:], want[1:], strict=True):
        assert g[0] == w[0]  # in cube_stat's order: by exclusive time
        assert int(g[1]) == int(w[1])
        assert all(close(float(a), b) for a, b in zip(g[2:], w[2:], strict=True)), (g, w)
        assert int(g[1]) == region_values(cube, "visits", "excl", g[0])["all"]
        assert float(g[2]) == pytest.approx(region_values(cube, "time", "excl", g[0])["all"], rel=REL)
        assert float(g[3]) == pytest.approx(region_values(cube, "time", "incl", g[0])["all"], rel=REL)


def stat_rows(reference: str) -> dict[tuple[str, str], list[str]]:
    """cube_stat -%'s csv: (metric, routine label) -> the statistics (the first row of each)."""
    out: dict[tuple[str, str], list[str]] = {}
    for row in csv.reader(io.StringIO(reference)):
        if row and row[0] != "cube::Metric":
            out.setdefault((row[0], row[1]), row[2:])
    return out


@pytest.mark.parametrize("cube", STAT_CUBES)
def test_statistics_equal_cube_stat(cube):
    """cube_stat -% -m time,visits -r main,work (text/stat-pct-CUBE.txt): count, sum, mean, variance, minimum,
    median and maximum across the locations of main's inclusive and exclusive values and of each callee's (its
    INCL(name) or LEAF(name) row), to cube_stat's six digits; and every incl/excl row (main, and work summed over
    its three call paths) at full precision against CubeLib's values per location."""
    want = stat_rows((DATA / "text" / f"stat-pct-{cube}.txt").read_text())
    proc = psprocess("stat", str(cubex(cube)), "-m", "time,visits", "-r", "main,work", "-f", "csv")
    assert proc.returncode == 0, proc.stderr
    seen = set()
    full = 0
    for r in csv.DictReader(io.StringIO(proc.stdout)):
        if r["view"] in ("incl", "excl"):
            per = region_values(cube, r["metric"], r["view"], r["routine"])
            values = [v for loc, v in per.items() if loc != "all"]
            mean = sum(values) / len(values)
            assert int(r["count"]) == len(values)
            for stat, expected in (("sum", per["all"]), ("mean", mean), ("minimum", min(values)),
                                   ("maximum", max(values))):
                assert float(r[stat]) == pytest.approx(expected, rel=REL), (r["metric"], r["routine"], stat)
            variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
            # a variance is a subtraction of near-equal values: rounding noise relative to the mean's square
            assert float(r["variance"]) == pytest.approx(variance, rel=REL, abs=1e-12 * mean**2)
            full += 1
        if r["routine"] != "main":
            continue  # cube_stat prints work once per call path: compared at full precision above
        name = r["routine"] if r["view"] != "callee" else r["callee"]
        label = {"incl": "INCL", "excl": "EXCL"}.get(r["view"])
        key = (r["metric"], f"{label}({name})") if label else next(
            k for k in ((r["metric"], f"INCL({name})"), (r["metric"], f"LEAF({name})")) if k in want)
        w = want[key]
        seen.add(key)
        assert int(r["count"]) == int(w[0])
        for stat, printed in zip(("sum", "mean", "variance", "minimum", "median", "maximum"),
                                 (w[1], w[2], w[3], w[4], w[6], w[8]), strict=True):
            assert close(float(r[stat]), printed), (key, stat, r[stat], printed)
    assert full == 2 * 2 * 2
    # every row of main's block; work's own blocks (one per call path) print LEAF(work) rows only
    assert seen <= set(want) and set(want) - seen <= {("time", "LEAF(work)"), ("visits", "LEAF(work)")}


def test_identical_values_have_no_variance(tmp_path):
    """Five locations each 0.1: cube_stat's one-pass variance gives
    -1.38778e-17 for main's inclusive time (and 1.73472e-18 for its
    exclusive time); the variance is 0."""
    guide_cube(tmp_path / "tenth.cubex", (0.1, 0.1, 0.1), processes=5)
    proc = psprocess("stat", "tenth.cubex", "-m", "Time", "-f", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert len(rows) == 4 and all(r["count"] == 5 for r in rows)
    assert [r["variance"] for r in rows] == [0, 0, 0, 0]
    assert [r["minimum"] == r["maximum"] == r["median"] for r in rows] == [True] * 4


def test_top_of_a_cube_without_scorep_metrics(tmp_path):
    """cube_stat -t refuses a cube without Score-P's visits metric; psprocess
    gives the flat profile of the metrics it has, by the first one's
    exclusive value."""
    guide_cube(tmp_path / "example.cubex")
    proc = psprocess("stat", "example.cubex", "-t", "2", "-f", "csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["region"] for r in rows] == ["main", "foo"]  # ties: in the order of the regions
    assert [float(rows[0][f"Time {v}"]) for v in ("excl", "incl")] == [8.0, 24.0]
    assert [float(rows[0][f"User time {v}"]) for v in ("excl", "incl")] == [2.0, 6.0]
