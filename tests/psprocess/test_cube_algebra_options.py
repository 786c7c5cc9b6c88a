"""The algebra's options as CubeLib's tools define them, through the real
command on cubes built here: -c and -C keep every process (cube_* -C puts
them under one virtual machine and node; psuite once summed each input
into one location), merge -c keeps two runs' differently named processes,
cut makes each call path of --root a root of its own and takes several
--root and --prune, programs named apart keep apart, MIN/MAX metrics are
diffed as CubeLib does, integers stay integers, topologies are kept, and
bad input is one line on stderr with exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from psuite.analysis import algebra
from psuite.analysis.experiments import load
from psuite.formats.exporters import cube
from psuite.model.experiment import EXCLUSIVE, Experiment, Location, Metric, Region, Topology


def psprocess(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "PYTHONWARNINGS": "error::RuntimeWarning"}, timeout=300)


def ok(*args: str, cwd: Path) -> None:
    p = psprocess(*args, cwd=cwd)
    assert p.returncode == 0, p.stderr


def refused(*args: str, cwd: Path) -> str:
    p = psprocess(*args, cwd=cwd)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    return p.stderr


# call paths (region names from the root); "work" is called from three places
PATHS = [("app",), ("app", "init"), ("app", "init", "work"), ("app", "solve"), ("app", "solve", "work"),
         ("app", "solve", "work", "MPI_Send"), ("app", "work")]


def run(program: str = "app", processes=("MPI Rank 0", "MPI Rank 1"), scale: float = 1.0,
        seed: int = 1, topology: bool = False) -> Experiment:
    """A profile: time (DOUBLE), visits (UINT64), max_time (MAXDOUBLE),
    min_time (MINDOUBLE) on one thread per process."""
    rng = np.random.default_rng(seed)
    e = Experiment(attributes={"source": f"{program}-{seed}.cubex"})
    e.add_metric(Metric("time", unit="sec", dtype="DOUBLE", kind=EXCLUSIVE))
    e.add_metric(Metric("visits", dtype="UINT64", kind=EXCLUSIVE))
    e.add_metric(Metric("max_time", unit="sec", dtype="MAXDOUBLE", kind=EXCLUSIVE))
    e.add_metric(Metric("min_time", unit="sec", dtype="MINDOUBLE", kind=EXCLUSIVE))
    regions: dict[str, int] = {}
    cnodes: dict[tuple, int] = {}
    for p in PATHS:
        p = (program, *p[1:])
        name = p[-1]
        if name not in regions:
            regions[name] = e.add_region(Region(name, module="" if name == program else "prog.c"))
        cnodes[p] = e.add_cnode(regions[name], cnodes[p[:-1]] if len(p) > 1 else None)
    for rank, process in enumerate(processes):
        e.locations.append(Location(machine="cluster", node=f"node{rank}", process=process, rank=rank,
                                    thread="Master thread", thread_rank=0))
    shape = (len(e.cnodes), len(e.locations))
    e.zeros("time")[...] = np.round(rng.uniform(0.5, 2.0, shape) * scale, 6)
    e.zeros("visits")[...] = rng.integers(1, 5, shape)
    e.zeros("max_time")[...] = np.round(rng.uniform(0.1, 1.0, shape) * scale, 6)
    e.zeros("min_time")[...] = np.round(rng.uniform(0.01, 0.1, shape) * scale, 6)
    if topology:
        e.topologies.append(Topology("ranks", [("x", len(processes), False)],
                                     {j: (j,) for j in range(len(processes))}))
    return e


def write(e: Experiment, path: Path) -> Path:
    cube.write(e, str(path))
    return path


def by_location(e: Experiment, metric: str) -> dict[tuple, np.ndarray]:
    """(process, rank, thread rank) -> the metric's column, rows by call path."""
    order = np.argsort([str(e.path(c)) for c in range(len(e.cnodes))], kind="stable")
    a = e.exclusive(metric)
    return {(loc.process, loc.rank, loc.thread_rank): a[order, j] for j, loc in enumerate(e.locations)}


