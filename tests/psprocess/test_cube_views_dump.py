"""psprocess dump against CubeLib's cube_dump: the values of every metric x
call path x location, inclusive and exclusive along the metric tree and
along the call tree, for every real cube under data/scorep (Score-P 8.4
profiles and CubeLib 4.8.2's outputs, with the values CubeLib's own library
computes for them at full precision: data/scorep/values, made by
data/scorep/make.sh), per location and over all locations; and the CUBE user
guide's own example (2.1.2), a small cube built here byte by byte, where
CUBE shows the collapsed Time as 24 and the expanded one as 12.

Every run goes through the real command (python -m psuite.psprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.psprocess.cube_views_cubes import guide_cube
from tests.psprocess.cubelib_reference import (
    CUBES,
    DATA,
    VIEWS,
    anchor,
    close,
    cubelib_values,
    cubex,
    dump,
    left_out,
)


def psprocess(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def rows(text: str) -> list[list[str]]:
    """The cnode,thread,value (or cnode,value) rows of a csv dump."""
    return [line.split(",") for line in text.splitlines() if line.strip()]


def blocks(text: str, nmetrics: int = 1) -> list[list[list[str]]]:
    """cube_dump's csv (and psprocess dump -f csv) per metric: each metric
    lists the same call paths and threads, so the rows split evenly (the
    blank lines differ: cube_dump puts two before every call path)."""
    out = rows(text)
    assert len(out) % nmetrics == 0, (len(out), nmetrics)
    n = len(out) // nmetrics
    return [out[k * n:(k + 1) * n] for k in range(nmetrics)]


def test_every_cube_has_reference_values():
    assert {"mpi1", "mpi2", "omp", "diff", "merge", "mean", "cut", "summary/summary-cut"} <= set(CUBES)
    for c in CUBES:
        assert (DATA / "values" / f"{Path(c).name}.tsv.gz").is_file()


# cubes with derived metrics psuite cannot evaluate (it says so and leaves them out): none now that the
# <cubeplinit> programs of Score-P's remapping spec (execution, comp, mpi, ...) run
LEFT_OUT_BY_PSUITE: set[str] = set()


def floor(metric_tree: str, call_tree: str, want: dict, metric: str, derived: bool = False) -> float:
    """0 where CubeLib and psuite add the same stored numbers; where a view subtracts (the call tree exclusive of
    a value stored inclusive, the metric tree exclusive: a metric less its children) or a derived metric does
    (time(e) - omp_idle_threads(e), summed up the call tree in another order), a result near 0 is rounding noise
    of the larger operands: 1e-12 of the largest magnitude of the metric in the view or metric-inclusive."""
    if metric_tree == "incl" and call_tree == "incl" and not derived:
        return 0.0
    views = {(metric_tree, call_tree, metric), ("incl", call_tree, metric)}
    scale = max((abs(v) for k, v in want.items() if k[:3] in views), default=0.0)
    return 1e-12 * scale


@pytest.mark.parametrize("view", VIEWS, ids=[f"metric-{m}-call-{c}" for m, c in VIEWS])
@pytest.mark.parametrize("cube", CUBES)
def test_dump_equals_cubelib(cube, view):
    """Per metric (all of them, derived ones too), call path and location, and over all locations (-t aggr:
    CubeLib's get_sev without a location: a sum, min/max for MINDOUBLE/MAXDOUBLE, a postderived metric
    evaluated on the aggregates), psprocess dump's value is CubeLib's full-precision one (relative 1e-9)."""
    metric_tree, call_tree = view
    a = anchor(cubex(cube))
    want = cubelib_values(cube)
    assert {k[2] for k in want} <= set(a.metrics)
    # psuite leaves out (saying so) the derived metrics whose CubePL it cannot evaluate: exactly these, here
    gone = left_out(cubex(cube))
    assert set(gone) <= a.derived
    assert bool(gone) == (cube in LEFT_OUT_BY_PSUITE), gone
    # GHOST metrics (Score-P's bytes_sent, read by the derived bytes_* ones) CubeLib's dump leaves out: no reference
    metrics = [m for m in a.metrics if m not in gone and m not in a.ghosts]
    compared, bad = 0, []
    for aggr in (False, True):
        got = dump(cubex(cube), metrics, metric_tree, call_tree, aggr)
        for name, block in zip(metrics, got, strict=True):
            locs = ["aggr"] if aggr else range(len(a.locations))
            assert set(block) == {(c, t) for c in range(len(a.cnodes)) for t in locs}, name
            tol = floor(metric_tree, call_tree, want, name, name in a.derived)
            for (c, t), value in block.items():
                loc = "all" if aggr else str(a.locations[t])
                expected = want.get((metric_tree, call_tree, name, a.cnodes[c], loc), 0.0)
                compared += 1
                if not close(value, expected, tol):
                    bad.append((name, a.cnodes[c], loc, value, expected))
    assert not bad, f"{len(bad)} of {compared} values differ (metric, cnode, location, psuite, CubeLib): {bad[:5]}"
    assert compared == len(metrics) * len(a.cnodes) * (len(a.locations) + 1) > 0


def test_dump_metric_tree_differs_from_call_tree_on_real_cube():
    """Along the call tree Score-P's time differs (the assertion above could
    not pass with the views swapped): mpi_work's inclusive time is its
    callees' with its own."""
    proc = {z: psprocess("dump", str(DATA / "mpi1.cubex"), "-f", "csv", "-m", "time", "-c", "0", "-x", z)
            for z in ("incl", "excl")}
    incl, excl = (float(blocks(proc[z].stdout)[0][0][2]) for z in ("incl", "excl"))
    assert incl > 100 * excl > 0


