"""psprocess clean, commoncalltree, derive, inclusify, exclusify and
topoassist (CubeLib's cube_clean, cube_commoncalltree, cube_derive,
cube_inclusify, cube_exclusify, cube_topoassist) as real processes.

Inputs are CUBE files written here from experiments whose values the
test knows, and the real Score-P profiles under data/scorep with the
values CubeLib's cube_dump printed for them.  The expected results follow
what the real CubeLib 4.8.2 tools give on the same inputs (checked value by
value while writing these tests), except where CubeLib is wrong:
cube_commoncalltree loses what dropped call paths measured for exclusive
metrics and stops matching early (see test_common_calltree_*)."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from psuite.formats.exporters import cube
from psuite.formats.readers import cube as cube_reader
from psuite.model.experiment import EXCLUSIVE, INCLUSIVE, Experiment, Location, Metric, Region, to_inclusive
from tests.conftest import one_line_error, run_tool

SCOREP = Path(__file__).parent / "data" / "scorep"
TOOL = "psprocess"


def psprocess(*args: str, cwd=None):
    return run_tool(TOOL, *args, cwd=cwd)


def build(path, tree: list[tuple[int, str]], seed: int = 1, unused: tuple[str, ...] = ()) -> Experiment:
    """A cube from (depth, region) rows in depth-first order, two ranks:
    time stored INCLUSIVE (as Score-P does), visits EXCLUSIVE (UINT64),
    max_time MAXDOUBLE; regions `unused` defined but never called."""
    e = Experiment()
    e.add_metric(Metric("time", unit="sec", kind=INCLUSIVE))
    e.add_metric(Metric("visits", dtype="UINT64", kind=EXCLUSIVE))
    e.add_metric(Metric("max_time", unit="sec", dtype="MAXDOUBLE", kind=EXCLUSIVE))
    e.locations = [Location(node=f"node{r}", process=f"rank {r}", rank=r) for r in range(2)]
    regions: dict[str, int] = {}
    stack: list[int] = []
    for depth, name in tree:
        if name not in regions:
            regions[name] = e.add_region(Region(name, module="app.c"))
        stack = stack[:depth]
        stack.append(e.add_cnode(regions[name], stack[-1] if stack else None))
    for name in unused:
        e.add_region(Region(name, module="lib.c"))
    rng = np.random.default_rng(seed)
    excl_time = rng.random((len(e.cnodes), 2))
    e.values["time"] = to_inclusive(excl_time, e.parents())
    e.values["visits"] = rng.integers(1, 9, (len(e.cnodes), 2))
    e.values["max_time"] = rng.random((len(e.cnodes), 2))
    cube.write(e, str(path), force=True)
    return cube_reader.read(str(path))


def read(path) -> Experiment:
    return cube_reader.read(str(path))


def by_path(e: Experiment, metric: str, inclusive: bool) -> dict[tuple[str, ...], np.ndarray]:
    a = (e.inclusive if inclusive else e.exclusive)(metric)
    return dict(zip(e.paths(), a, strict=True))


def cubelib_values(name: str, metric_tree: str = "incl") -> dict[tuple[str, str], dict[tuple[int, int], float]]:
    """values/NAME.tsv.gz (CubeLib's own get_sev, full precision): (metric, call
    tree view) -> {(cnode id, location id): value}; a missing row is 0."""
    out: dict[tuple[str, str], dict[tuple[int, int], float]] = {}
    lines = gzip.open(SCOREP / "values" / f"{name}.tsv.gz", "rt").read().splitlines()
    assert lines[0].split("\t") == ["metric_tree", "call_tree", "metric", "cnode", "location", "value"]
    for line in lines[1:]:
        mt, ct, metric, cnode, location, value = line.split("\t")
        if mt == metric_tree and location != "all":
            out.setdefault((metric, ct), {})[(int(cnode), int(location))] = float(value)
    return out


def assert_values(e: Experiment, name: str, metrics: tuple[str, ...] | None = None) -> None:
    """Every value of e's metrics, inclusive and exclusive along the call
    tree, is CubeLib's in values/NAME.tsv.gz (relative 1e-9); cnodes and
    locations in psuite's order are the file's ids (depth first)."""
    want = cubelib_values(name)
    for m in metrics or [m.name for m in e.metrics if not m.derived]:
        for tree in ("incl", "excl"):
            expected = np.zeros((len(e.cnodes), len(e.locations)))
            for (c, j), v in want.get((m, tree), {}).items():
                expected[c, j] = v
            got = (e.inclusive if tree == "incl" else e.exclusive)(m)
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-300, err_msg=f"{name} {m} {tree}")


# ---------------------------------------------------------------- clean

TREE = [(0, "main"), (1, "init"), (1, "solve"), (2, "MPI_Send"), (2, "compute"), (1, "finalize")]


def test_clean_drops_unused_regions_and_keeps_everything_else(tmp_path):
    before = build(tmp_path / "in.cubex", TREE, unused=("MPI_Bcast", "never_called", "MPI_Win_fence"))
    assert len(before.regions) == 9
    out = tmp_path / "clean.cubex"
    p = psprocess("clean", str(tmp_path / "in.cubex"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "3 of 9 regions dropped" in p.stderr
    after = read(out)
    assert sorted(r.name for r in after.regions) == sorted(["main", "init", "solve", "MPI_Send", "compute", "finalize"])
    assert after.paths() == before.paths()
    for m in ("time", "visits", "max_time"):
        assert after.metric(m).kind == before.metric(m).kind
        for incl in (True, False):
            np.testing.assert_array_equal((after.inclusive if incl else after.exclusive)(m),
                                          (before.inclusive if incl else before.exclusive)(m))


def test_clean_of_a_scorep_profile_equals_cube_clean(tmp_path):
    # clean.cubex: cube_clean mpi1.cubex; of Score-P's regions, the ones its call tree enters
    out = tmp_path / "clean.cubex"
    p = psprocess("clean", str(SCOREP / "mpi1.cubex"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    after, theirs = read(out), read(SCOREP / "clean.cubex")
    assert sorted((r.name, r.module) for r in after.regions) == sorted((r.name, r.module) for r in theirs.regions)
    assert after.paths() == theirs.paths()
    assert_values(after, "clean")


# ---------------------------------------------------------------- inclusify / exclusify


def test_exclusify_stores_exclusive_values_views_unchanged(tmp_path):
    before = build(tmp_path / "in.cubex", TREE, unused=("lost",))
    out = tmp_path / "excl.cubex"
    p = psprocess("exclusify", str(tmp_path / "in.cubex"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    after = read(out)
    assert [m.kind for m in after.metrics] == [EXCLUSIVE] * 3
    np.testing.assert_allclose(after.stored("time"), before.exclusive("time"), rtol=1e-12)
    for m in ("time", "visits", "max_time"):
        np.testing.assert_allclose(after.inclusive(m), before.inclusive(m), rtol=1e-12)
    assert "lost" not in [r.name for r in after.regions]  # as cube_exclusify: only the regions call paths enter


def test_inclusify_stores_inclusive_values_keeps_max_metrics(tmp_path):
    before = build(tmp_path / "in.cubex", TREE)
    out = tmp_path / "incl.cubex"
    p = psprocess("inclusify", str(tmp_path / "in.cubex"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "max_time kept as stored" in p.stderr  # cube_inclusify refuses MAXDOUBLE metrics (then crashes)
    after = read(out)
    assert [m.kind for m in after.metrics] == [INCLUSIVE, INCLUSIVE, EXCLUSIVE]
    np.testing.assert_array_equal(after.stored("visits"), to_inclusive(before.stored("visits"), before.parents()))
    np.testing.assert_array_equal(after.stored("max_time"), before.stored("max_time"))
    for m in ("time", "visits"):
        np.testing.assert_allclose(after.exclusive(m), before.exclusive(m), rtol=1e-12, atol=1e-15)


def test_exclusify_of_a_scorep_profile_equals_cube_exclusify(tmp_path):
    out = tmp_path / "excl.cubex"
    p = psprocess("exclusify", str(SCOREP / "mpi1.cubex"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    after, theirs = read(out), read(SCOREP / "exclusify.cubex")  # cube_exclusify mpi1.cubex
    assert [(m.name, m.kind) for m in after.metrics] == [(m.name, m.kind) for m in theirs.metrics]
    assert [m.kind for m in after.metrics] == [EXCLUSIVE] * len(after.metrics)
    assert sorted(r.name for r in after.regions) == sorted(r.name for r in theirs.regions)
    assert_values(after, "exclusify")
    for m in after.metrics:  # what is stored is the exclusive value
        np.testing.assert_allclose(after.stored(m.name), theirs.stored(m.name), rtol=1e-9, err_msg=m.name)


# ---------------------------------------------------------------- derive


@pytest.mark.parametrize("calltree", ["inclusive", "exclusive"])
def test_derive_stores_values_as_cube_derive(tmp_path, calltree):
    before = build(tmp_path / "in.cubex", TREE)
    out = tmp_path / "d.cubex"
    p = psprocess("derive", "twice", str(tmp_path / "in.cubex"), "-r", calltree,
                  "-e", "metric::time()*2 + metric::visits()", "-o", str(out))
    assert p.returncode == 0, p.stderr
    after = read(out)
    m = after.metric("twice")
    incl = calltree == "inclusive"
    assert (m.kind, m.dtype, m.parent) == (INCLUSIVE if incl else EXCLUSIVE, "DOUBLE", None)
    view = before.inclusive if incl else before.exclusive
    np.testing.assert_allclose(after.stored("twice"), 2 * view("time") + view("visits"), rtol=1e-12)


def test_derive_reads_the_expression_from_a_file_and_places_it_below_a_parent(tmp_path):
    before = build(tmp_path / "in.cubex", TREE)
    expr = tmp_path / "avg.cubepl"
    expr.write_text("metric::time(i)\n  / metric::visits(e)\n")
    out = tmp_path / "d.cubex"
    p = psprocess("derive", "avg", str(tmp_path / "in.cubex"), "-E", str(expr), "-p", "time", "-o", str(out))
    assert p.returncode == 0, p.stderr
    after = read(out)
    assert after.metrics[after.metric("avg").parent].name == "time"
    with np.errstate(divide="ignore", invalid="ignore"):
        want = before.inclusive("time") / before.exclusive("visits")
    np.testing.assert_allclose(after.stored("avg"), want, rtol=1e-12)


def test_derive_of_a_scorep_profile_equals_cube_derive(tmp_path):
    # derive-stored.cubex: cube_derive -r exclusive -e 'metric::time()*2' -p time time2 mpi1.cubex
    out = tmp_path / "d.cubex"
    p = psprocess("derive", "time2", str(SCOREP / "mpi1.cubex"), "-r", "exclusive", "-e", "metric::time()*2",
                  "-p", "time", "-o", str(out))
    assert p.returncode == 0, p.stderr
    after, theirs = read(out), read(SCOREP / "derive-stored.cubex")
    mine, cubelib = after.metric("time2"), theirs.metric("time2")
    assert (mine.kind, mine.dtype) == (cubelib.kind, cubelib.dtype) == (EXCLUSIVE, "DOUBLE")
    # cube_derive -p looks for a display name only ("Time") and makes a root when it finds none
    assert (after.metrics[mine.parent].name, cubelib.parent) == ("time", None)
    assert_values(after, "derive-stored", ("time2",))


@pytest.mark.parametrize("name, args", [
    ("derive-post", ["-t", "postderived", "-r", "inclusive", "-e", "metric::time(i)/metric::visits(e)", "-p", "time",
                     "time_per_visit"]),
    ("derive-pre-excl", ["-t", "prederived", "-r", "exclusive", "-e", "metric::time(e)*metric::visits(e)", "-p",
                         "time", "time_x_visits"]),
])
def test_derive_of_a_derived_metric_defines_it_as_cube_derive(tmp_path, name, args):
    out = tmp_path / "d.cubex"
    p = psprocess("derive", args[-1], str(SCOREP / "mpi1.cubex"), *args[:-1], "-o", str(out))
    assert p.returncode == 0, p.stderr
    mine, theirs = read(out), read(SCOREP / f"{name}.cubex")
    a, b = mine.metric(args[-1]), theirs.metric(args[-1])
    assert (a.kind, a.expression) == (b.kind, b.expression.strip())
    assert (mine.metrics[a.parent].name, b.parent) == ("time", None)  # cube_derive -p: display names only


@pytest.mark.parametrize("args, says", [
    (["time", "-e", "metric::visits()"], "exists already"),
    (["new", "-e", "metric::nosuch()*2"], "nosuch"),
    (["new"], "-e EXPRESSION or -E FILE"),
    (["new", "-e", "metric::time()", "-E", "x.cubepl"], "-e EXPRESSION or -E FILE"),
    (["new", "-e", "metric::time() * * 2"], "expression"),
    (["new", "-e", "metric::time()", "-p", "nosuch"], "-p nosuch"),
    (["new", "-e", "   "], "empty"),
    (["new", "-e", "metric::time() * 1e308 * 1e308"], "gives no number"),
])
def test_derive_refuses_bad_input_in_one_line_writing_nothing(tmp_path, args, says):
    build(tmp_path / "in.cubex", TREE)
    out = tmp_path / "d.cubex"
    p = psprocess("derive", args[0], str(tmp_path / "in.cubex"), *args[1:], "-o", str(out))
    assert says in one_line_error(p, "psprocess derive")
    assert not out.exists()


# ---------------------------------------------------------------- commoncalltree

A = [(0, "main"), (1, "b"), (2, "x"), (1, "a"), (2, "y"), (2, "z"), (3, "w"), (1, "c"), (1, "d"), (2, "x")]
B = [(0, "main"), (1, "a"), (2, "z"), (3, "w"), (3, "q"), (2, "y"), (1, "d"), (2, "x"), (1, "e"), (1, "b")]
C = [(0, "main"), (1, "d"), (2, "x"), (1, "b"), (2, "x"), (1, "a"), (2, "y")]
COMMON = {("main",), ("main", "a"), ("main", "a", "y"), ("main", "b"), ("main", "d"), ("main", "d", "x")}


def test_common_calltree_keeps_the_call_paths_every_input_has(tmp_path):
    """CubeLib's cube_commoncalltree keeps only main, main/a and main/a/y
    here: it stops matching when an input lacks a call path (main/a/z in
    C) whose next call path is shallower.  main/b, main/d and main/d/x are
    in every input, so psprocess keeps them."""
    ins = [build(tmp_path / f"{n}.cubex", t, seed=s) for n, t, s in (("A", A, 1), ("B", B, 2), ("C", C, 3))]
    p = psprocess("commoncalltree", "A.cubex", "B.cubex", "C.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for name, before in zip("ABC", ins, strict=True):
        after = read(tmp_path / f"{name}_commoncalltree.cubex")  # CubeLib's output names
        assert set(after.paths()) == COMMON
        assert len(after.regions) == len(before.regions)  # as cube_commoncalltree: every region stays defined
        for m in ("time", "visits"):  # a kept call path's inclusive value is the input's
            want = by_path(before, m, inclusive=True)
            for path, row in by_path(after, m, inclusive=True).items():
                np.testing.assert_allclose(row, want[path], rtol=1e-12, err_msg=f"{name} {m} {path}")
        # dropped callees' values move into their parent's exclusive value: main/a of A loses z and z/w
        if name == "A":
            a_excl = by_path(after, "visits", inclusive=False)[("main", "a")]
            incl = by_path(before, "visits", inclusive=True)
            np.testing.assert_array_equal(a_excl, incl[("main", "a")] - incl[("main", "a", "y")])
        want_max = dict(zip(before.paths(), before.stored("max_time"), strict=True))
        for path, row in zip(after.paths(), after.stored("max_time"), strict=True):
            np.testing.assert_array_equal(row, want_max[path])  # the greatest values stay as they were


def test_common_calltree_folds_dropped_callees_for_exclusive_metrics_too(tmp_path):
    """cube_commoncalltree moves a dropped call path's time (an INCLUSIVE
    metric) into its parent but loses its visits (EXCLUSIVE): with
    MPI_Barrier dropped, main's exclusive visits stay 1 where the
    barrier's visit is main's too.  psprocess keeps both."""
    full = [(0, "prog"), (1, "main"), (2, "work"), (2, "MPI_Barrier")]
    before = build(tmp_path / "full.cubex", full)
    build(tmp_path / "cut.cubex", full[:3])
    p = psprocess("commoncalltree", str(tmp_path / "full.cubex"), str(tmp_path / "cut.cubex"),
                  "-o", str(tmp_path / "a.cubex"), "-o", str(tmp_path / "b.cubex"))
    assert p.returncode == 0, p.stderr
    after = read(tmp_path / "a.cubex")
    assert after.paths() == [("prog",), ("prog", "main"), ("prog", "main", "work")]
    for m in ("time", "visits"):
        np.testing.assert_allclose(after.exclusive(m)[1], before.exclusive(m)[1] + before.exclusive(m)[3],
                                   rtol=1e-12)
        np.testing.assert_allclose(after.inclusive(m)[0], before.inclusive(m)[0], rtol=1e-12)


def test_common_calltree_refusals(tmp_path):
    build(tmp_path / "a.cubex", TREE)
    build(tmp_path / "b.cubex", [(0, "other")])
    p = psprocess("commoncalltree", "a.cubex", "b.cubex", cwd=tmp_path)
    assert "no call path in common" in one_line_error(p, "psprocess commoncalltree")
    assert not (tmp_path / "a_commoncalltree.cubex").exists()
    p = psprocess("commoncalltree", "a.cubex", "b.cubex", "-o", "x.cubex", cwd=tmp_path)
    assert "one -o per input" in one_line_error(p, "psprocess commoncalltree")
    p = psprocess("commoncalltree", "a.cubex", cwd=tmp_path)
    assert "two or more" in one_line_error(p, "psprocess commoncalltree")


# ---------------------------------------------------------------- topoassist


def _keeps_topologies(tmp_path) -> bool:
    from psuite.model.experiment import Topology

    e = Experiment(locations=[Location()], topologies=[Topology("t", [("x", 1, False)], {0: (0,)})])
    e.add_metric(Metric("time"))
    e.add_cnode(e.add_region(Region("main")), None)
    e.zeros("time")
    cube.write(e, str(tmp_path / "t.cubex"), force=True)
    return bool(read(tmp_path / "t.cubex").topologies)


def test_topoassist_creates_and_names_a_topology(tmp_path):
    assert _keeps_topologies(tmp_path)  # the reader and the writer keep <cart>
    build(tmp_path / "in.cubex", TREE)
    p = psprocess("topoassist", "in.cubex", "--create", "grid", "--dim", "1:x", "--dim", "2:y:periodic",
                  "-o", "grid.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    topo = read(tmp_path / "grid.cubex").topologies[-1]
    assert (topo.name, topo.dimensions) == ("grid", [("x", 1, False), ("y", 2, True)])
    assert topo.coordinates == {0: (0, 0), 1: (0, 1)}
    (tmp_path / "coords.txt").write_text("0 1\n0 0\n")
    p = psprocess("topoassist", "in.cubex", "--create", "swapped", "--dim", "1", "--dim", "2", "--coords",
                  "coords.txt", "-o", "swapped.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert read(tmp_path / "swapped.cubex").topologies[-1].coordinates == {0: (0, 1), 1: (0, 0)}
    index = str(len(read(tmp_path / "grid.cubex").topologies) - 1)
    p = psprocess("topoassist", "grid.cubex", "--rename", f"{index}=MPI grid", "-o", "named.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = psprocess("topoassist", "named.cubex", "--name-dims", f"{index}=row,col", "-o", "dims.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    topo = read(tmp_path / "dims.cubex").topologies[-1]
    assert (topo.name, [d[0] for d in topo.dimensions]) == ("MPI grid", ["row", "col"])
    p = psprocess("topoassist", "dims.cubex", "--list", cwd=tmp_path)
    assert p.returncode == 0 and "MPI grid, 2 dimensions: row: 1 x col: 2 (periodic)" in p.stdout


@pytest.mark.parametrize("args, says", [
    (["--create", "g", "--dim", "1", "-o", "o.cubex"], "1 places for 2 threads"),
    (["--create", "g", "--dim", "two", "-o", "o.cubex"], "--dim two"),
    (["--create", "g", "--dim", "2", "--coords", "bad.txt", "-o", "o.cubex"], "is not a place"),
    (["--create", "g", "--dim", "2", "--coords", "same.txt", "-o", "o.cubex"], "its own place"),
    (["--rename", "3=x", "-o", "o.cubex"], "no topology '3'"),
    (["--create", "g", "--dim", "2"], "give -o"),
    (["-o", "o.cubex"], "give one of --list"),
])
def test_topoassist_refusals(tmp_path, args, says):
    build(tmp_path / "in.cubex", TREE[:2])
    (tmp_path / "bad.txt").write_text("0\n2\n")
    (tmp_path / "same.txt").write_text("1\n1\n")
    p = psprocess("topoassist", "in.cubex", *args, cwd=tmp_path)
    assert says in one_line_error(p, "psprocess topoassist")
    assert not (tmp_path / "o.cubex").exists()


# ---------------------------------------------------------------- conventions


def test_an_existing_output_is_kept_without_force(tmp_path):
    build(tmp_path / "in.cubex", TREE)
    out = tmp_path / "out.cubex"
    out.write_text("keep me")
    for command in ("clean", "inclusify", "exclusify"):
        p = psprocess(command, str(tmp_path / "in.cubex"), "-o", str(out))
        assert "--force" in one_line_error(p, f"psprocess {command}")
        assert out.read_text() == "keep me"
    p = psprocess("exclusify", str(tmp_path / "in.cubex"), "-o", str(out), "--force")
    assert p.returncode == 0, p.stderr
    p = psprocess("clean", str(tmp_path / "in.cubex"), "-o", str(tmp_path / "in.cubex"), "--force")
    assert one_line_error(p, "psprocess clean")  # an input is never replaced
    p = psprocess("clean", str(tmp_path / "in.cubex"), "-o", str(tmp_path / "out.txt"))
    assert ".cubex" in one_line_error(p, "psprocess clean")


def test_help_names_each_tool_and_its_cubelib_counterpart():
    p = psprocess("--help")
    for name in ("clean", "commoncalltree", "derive", "inclusify", "exclusify", "topoassist"):
        assert f"\n  {name} " in p.stdout
        h = psprocess(name, "--help")
        assert h.returncode == 0 and f"cube_{name}" in h.stdout and "exit status" in h.stdout


def test_default_names_land_in_the_current_directory(tmp_path):
    build(tmp_path / "v1.cubex", TREE)
    build(tmp_path / "v2.cubex", TREE[:4])
    os.mkdir(tmp_path / "run")
    p = psprocess("commoncalltree", "../v1.cubex", "../v2.cubex", cwd=tmp_path / "run")
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path / "run")) == ["v1_commoncalltree.cubex", "v1_commoncalltree.stat",
                                                    "v2_commoncalltree.cubex", "v2_commoncalltree.stat"]


def test_conversions_keep_derived_metrics_derived(tmp_path):
    """cube_exclusify and cube_inclusify crash (segmentation fault) on a
    cube with a derived metric; psprocess keeps its expression."""
    from psuite.psprocess import cubetools

    e = build(tmp_path / "in.cubex", TREE)
    e.add_metric(Metric("avg", kind="POSTDERIVED", expression="metric::time(i)/metric::visits(e)"))
    for inclusive in (True, False):
        out, _ = cubetools.convert(e, inclusive)
        m = out.metric("avg")
        assert (m.kind, m.expression) == ("POSTDERIVED", "metric::time(i)/metric::visits(e)")
        np.testing.assert_allclose(out.inclusive("avg"), e.inclusive("avg"), rtol=1e-12)


def test_derive_of_an_expression_nested_5000_deep_evaluates_or_is_refused_in_one_line(tmp_path):
    before = build(tmp_path / "in.cubex", TREE)
    (tmp_path / "deep.cubepl").write_text("(" * 5000 + "metric::time()" + ")" * 5000)
    p = psprocess("derive", "deep", "in.cubex", "-E", "deep.cubepl", "-o", "out.cubex", cwd=tmp_path)
    if p.returncode == 0:  # an evaluator without a depth limit: the value is time's
        np.testing.assert_allclose(read(tmp_path / "out.cubex").stored("deep"), before.inclusive("time"), rtol=1e-12)
    else:
        one_line_error(p, "psprocess derive")
        assert not (tmp_path / "out.cubex").exists()


@pytest.mark.parametrize("command", ["clean", "inclusify", "exclusify"])
def test_collapse_puts_the_processes_under_one_virtual_node(tmp_path, command):
    # cube_clean -C (and cube_inclusify/cube_exclusify -C) of one cube: machine and node become virtual
    before = build(tmp_path / "in.cubex", TREE)
    assert {loc.node for loc in before.locations} == {"node0", "node1"}
    p = psprocess(command, "-C", "in.cubex", "-o", "out.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    after = read(tmp_path / "out.cubex")
    assert [(loc.machine, loc.node, loc.process, loc.rank) for loc in after.locations] == [
        ("Virtual machine", "Virtual node", "rank 0", 0), ("Virtual machine", "Virtual node", "rank 1", 1)]
    np.testing.assert_allclose(after.inclusive("time"), before.inclusive("time"), rtol=1e-12)


def test_inclusify_of_a_scorep_profile_stores_cube_dumps_inclusive_values(tmp_path):
    out = tmp_path / "incl.cubex"
    p = psprocess("inclusify", str(SCOREP / "mpi1.cubex"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "min_time, max_time kept as stored" in p.stderr
    after = read(out)
    want = cubelib_values("mpi1")
    for m in after.metrics:
        kept = m.name in ("min_time", "max_time")  # stored per call path, as before
        assert m.kind == (EXCLUSIVE if kept else INCLUSIVE), m.name
        expected = np.zeros((len(after.cnodes), len(after.locations)))
        for (c, j), v in want.get((m.name, "excl" if kept else "incl"), {}).items():
            expected[c, j] = v
        np.testing.assert_allclose(after.stored(m.name), expected, rtol=1e-9, err_msg=m.name)
    assert_values(after, "mpi1")


def test_common_calltree_of_two_runs_with_one_tree_changes_nothing(tmp_path):
    p = psprocess("commoncalltree", str(SCOREP / "mpi1.cubex"), str(SCOREP / "mpi2.cubex"),
                  "-o", str(tmp_path / "a.cubex"), "-o", str(tmp_path / "b.cubex"))
    assert p.returncode == 0, p.stderr
    for name, out in (("mpi1", "a.cubex"), ("mpi2", "b.cubex")):
        assert_values(read(tmp_path / out), name)


def test_common_calltree_of_scorep_profiles_equals_cube_commoncalltree(tmp_path):
    # commoncalltree-a/b.cubex: cube_commoncalltree of copies of mpi1 (a) and mpi3r (b)
    p = psprocess("commoncalltree", str(SCOREP / "mpi1.cubex"), str(SCOREP / "mpi3r.cubex"),
                  "-o", str(tmp_path / "a.cubex"), "-o", str(tmp_path / "b.cubex"))
    assert p.returncode == 0, p.stderr
    for out, name in (("a.cubex", "commoncalltree-a"), ("b.cubex", "commoncalltree-b")):
        after, theirs = read(tmp_path / out), read(SCOREP / f"{name}.cubex")
        assert after.paths() == theirs.paths()
        assert_values(after, name)