def test_diff_collapse_keeps_the_ranks_under_one_virtual_node(tmp_path):
    a, b = run(seed=1), run(seed=2, scale=1.5)
    b.locations = [Location(machine="other", node="n9", process=loc.process, rank=loc.rank, thread=loc.thread)
                   for loc in b.locations]  # another machine: only -C (or -c, keeping both) unites them
    write(a, tmp_path / "a.cubex"), write(b, tmp_path / "b.cubex")
    ok("diff", "-C", "a.cubex", "b.cubex", "-o", "d.cubex", cwd=tmp_path)
    d = load(str(tmp_path / "d.cubex"))
    assert [(loc.machine, loc.node, loc.process, loc.rank) for loc in d.locations] == \
        [("Virtual machine", "Virtual node", "MPI Rank 0", 0), ("Virtual machine", "Virtual node", "MPI Rank 1", 1)]
    ra, rb, rd = by_location(a, "time"), by_location(b, "time"), by_location(d, "time")
    for key in ra:  # per rank, not each input summed into one location
        np.testing.assert_allclose(rd[key], ra[key] - rb[key], rtol=1e-12)
    # max_time as cube_diff: the greatest of A and -B, per rank
    ma, mb, md = by_location(a, "max_time"), by_location(b, "max_time"), by_location(d, "max_time")
    for key in ma:
        np.testing.assert_allclose(md[key], np.maximum(ma[key], -mb[key]), rtol=1e-12)
    assert d.metric("visits").dtype == "INT64" and d.values["visits"].dtype == np.int64
    ok("diff", "-c", "a.cubex", "b.cubex", "-o", "r.cubex", cwd=tmp_path)  # -c: machines and nodes kept apart
    r = load(str(tmp_path / "r.cubex"))
    assert len(r.locations) == 4 and {loc.machine for loc in r.locations} == {"cluster", "other"}


def test_merge_c_keeps_both_runs_processes(tmp_path):
    """psuite names a process after its pid: two runs' rank 0 are two
    processes, which cube_merge -c keeps side by side."""
    a, b = run(processes=("pid 100",), seed=1), run(processes=("pid 200",), seed=2)
    write(a, tmp_path / "a.cubex"), write(b, tmp_path / "b.cubex")
    ok("merge", "-c", "a.cubex", "b.cubex", "-o", "m.cubex", cwd=tmp_path)
    m = load(str(tmp_path / "m.cubex"))
    got = by_location(m, "time")
    assert sorted(got) == [("pid 100", 0, 0), ("pid 200", 0, 0)]
    np.testing.assert_allclose(got[("pid 100", 0, 0)], by_location(a, "time")[("pid 100", 0, 0)])
    np.testing.assert_allclose(got[("pid 200", 0, 0)], by_location(b, "time")[("pid 200", 0, 0)])
    ok("merge", "-C", "a.cubex", "b.cubex", "-o", "mc.cubex", cwd=tmp_path)
    assert len(load(str(tmp_path / "mc.cubex")).locations) == 2


def test_systems_that_differ_are_refused_with_the_options_named(tmp_path):
    write(run(processes=("MPI Rank 0", "MPI Rank 1")), tmp_path / "a.cubex")
    three = run(processes=("MPI Rank 0", "MPI Rank 1", "MPI Rank 2"))
    write(three, tmp_path / "b.cubex")
    # one system holding the other's locations: combined without options, as cube_diff does
    ok("diff", "a.cubex", "b.cubex", "-o", "nested.cubex", cwd=tmp_path)
    assert len(load(str(tmp_path / "nested.cubex")).locations) == 3
    three.locations = three.locations[1:]  # ranks 1 and 2 against 0 and 1: neither holds the other
    three.values = {k: v[:, 1:] for k, v in three.values.items()}
    write(three, tmp_path / "c.cubex")
    message = refused("diff", "a.cubex", "c.cubex", "-o", "d.cubex", cwd=tmp_path)
    assert "only in c.cubex: rank 2 thread 0" in message and "-c" in message and "-C" in message
    assert not (tmp_path / "d.cubex").exists()
    refused("mean", "-c", "-C", "a.cubex", "c.cubex", "-o", "d.cubex", cwd=tmp_path)
    ok("mean", "-C", "a.cubex", "c.cubex", "-o", "d.cubex", cwd=tmp_path)
    mean = load(str(tmp_path / "d.cubex"))
    assert len(mean.locations) == 3 and mean.metric("visits").dtype == "DOUBLE"


