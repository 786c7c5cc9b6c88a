"""From a read of the session's psprocess changes: one sampling event spelt
two ways is one event everywhere (-c, --cube, the algebra); cubes of
different runs shown side by side stay different processes; --threshold,
-m and --no-standard-metrics are refused where they would do nothing."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path

from psuite.analysis import algebra, inputs
from tests.conftest import ROOT, one_line_error, run_tool


def _profile(targets, name: str, event: str) -> Path:
    p = run_tool("psrun", "-q", "--profile", event, "--period", "1000000", "-o", name, targets["work"], "0", "20", "0")
    assert p.returncode == 0, p.stderr
    [doc] = Path.cwd().glob(f"{name}.*.xml")
    return doc


def _samples(doc: Path) -> int:
    return sum(int(s.text) for s in ET.parse(doc).getroot().iter("sample"))


def test_one_event_spelt_two_ways_is_combined_everywhere(targets, workdir):
    a, b = _profile(targets, "a", "task-clock"), _profile(targets, "b", "perf::TASK-CLOCK")
    assert run_tool("psprocess", "-c", str(a), str(b)).returncode == 0
    p = run_tool("psprocess", "--cube", "ab.cubex", "-c", str(a), str(b))
    assert p.returncode == 0, p.stderr
    for doc in (a, b):
        assert run_tool("psprocess", "--cube", f"{doc.stem}.cubex", str(doc)).returncode == 0
    p = run_tool("psprocess", "merge", f"{a.stem}.cubex", f"{b.stem}.cubex", "-C", "-o", "m.cubex")
    assert p.returncode == 0, p.stderr
    # and a different event is still refused
    c = _profile(targets, "c", "page-faults")
    line = one_line_error(run_tool("psprocess", "-c", str(a), str(c)), "psprocess")
    assert "task-clock" in line and "page-faults" in line, line


def test_cubes_of_different_runs_are_different_processes(targets, workdir):
    a, b = _profile(targets, "a", "task-clock"), _profile(targets, "b", "task-clock")
    cubes = []
    for doc in (a, b):
        assert run_tool("psprocess", "--cube", f"{doc.stem}.cubex", str(doc)).returncode == 0
        cubes.append(inputs.load(f"{doc.stem}.cubex", cubes=True))
    # both runs' rank 0, one of them on thread 2: the keys differ, the processes too
    [loc] = cubes[1].locations
    cubes[1].locations = [dataclasses.replace(loc, thread_rank=2, thread="thread 2")]
    both = algebra.side_by_side(cubes)
    assert len({loc.rank for loc in both.locations}) == 2, both.locations
    per_location = [int(both.values["samples"][:, k].sum()) for k in range(len(both.locations))]
    assert per_location == [_samples(a), _samples(b)]


def test_options_without_effect_on_counting_reports_and_cubes_are_refused(targets, workdir):
    p = run_tool("psrun", "-q", "-e", "task-clock", "-o", "count", targets["work"], "0", "5", "0")
    assert p.returncode == 0, p.stderr
    [count] = workdir.glob("count.*.xml")
    line = one_line_error(run_tool("psprocess", "--threshold", "50", str(count)), "psprocess")
    assert "--threshold" in line and "no profile" in line, line
    prof = _profile(targets, "p", "task-clock")
    assert run_tool("psprocess", "--cube", "p.cubex", str(prof)).returncode == 0
    for option in (["--threshold", "5"], ["-m", str(ROOT / "configs" / "metrics.xml")], ["--no-standard-metrics"]):
        line = one_line_error(run_tool("psprocess", *option, "p.cubex"), "psprocess")
        assert option[0] in line and "CUBE file" in line, line
    # where they work, they still do
    assert run_tool("psprocess", "--threshold", "50", str(prof)).returncode == 0
