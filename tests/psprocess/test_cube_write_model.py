"""psuite's CUBE writer on small experiments built here: the unique names
CubePL can name, what a cube cannot hold (refused with one line, nothing
written), the cube_stat stand-in only where it belongs, and several roots."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from psuite.analysis.experiments import cubepl_name
from psuite.analysis.inputs import load_cube
from psuite.errors import UsageError
from psuite.formats.exporters import cube
from psuite.model.experiment import Experiment, Location, Metric, Region, Topology


@pytest.mark.parametrize("name, unique", [
    ("task-clock", "task_clock"),
    ("perf::TASK-CLOCK", "perf::TASK_CLOCK"),
    ("CPU utilization (%)", "CPU_utilization_percent"),
    ("PAPI_TOT_CYC", "PAPI_TOT_CYC"),
    ("ix86arch::INSTRUCTION_RETIRED:u=0", "ix86arch::INSTRUCTION_RETIRED:u=0"),  # CubePL reads : and =
    ("L1 D-cache miss rate", "L1_D_cache_miss_rate"),
    ("call::x", "_call::x"),  # metric::call:: is another CubePL keyword
    ("---", "metric"),
])
def test_cubepl_names(name, unique):
    assert cubepl_name(name) == unique
    assert re.fullmatch(r"[A-Za-z0-9_:=]+", unique)  # CubeLib's CubePL1Scanner.ll, after metric::


def test_cubepl_names_stay_unique():
    taken = {"task_clock", "task_clock_2"}
    assert cubepl_name("task-clock", taken) == "task_clock_3"


def experiment(metrics=("samples", "time")) -> Experiment:
    exp = Experiment(attributes={"psuite::event": "ITIMER_PROF"})
    for name in metrics:
        exp.add_metric(Metric(name, name.title(), "sec" if name == "time" else "occ",
                              "DOUBLE" if name == "time" else "UINT64"))
    root = exp.add_cnode(exp.add_region(Region("app")), None)
    exp.add_cnode(exp.add_region(Region("work", "work.c", 12, 14)), root)
    exp.locations = [Location(process="Process", rank=0)]
    for name in metrics:
        exp.zeros(name)[1, 0] = 3
    return exp


def anchor(path) -> str:
    with tarfile.open(path) as tar:
        return tar.extractfile("anchor.xml").read().decode()


def test_a_derived_metric_naming_a_missing_metric_is_written_as_cubelib_reads_it(tmp_path):
    """CubeLib 4.8 reads a cube whose CubePL names a metric it lacks and takes
    that metric as 0 (cube_dump of such a cube; cube_remap2's own outputs name
    omp_idle_threads in an MPI-only profile): psuite writes it as it is."""
    exp = experiment()
    exp.add_metric(Metric("rest", kind="POSTDERIVED", expression="metric::samples() - metric::wall()"))
    cube.write(exp, str(tmp_path / "x.cubex"))
    assert "<cubepl>metric::samples() - metric::wall()</cubepl>" in anchor(tmp_path / "x.cubex")
    back = load_cube(str(tmp_path / "x.cubex"))
    assert back.total("rest") == back.total("samples") == 3


def test_a_remapped_score_p_cube_goes_through_the_algebra(tmp_path):
    """Score-P's remapped profile (its derived metrics over global masks and
    a metric it lacks) goes through an operation (a merge with itself) and
    is written; the result's derived metrics have the input's
    values, call path by call path."""
    remap = Path(__file__).parent / "data" / "scorep" / "remap.cubex"
    run = [sys.executable, "-m", "psuite.psprocess"]
    p = subprocess.run([*run, "merge", str(remap), str(remap), "-o", "cut.cubex"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    dumps = [subprocess.run([*run, "dump", "-m", "execution,mpi,comp", "-f", "csv", "-t", "aggr", str(path)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120) for path in
             (remap, tmp_path / "cut.cubex")]
    assert all(d.returncode == 0 for d in dumps), [d.stderr for d in dumps]
    assert dumps[0].stdout == dumps[1].stdout and dumps[0].stdout.strip()


def test_topology_coordinates_must_fit_its_dimensions(tmp_path):
    exp = experiment()
    exp.topologies = [Topology("grid", [("x", 2, False), ("y", 2, False)], {0: (1,)})]
    with pytest.raises(UsageError, match="coordinates \\(1,\\) for 2 dimensions"):
        cube.write(exp, str(tmp_path / "x.cubex"))
    assert not list(tmp_path.iterdir())


def test_the_cube_stat_stand_in_only_where_time_is_measured(tmp_path):
    timed = tmp_path / "timed.cubex"
    cube.write(experiment(), str(timed))
    text = anchor(timed)
    assert "<uniq_name>visits</uniq_name>" in text and '<attr key="psuite::stand_in" value="samples"/>' in text
    back = load_cube(str(timed))
    assert [m.name for m in back.metrics] == ["samples", "time"]  # psuite's reading leaves it out
    assert [(r.name, r.begin, r.end) for r in back.regions] == [("app", -1, -1), ("work", 12, 14)]
    assert 'begin="12"' not in text  # a profile's sampled lines: not in the file's regions
    counts = Experiment()  # a counting run: its wall clock as time, one run per location as visits
    counts.add_metric(Metric("wall_seconds", unit="sec"))
    counts.add_cnode(counts.add_region(Region("app")), None)
    counts.locations = [Location(rank=r) for r in range(3)]
    counts.zeros("wall_seconds")[0] = [1.5, 2.0, 2.5]
    cube.write(counts, str(tmp_path / "counts.cubex"))
    text = anchor(tmp_path / "counts.cubex")
    assert '<attr key="psuite::stand_in::time" value="wall_seconds"/>' in text
    assert '<attr key="psuite::stand_in::visits" value="one run per location"/>' in text
    assert [m.name for m in load_cube(str(tmp_path / "counts.cubex")).metrics] == ["wall_seconds"]
    events = tmp_path / "events.cubex"  # sampled on an event: no time, nothing to stand in for
    cube.write(experiment(("samples", "events")), str(events))
    assert "<uniq_name>visits</uniq_name>" not in anchor(events)
    visited = experiment(("visits", "time", "samples"))  # visits of its own: kept as they are
    cube.write(visited, str(tmp_path / "visited.cubex"))
    assert anchor(tmp_path / "visited.cubex").count("<uniq_name>visits</uniq_name>") == 1
    assert "psuite::stand_in" not in anchor(tmp_path / "visited.cubex")


def test_several_roots_are_written_as_they_are(tmp_path):
    exp = experiment()
    second = exp.add_cnode(exp.add_region(Region("other")), None)
    for a in exp.values.values():
        a.resize((len(exp.cnodes), 1), refcheck=False)
    exp.values["samples"][second, 0] = 7
    path = tmp_path / "roots.cubex"
    cube.write(exp, str(path))
    text = anchor(path)
    assert "[roots]" not in text
    back = load_cube(str(path))
    assert [back.region_name(c) for c in back.roots] == ["app", "other"]
    assert np.array_equal(back.values["samples"][:, 0], [0, 3, 7])


def test_names_cubepl_cannot_name_are_renamed_on_writing_and_reading(tmp_path):
    """An experiment (or an older psuite cube) naming a metric as perf does:
    written, and read back, under a name CubePL can refer to, its derived
    metrics' expressions and display names following."""
    exp = Experiment(attributes={"Creator": "psuite", "psuite::no_formula": "faults/s"})
    for name in ("task-clock", "task", "faults/s"):
        exp.add_metric(Metric(name, unit="occ", dtype="UINT64" if name != "faults/s" else "DOUBLE"))
    exp.add_metric(Metric("per task", kind="POSTDERIVED", expression="metric::task-clock() / metric::task()"))
    exp.add_cnode(exp.add_region(Region("app")), None)
    exp.locations = [Location()]
    exp.zeros("task-clock")[0, 0] = 6
    exp.zeros("task")[0, 0] = 3
    path = tmp_path / "old.cubex"
    cube.write(exp, str(path))
    text = anchor(path)
    assert "<uniq_name>task_clock</uniq_name>" in text and "<disp_name>task-clock</disp_name>" in text
    assert "<cubepl>metric::task_clock() / metric::task()</cubepl>" in text
    back = load_cube(str(path))
    assert [m.name for m in back.metrics] == ["task_clock", "task", "faults_s", "per_task"]
    assert back.total("per_task") == 2.0 and back.attributes["psuite::no_formula"] == "faults_s"
    assert [m.name for m in exp.metrics][0] == "task-clock"  # the experiment written is not changed
    # a cube older psuite wrote: perf's names as unique names, read as psuite names them now
    import io

    with tarfile.open(path) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    old = tmp_path / "older.cubex"
    with tarfile.open(old, "w", format=tarfile.USTAR_FORMAT) as tar:
        for m, data in members:
            if m.name == "anchor.xml":
                data = data.replace(b"task_clock", b"task-clock")
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert "<uniq_name>task-clock</uniq_name>" in anchor(old)
    again = load_cube(str(old))
    assert [m.name for m in again.metrics] == ["task_clock", "task", "faults_s", "per_task"]
    assert again.metric("per_task").expression == "metric::task_clock() / metric::task()"
    assert again.total("per_task") == 2.0
