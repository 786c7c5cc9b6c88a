"""psprocess dump against CubeLib's cube_dump: the values of every metric x
call path x location, inclusive and exclusive along the metric tree and
along the call tree, for every real cube under data/scorep (Score-P 8.4
profiles and CubeLib 4.8.2's diff, merge, mean and cut of them, with the
csv cube_dump printed for them: data/scorep/make.sh); and the CUBE user
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

DATA = Path(__file__).parent / "data" / "scorep"
CUBES = sorted(p.stem for p in DATA.glob("*.cubex"))
VIEWS = [(metric_tree, calltree) for metric_tree in ("incl", "excl") for calltree in ("incl", "excl")]


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
    assert {"mpi1", "mpi2", "omp", "diff", "merge", "mean", "cut"} <= set(CUBES)
    for c in CUBES:
        for metric_tree, calltree in VIEWS:
            assert (DATA / f"{c}.{metric_tree}-metric.{calltree}-call.csv").is_file()


@pytest.mark.parametrize("view", VIEWS, ids=[f"metric-{m}-call-{c}" for m, c in VIEWS])
@pytest.mark.parametrize("cube", CUBES)
def test_dump_equals_cube_dump(cube, view):
    """Per metric (in the file's order, which cube_info -l lists), call path
    and location, psprocess's value is cube_dump's: its six significant
    digits, or the same number where cancellation leaves only noise."""
    metric_tree, calltree = view
    metrics = (DATA / f"{cube}.metrics.txt").read_text().split()
    want = blocks((DATA / f"{cube}.{metric_tree}-metric.{calltree}-call.csv").read_text(), len(metrics))
    proc = psprocess("dump", str(DATA / f"{cube}.cubex"), "-f", "csv", "-m", "all", "-c", "all",
                     "--metric-tree", metric_tree, "-x", calltree)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    got = blocks(proc.stdout, len(metrics))
    for name, w, g in zip(metrics, want, got, strict=True):
        assert [r[:2] for r in g] == [r[:2] for r in w], name  # the same call paths and threads, in order
        scale = max(abs(float(r[2])) for r in w)
        for rw, rg in zip(w, g, strict=True):
            expected, value = float(rw[2]), float(rg[2])
            # cube_dump prints six significant digits
            assert abs(value - expected) <= 5e-6 * abs(expected) + 1e-12 * scale, (name, rw, rg)


@pytest.mark.parametrize("view", VIEWS, ids=[f"metric-{m}-call-{c}" for m, c in VIEWS])
@pytest.mark.parametrize("cube", CUBES)
def test_dump_over_all_threads_combines_cube_dumps_threads(cube, view):
    """-t aggr: per call path the threads' cube_dump values summed, or for
    Score-P's min_time and max_time (MINDOUBLE, MAXDOUBLE) the least and
    greatest (these cubes' metric trees are flat: no aggregate less a
    child's to tell apart)."""
    metric_tree, calltree = view
    metrics = (DATA / f"{cube}.metrics.txt").read_text().split()
    want = blocks((DATA / f"{cube}.{metric_tree}-metric.{calltree}-call.csv").read_text(), len(metrics))
    proc = psprocess("dump", str(DATA / f"{cube}.cubex"), "-f", "csv", "-t", "aggr",
                     "--metric-tree", metric_tree, "-x", calltree)
    assert proc.returncode == 0, proc.stderr
    got = blocks(proc.stdout, len(metrics))
    for name, w, g in zip(metrics, want, got, strict=True):
        combine = {"min_time": min, "max_time": max}.get(name, sum)
        per_cnode: dict[str, list[float]] = {}
        for c, _, v in w:
            per_cnode.setdefault(c, []).append(float(v))
        assert [r[0] for r in g] == list(per_cnode), name
        for c, _, v in g:
            values = per_cnode[c]
            assert abs(float(v) - combine(values)) <= 5e-6 * sum(map(abs, values)) + 1e-12, (name, c, v, values)


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
