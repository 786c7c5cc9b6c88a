"""Counts from psrun agree with `perf stat` on the same program, through
both backends (the system libpapi, and perf_event directly)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from lxml import etree

from psuite.hwpc.names import canonical
from tests.conftest import run_tool

PAGES, WORK, RUNS = 20000, 150, 5


def perf_stat(argv: list[str]) -> dict[str, float]:
    assert shutil.which("perf"), "perf is needed (tests/run installs linux-perf)"
    err = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock,page-faults", *argv],
                         capture_output=True, text=True, check=True).stderr
    out = {}
    for line in err.splitlines():
        fields = line.split(",")
        if len(fields) > 3 and fields[2] in ("task-clock", "page-faults"):
            value = float(fields[0])
            out[fields[2]] = value * 1e6 if fields[1] == "msec" else value  # task-clock in ns
    return out


@pytest.mark.parametrize("backend", ["PAPI", "perf_event"])
def test_page_faults_and_task_clock_within_2_percent(targets, workdir, backend):
    """Separate runs of a fixed amount of work, alternated; the minima are
    compared, since interference from other load only ever adds."""
    argv = [targets["work"], str(PAGES), str(WORK), "0"]
    ref, ours = [], []
    for _ in range(RUNS):
        ref.append(perf_stat(argv))
        p = run_tool("psrun", "-q", "--backend", backend, "-e", "task-clock,page-faults", *argv)
        assert p.returncode == 0, p.stderr
        [report] = [f for f in workdir.iterdir() if f.name.startswith("work.")]
        ours.append({canonical(e.get("name")): float(e.text) for e in etree.parse(str(report)).iter("hwpcevent")})
        report.unlink()
    for event in ("page-faults", "task-clock"):
        assert min(o[event] for o in ours) == pytest.approx(min(r[event] for r in ref), rel=0.02), event
