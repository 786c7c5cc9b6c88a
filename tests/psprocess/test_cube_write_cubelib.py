"""Cubes psuite writes, as the real CubeLib (4.8.2) reads them: psprocess
rewrites the cubes of tests/psprocess/data/cubelib-reads-psuite/make.sh
from the same committed psuite documents, and every metric x call path x
location (and over the whole system), the call tree inclusive and
exclusive, must be what CubeLib's library computed from psuite's cube
(cube_values.cpp, full precision).  So must the derived metrics, which
CubeLib evaluates from their CubePL (a ratio over four ranks is not summed),
the system tree (two runs of one program combine in cube_diff and
cube_merge), cube_stat -t and the topologies."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from psuite.analysis.inputs import load_cube
from psuite.formats.readers import cube as cube_reader
from psuite.model.experiment import Experiment

DATA = Path(__file__).parent / "data" / "cubelib-reads-psuite"
INPUTS = DATA / "inputs"


def psprocess(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def documents(case: str) -> list[str]:
    """make.sh's psuite documents of a case."""
    return sorted(str(p) for p in (INPUTS / case).glob("*.xml"))


@pytest.fixture(scope="module")
def cubes(tmp_path_factory) -> dict[str, Path]:
    """The cubes make.sh gave CubeLib, written again by psprocess."""
    out = tmp_path_factory.mktemp("cubelib-reads-psuite")
    p = psprocess("-c", "--cube", "counts.cubex", *documents("counts"), cwd=out)
    assert p.returncode == 0, p.stderr
    from psuite.analysis import experiments
    from psuite.formats.exporters import cube

    for run in ("run1", "run2"):  # psuite's cubes of two profiles, read and written again
        cube.write(experiments.load(str(INPUTS / f"{run}.cubex")), str(out / f"{run}.cubex"))
    p = subprocess.run([sys.executable, str(DATA / "topology.py"), str(out / "topology.cubex")], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return {name: out / f"{name}.cubex" for name in ("counts", "run1", "run2", "topology")}


class CubeLibValues:
    """NAME.values.tsv: what CubeLib's library reads in a cube."""

    def __init__(self, name: str) -> None:
        self.paths: dict[int, tuple[str, ...]] = {}
        self.locations: dict[int, tuple[str, int, int]] = {}  # id -> (process name, process rank, thread rank)
        self.values: dict[tuple[str, tuple[str, ...], str], tuple[float, float]] = {}
        for line in (DATA / f"{name}.values.tsv").read_text().splitlines():
            kind, *f = line.split("\t")
            if kind == "cnode":
                cid, parent = int(f[0]), int(f[1])
                self.paths[cid] = (self.paths[parent] if parent >= 0 else ()) + (f[2],)
            elif kind == "location":
                self.locations[int(f[0])] = (f[1], int(f[2]), int(f[3]))
            else:
                metric, cid, loc, incl, excl = f
                where = "*" if loc == "*" else "{}.{}".format(*self.locations[int(loc)][1:])
                self.values[(metric, self.paths[int(cid)], where)] = (float(incl), float(excl))

    def metrics(self) -> set[str]:
        return {m for m, _, _ in self.values}


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))


def psuite_values(exp: Experiment) -> dict[tuple[str, tuple[str, ...], str], tuple[float, float]]:
    """The same cells as psuite computes them: per location, and over the
    whole system (a stored metric summed; a derived one evaluated on the
    sums, as CubeLib evaluates POSTDERIVED metrics)."""
    paths = exp.paths()
    where = [f"{loc.rank}.{loc.thread_rank}" for loc in exp.locations]
    out = {}

    def system(name: str, inclusive: bool) -> np.ndarray:
        m = exp.metric(name)
        if m.derived:
            return np.broadcast_to(exp.derived_values(name, fetch=lambda n: system(n, inclusive),
                                                      fetch_view=lambda n, v: system(n, v == "i")),
                                   (len(exp.cnodes),))
        return (exp.inclusive if inclusive else exp.exclusive)(name).sum(axis=1, dtype=np.float64)

    for m in exp.metrics:
        incl = np.broadcast_to(exp.inclusive(m.name), (len(exp.cnodes), len(exp.locations)))
        excl = np.broadcast_to(exp.exclusive(m.name), (len(exp.cnodes), len(exp.locations)))
        sys_incl, sys_excl = system(m.name, True), system(m.name, False)
        for c, p in enumerate(paths):
            for j, w in enumerate(where):
                out[(m.name, p, w)] = (float(incl[c, j]), float(excl[c, j]))
            out[(m.name, p, "*")] = (float(sys_incl[c]), float(sys_excl[c]))
    return out


def assert_same_values(exp: Experiment, cubelib: CubeLibValues) -> None:
    mine = psuite_values(exp)
    assert {p for _, p, _ in mine} == set(cubelib.paths.values())
    for key, theirs in cubelib.values.items():
        if key[0] not in {m.name for m in exp.metrics}:
            continue
        got = mine[key]
        assert close(got[0], theirs[0]) and close(got[1], theirs[1]), (key, got, theirs)
    assert {m for m, _, _ in mine} <= cubelib.metrics()


