"""psuite's CUBE writer on small experiments built here: the unique names
CubePL can name, what a cube cannot hold (refused with one line, nothing
written), the cube_stat stand-in only where it belongs, and several roots."""

from __future__ import annotations

import re
import tarfile

import numpy as np
import pytest

from psuite.errors import UsageError
from psuite.experiment import Experiment, Location, Metric, Region, Topology
from psuite.psprocess.experiments import cubepl_name
from psuite.psprocess.exporters import cube
from psuite.psprocess.inputs import load_cube


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


def test_a_derived_metric_naming_a_missing_metric_is_refused(tmp_path):
    exp = experiment()
    exp.add_metric(Metric("rate", kind="POSTDERIVED", expression="metric::samples() / metric::wall()"))
    with pytest.raises(UsageError, match="'rate' refers to 'wall', which the experiment does not have"):
        cube.write(exp, str(tmp_path / "x.cubex"))
    assert not list(tmp_path.iterdir())  # nothing written


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
