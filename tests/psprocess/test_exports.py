"""Exports read by the real tools, and the Python data API: gmon.out read
by GNU gprof agrees with psprocess's per-function samples; psuite.read()
gives the model with pandas-ready records."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import psuite
import psuite.errors
from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_profiles import profile


def gprof_flat(exe: str, gmon: str) -> tuple[float, dict[str, float]]:
    gprof = shutil.which("gprof")
    assert gprof, "GNU gprof (binutils) is needed; tests/run.sh installs it"
    out = subprocess.run([gprof, "-b", "-p", exe, gmon], capture_output=True, text=True, check=True).stdout
    per_sample = float(re.search(r"Each sample counts as ([0-9.]+) ", out).group(1))
    self_seconds = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and re.fullmatch(r"[0-9.]+", cols[0]) and re.fullmatch(r"[0-9.]+", cols[2]):
            self_seconds[cols[-1]] = float(cols[2])
    return per_sample, self_seconds


def test_gprof_reads_the_gmon_export(programs, workdir):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", programs["prof_split"], "150")
    gmon = workdir / "gmon.out"
    p = run_tool("psprocess", "--gmon", str(gmon), str(report))
    assert p.returncode == 0, p.stderr
    per_sample, flat = gprof_flat(programs["prof_split"], str(gmon))
    assert per_sample == pytest.approx(0.001)
    ours: dict[str, int] = {}
    r = psuite.read(str(report))
    for loc in r.locations:
        if loc.module == programs["prof_split"]:
            ours[loc.function] = ours.get(loc.function, 0) + loc.samples
    assert set(flat) == set(ours), (flat, ours)
    for function, samples in ours.items():
        assert flat[function] == pytest.approx(samples * per_sample, abs=0.0051)  # gprof prints 2 decimals
    assert "exists" in one_line_error(run_tool("psprocess", "--gmon", str(gmon), str(report)), "psprocess")


def test_python_api_records(programs, workdir):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "2000", programs["prof_split"], "40")
    r = psuite.read(str(report))
    rows = r.to_records()
    assert rows and {"module", "file", "function", "line", "samples", "pid", "hostname"} <= set(rows[0])
    assert sum(row["samples"] for row in rows) == sum(sum(m.samples.values()) for m in r.modules)
    report.unlink()
    [counting] = profile(workdir, "-e", "task-clock,page-faults", programs["prof_split"], "10")
    c = psuite.read(str(counting))
    rows = c.to_records()
    assert {row["name"] for row in rows if row["kind"] == "event"} == {"task-clock", "page-faults"}
    with pytest.raises(psuite.errors.InputError):
        psuite.read(str(workdir / "missing.xml"))