@pytest.mark.parametrize("name", ["counts", "run1", "run2", "topology"])
def test_cubelib_reads_psuites_values(cubes, name):
    """Every stored and derived metric, per call path and location and over
    the whole system, incl and excl along the call tree: psuite's values
    are CubeLib's (relative 1e-9)."""
    exp = cube_reader.read(str(cubes[name]))
    assert_same_values(exp, CubeLibValues(name))


def test_derived_ratios_are_not_summed_over_ranks(cubes):
    """The counting run's ratios are CUBE derived metrics: over the 4 ranks
    CubeLib shows the ratio of the sums (about 1 CPU busy, about 98 %), as
    psprocess does, not the sum of 4 ratios."""
    cubelib = CubeLibValues("counts")
    root = ("work",)
    anchor = (DATA / "counts.dump-w.txt").read_text()
    for name, display in (("CPUs_utilized", "CPUs utilized"), ("CPU_utilization_percent", "CPU utilization (%)")):
        assert re.search(rf"^{re.escape(display)}  \( id=\d+, {name}, occ, DOUBLE, .*POSTDERIVED, \"", anchor, re.M)
        per_rank = [cubelib.values[(name, root, f"{r}.0")][0] for r in range(4)]
        whole = cubelib.values[(name, root, "*")][0]
        assert min(per_rank) <= whole <= max(per_rank)  # a ratio of sums lies among the ranks' ratios
        assert whole < sum(per_rank) / 2
    p = psprocess("-f", "json", str(cubes["counts"]), cwd=cubes["counts"].parent)
    assert p.returncode == 0, p.stderr
    import json

    shown = {m["name"]: m for m in json.loads(p.stdout)["metrics"]}
    assert shown["CPUs_utilized"]["total"] == pytest.approx(cubelib.values[("CPUs_utilized", root, "*")][0],
                                                           rel=1e-9)


def test_metric_names_are_cubepl_names_and_displays_keep_perfs(cubes):
    """CubePL reads [a-zA-Z0-9_:=]+ after metric::: perf's task-clock is
    task_clock, and CubeLib evaluated the expressions naming it."""
    exp = cube_reader.read(str(cubes["counts"]))
    names = {m.name: m.display for m in exp.metrics}
    assert names["task_clock"] == "task-clock" and names["page_faults"] == "page-faults"
    assert names["CPU_utilization_percent"] == "CPU utilization (%)"
    assert all(re.fullmatch(r"[A-Za-z0-9_:=]+", n) for n in names)
    assert "metric::task_clock()" in exp.metric("CPUs_utilized").expression
    assert ("CPUs_utilized", ("work",), "*") in CubeLibValues("counts").values


def test_two_runs_of_one_program_combine_in_cubelib(cubes):
    """Processes named as Score-P names them ("Process", "MPI Rank N"), not
    by pid: cube_diff and cube_merge of two psrun runs unify their system
    trees (CubeLib compares process names and ranks), and the difference
    per call path and thread is psprocess's."""
    diff, merge, run1 = CubeLibValues("diff"), CubeLibValues("merge"), CubeLibValues("run1")
    assert sorted(merge.locations.values()) == sorted(run1.locations.values())  # one process, not two
    # one call tree: regions are written without the lines samples fell on, which differ between runs
    # (CubeLib unifies regions of equal name, file, begin and end only)
    for result in (diff, merge):
        assert len(set(result.paths.values())) == len(result.paths) == len(run1.paths)
    assert {name for name, _, _ in run1.locations.values()} == {"Process"}
    counts = CubeLibValues("counts")
    assert sorted(counts.locations.values()) == [(f"MPI Rank {r}", r, 0) for r in range(4)]
    out = cubes["run1"].parent
    p = psprocess("diff", "run1.cubex", "run2.cubex", "-o", "diff.cubex", cwd=out)
    assert p.returncode == 0, p.stderr
    exp = cube_reader.read(str(out / "diff.cubex"))
    assert {"samples", "time"} <= {m.name for m in exp.metrics}
    assert_same_values(exp, diff)


