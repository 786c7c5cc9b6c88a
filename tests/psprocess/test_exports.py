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


def read_vmon(path) -> tuple[str, int, int, dict[int, int]]:
    """A vmon.out reader written from the format's description (vprof's
    version 4, as bfdprof reads it): (event, out of range, base, hits by
    absolute address)."""
    import struct

    data = path.read_bytes()
    magic, version, sets = struct.unpack_from(">IBi", data, 0)
    assert (magic, version, sets) == (0x766D6F6E, 4, 1)
    at = 9
    end = data.index(b"\0", at)
    event = data[at:end].decode()
    at = end + 1
    outside, overflow, entries, base = struct.unpack_from(">iiiq", data, at)
    at += 20
    hits: dict[int, int] = {}
    for _ in range(entries):
        n, rel = struct.unpack_from(">Hi", data, at)
        at += 6
        hits[base + rel] = hits.get(base + rel, 0) + n
    assert at == len(data) and overflow == 0
    return event, outside, base, hits


def test_vprof_export_read_back(programs, workdir):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", programs["prof_split"], "60")
    vmon = workdir / "vmon.out"
    p = run_tool("psprocess", "--vprof", str(vmon), str(report))
    assert p.returncode == 0, p.stderr
    event, outside, base, hits = read_vmon(vmon)
    r = psuite.read(str(report), resolve=False)
    [exe] = [m for m in r.modules if m.file == programs["prof_split"]]
    assert event == "PROF"
    assert hits == {pc - exe.offset: n for pc, n in exe.samples.items()}
    assert outside == sum(sum(m.samples.values()) for m in r.modules if m is not exe)
    assert base == min(hits)