def test_programs_named_apart_keep_apart(tmp_path):
    """Score-P's root region is the program: cube_diff of two programs
    gives two roots, and so does psprocess diff."""
    write(run("app_v1", seed=1), tmp_path / "a.cubex"), write(run("app_v2", seed=2), tmp_path / "b.cubex")
    ok("diff", "b.cubex", "a.cubex", "-o", "d.cubex", cwd=tmp_path)
    d = load(str(tmp_path / "d.cubex"))
    assert sorted(d.path(r) for r in d.roots) == [("app_v1",), ("app_v2",)]
    assert len(d.cnodes) == 2 * len(PATHS)


def test_cut_makes_a_root_of_every_call_path_of_the_region(tmp_path):
    e = run()
    write(e, tmp_path / "a.cubex")
    ok("cut", "--root", "work", "a.cubex", "-o", "c.cubex", cwd=tmp_path)
    c = load(str(tmp_path / "c.cubex"))
    assert [c.path(r) for r in c.roots] == [("work",)] * 3
    assert c.paths().count(("work", "MPI_Send")) == 1
    works = [i for i, p in enumerate(PATHS) if "work" in p]
    assert c.exclusive("time").sum() == pytest.approx(e.exclusive("time")[works].sum(), rel=1e-12)
    # several --root, several --prune
    ok("cut", "--root", "init", "--root", "solve", "--prune", "MPI_Send", "--prune", "work", "a.cubex",
       "-o", "c2.cubex", cwd=tmp_path)
    c2 = load(str(tmp_path / "c2.cubex"))
    assert [c2.path(r) for r in c2.roots] == [("init",), ("solve",)]
    assert c2.paths() == [("init",), ("solve",)]
    kept = [i for i, p in enumerate(PATHS) if "init" in p or "solve" in p]
    assert c2.exclusive("time").sum() == pytest.approx(e.exclusive("time")[kept].sum(), rel=1e-12)
    assert "[roots]" not in {c2.regions[x.region].name for x in c2.cnodes}


def test_cut_refuses_what_names_nothing(tmp_path):
    write(run(), tmp_path / "a.cubex")
    assert "--root nowhere" in refused("cut", "--root", "nowhere", "a.cubex", "-o", "c.cubex", cwd=tmp_path)
    assert "--prune nowhere" in refused("cut", "--prune", "nowhere", "a.cubex", "-o", "c.cubex", cwd=tmp_path)
    assert "both" in refused("cut", "--root", "work", "--prune", "work", "a.cubex", "-o", "c.cubex", cwd=tmp_path)
    assert not (tmp_path / "c.cubex").exists()


def test_topologies_are_kept_through_every_operation():
    a, b = run(seed=1, topology=True), run(seed=2, topology=True)
    for r in (algebra.diff(a, b), algebra.merge([a, b]), algebra.mean([a, b]), algebra.diff(a, b, collapse=True),
              algebra.merge([a, b], reduce=True), algebra.cut(a, root="work")):
        assert [(t.name, t.dimensions, t.coordinates) for t in r.topologies] == \
            [("ranks", [("x", 2, False)], {0: (0,), 1: (1,)})]
    c = run(processes=("pid 7",), seed=3, topology=True)  # a union: each input's coordinates on its locations
    m = algebra.merge([run(processes=("pid 5",), topology=True), c], reduce=True)
    assert m.topologies[0].coordinates == {0: (0,)}  # the first's place stands; the second's clashes with it


def test_cut_keeps_what_the_values_mean():
    """A cut of a profile is still sampled on its event (so its regions are
    written without their sampled lines and cuts of two runs combine), and a
    ratio kept without a formula stays marked; the operation is the cut's."""
    e = Experiment(attributes={algebra.SAMPLED_ON: "task-clock", algebra.NO_FORMULA: "ratio", "source": "a.xml"})
    e.add_metric(Metric("samples", dtype="UINT64"))
    for name in ("main", "work", "leaf"):
        e.add_region(Region(name))
    e.locations = [Location()]
    e.add_cnode(0, None)
    e.add_cnode(1, 0)
    e.add_cnode(2, 1)
    e.zeros("samples")[:] = [[1], [2], [3]]
    c = algebra.cut(e, root="work")
    assert c.attributes[algebra.SAMPLED_ON] == "task-clock"
    assert c.attributes[algebra.NO_FORMULA] == "ratio"
    assert "source" not in c.attributes and c.attributes["operation"].startswith("cut(")
    assert c.values["samples"].ravel().tolist() == [2, 3]