def test_cube_stat_lists_regions_of_a_timed_profile(cubes):
    """cube_stat -t asks for "time" and "visits": a profile sampled on a
    timer has its samples again as "visits" (read back by psuite without
    it), and cube_stat's list is psuite's: per region its samples, its own
    and its inclusive time over every location."""
    lines = (DATA / "run1.stat-t5.txt").read_text().splitlines()
    assert lines[0] == "cube::Region,Number of Calls,Exclusive Time,Inclusive Time" and lines[-1] == "exit 0"
    assert "visits" in {m.name for m in cube_reader.read(str(cubes["run1"])).metrics}  # in the file
    exp = load_cube(str(cubes["run1"]))
    assert "visits" not in {m.name for m in exp.metrics}  # psuite's own reading leaves the stand-in out
    samples, time, time_incl = exp.exclusive("samples"), exp.exclusive("time"), exp.inclusive("time")
    listed = []
    for line in lines[1:-1]:
        region, calls, excl, incl = line.rsplit(",", 3)
        region = region.strip('"')
        listed.append(region)
        cnodes = [c for c in range(len(exp.cnodes)) if exp.region_name(c) == region]
        outer = [c for c in cnodes if not any(exp.path(c)[:-1].count(region) for _ in (0,))]
        assert int(calls) == samples[cnodes].sum()
        assert float(excl) == pytest.approx(time[cnodes].sum(), abs=5e-7)
        assert float(incl) == pytest.approx(time_incl[outer].sum(), abs=5e-7)
    assert listed and listed[0] == max({exp.region_name(c) for c in range(len(exp.cnodes))},
                                       key=lambda r: time[[c for c in range(len(exp.cnodes))
                                                           if exp.region_name(c) == r]].sum())
    # a counting run: its wall clock as time, one run per location as visits
    lines = (DATA / "counts.stat-t5.txt").read_text().splitlines()
    counts = load_cube(str(cubes["counts"]))
    assert [m.name for m in counts.metrics if m.name in ("time", "visits")] == []  # left out by psuite
    region, calls, excl, incl = lines[1].rsplit(",", 3)
    assert (region, int(calls), lines[2]) == ('"work"', len(counts.locations), "exit 0")
    assert float(excl) == float(incl) == pytest.approx(counts.total("wall_seconds"), abs=5e-7)
    # where psuite measured no time (here a cube of no samples), cube_stat -t refuses, as it says
    assert (DATA / "topology.stat-t5.txt").read_text() == "ERROR: Cannot find metric 'Visits'.\nexit 1\n"


def test_topologies_are_written_as_cart_with_coordinates(cubes):
    """CubeLib reads the experiment's topology: its dimensions (size,
    periodicity, name) and each location's coordinates."""
    sys.path.insert(0, str(DATA))
    try:
        from topology import experiment
    finally:
        sys.path.remove(str(DATA))
    [topology] = experiment().topologies
    dump = (DATA / "topology.dump-w.txt").read_text()
    assert f"Topology name: {topology.name}\nNumber of dimensions: {len(topology.dimensions)}\n" in dump
    for k, (name, size, periodic) in enumerate(topology.dimensions):
        assert f"Dimension {k}: {size}\t\t{'periodic' if periodic else 'non periodic'}\t{name}\n" in dump
    mapping = re.findall(r"^thread \d+ (\d+)\t\t -> ([\d ]+?) ?$", dump, re.M)
    assert {int(loc): tuple(map(int, c.split())) for loc, c in mapping} == topology.coordinates
    text = cubes["topology"].read_bytes()
    assert b'<cart name="ranks x threads" ndims="2">' in text and b'<coord locId="3">1 1</coord>' in text


def test_sampled_lines_stay_psuites(cubes):
    """A profile's regions are written with unknown lines (-1), their
    sampled lines kept in an attribute that psuite's reading restores."""
    import tarfile

    with tarfile.open(cubes["run1"]) as tar:
        anchor = tar.extractfile("anchor.xml").read().decode()
    assert re.findall(r'<region id="\d+" mod="[^"]*" begin="(-?\d+)" end="(-?\d+)"', anchor) and \
        set(re.findall(r'<region id="\d+" mod="[^"]*" begin="(-?\d+)" end="(-?\d+)"', anchor)) == {("-1", "-1")}
    original = cube_reader.read(str(INPUTS / "run1.cubex"))  # as psuite wrote it from psrun's profile
    lines = dict(line.split(" ", 1) for line in original.attributes["psuite::sampled_lines"].splitlines())
    back = load_cube(str(cubes["run1"]))
    assert {str(i): f"{r.begin} {r.end}" for i, r in enumerate(back.regions) if r.begin >= 0} == lines
    assert any(r.begin > 0 for r in back.regions) and "psuite::sampled_lines" not in back.attributes
    assert {r.begin for r in original.regions} == {-1}  # the file's regions: no lines


@pytest.mark.parametrize("name", ["counts", "run1", "topology"])
def test_metrics_are_written_as_cubelib_read_them(cubes, name):
    """The rewritten cube's metrics are those CubeLib listed (cube_dump -w):
    stored ones with data, derived ones (POSTDERIVED) with their CubePL and
    no data, so that CubeLib evaluates them."""
    import tarfile

    from lxml import etree

    with tarfile.open(cubes[name]) as tar:
        members = set(tar.getnames())
        anchor = etree.fromstring(tar.extractfile("anchor.xml").read())
    dump = (DATA / f"{name}.dump-w.txt").read_text()
    derived = 0
    for m in anchor.iter("metric"):
        head = f"( id={m.get('id')}, {m.findtext('uniq_name')}, {m.findtext('uom')}, {m.findtext('dtype')}, "
        assert head in dump, head
        if m.get("type") == "POSTDERIVED":
            derived += 1
            assert f'POSTDERIVED, "{m.findtext("cubepl")}"' in dump
            assert f"{m.get('id')}.data" not in members and m.findtext("dtype") == "DOUBLE"
        else:
            assert f"{m.get('id')}.data" in members
    assert derived == {"counts": 5, "run1": 0, "topology": 1}[name]