def test_adhoc_expression_over_threads_is_evaluated_on_the_sums(tmp_path):
    """cube_dump's new metrics are POSTDERIVED: over all threads a ratio of
    sums, not the sum of per-thread ratios."""
    cube = str(DATA / "merge.cubex")
    per = psprocess("dump", cube, "-f", "csv", "-m", "metric::time()/metric::visits()", "-x", "incl",
                    "-c", "1")
    aggr = psprocess("dump", cube, "-f", "csv", "-m", "metric::time()/metric::visits()", "-x", "incl",
                     "-c", "1", "-t", "aggr")
    parts = psprocess("dump", cube, "-f", "csv", "-m", "time,visits", "-x", "incl", "-c", "1", "-t", "aggr")
    for p in (per, aggr, parts):
        assert p.returncode == 0, p.stderr
    time, visits = (float(b[0][-1]) for b in blocks(parts.stdout, 2))
    ratio = float(blocks(aggr.stdout)[0][0][-1])
    assert ratio == pytest.approx(time / visits, rel=1e-12)
    per_thread = [float(r[2]) for r in blocks(per.stdout)[0]]
    assert len(per_thread) == 2 and ratio != pytest.approx(sum(per_thread), rel=1e-3)


def test_bad_expression_is_refused(tmp_path):
    """cube_dump prints an empty block and exits 0 on an expression it
    cannot parse; psprocess says so on one line and exits 2."""
    proc = psprocess("dump", str(DATA / "merge.cubex"), "-m", "metric::time()/*2", "-o", "out.txt", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr and "metric::time()/*2" in proc.stderr
    assert not (tmp_path / "out.txt").exists()


# ---------------------------------------------------------------- the guide's example

@pytest.mark.parametrize(("metric_tree", "calltree", "cnode", "expected"), [
    # cube_dump -m Time -t aggr -x METRIC_TREE -z CALLTREE gives these on this cube
    ("incl", "incl", "0", 24.0),  # collapsed Time over the whole call tree and both threads
    ("excl", "incl", "0", 12.0),  # expanded: less User and System time
    ("incl", "excl", "1", 8.0),
    ("excl", "excl", "1", 4.0),
])
def test_guide_example_collapsed_time(tmp_path, metric_tree, calltree, cnode, expected):
    guide_cube(tmp_path / "example.cubex")
    proc = psprocess("dump", "example.cubex", "-m", "Time", "-c", cnode, "-t", "aggr", "-f", "csv",
                     "--metric-tree", metric_tree, "-x", calltree, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert float(blocks(proc.stdout)[0][0][-1]) == expected
    # a child metric has no children: the same in both views
    user = psprocess("dump", "example.cubex", "-m", "User time", "-c", cnode, "-t", "aggr", "-f", "csv",
                     "--metric-tree", metric_tree, "-x", calltree, cwd=tmp_path)
    assert float(blocks(user.stdout)[0][0][-1]) == {"0": 6.0, "1": 2.0}[cnode]


def test_guide_example_stat_totals(tmp_path):
    """stat's inclusive row for main: the collapsed Time by default, the
    expanded one with --metric-tree excl."""
    guide_cube(tmp_path / "example.cubex")
    for metric_tree, time in (("incl", 24.0), ("excl", 12.0)):
        stat = psprocess("stat", "example.cubex", "-m", "Time", "-f", "json", "--metric-tree", metric_tree,
                         cwd=tmp_path)
        assert stat.returncode == 0, stat.stderr
        rows = json.loads(stat.stdout)["rows"]
        incl = next(r for r in rows if r["view"] == "incl")
        assert incl["sum"] == time
