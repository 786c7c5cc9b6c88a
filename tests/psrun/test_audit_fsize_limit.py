"""A file size limit (ulimit -f) through the real psrun: psuite's reports
that do not fit are not written (one stderr line per report naming the
limit and how to raise it), no temporary file is left behind, and the
program ends exactly as a bare run under the same limit ends: psuite's
writes never raise SIGXFSZ, and the program's own writes meet the limit as
they would without psrun."""

from __future__ import annotations

import resource
import signal
import subprocess

import pytest

from tests.conftest import run_tool

LIMIT_LINE = "the file size limit (ulimit -f)"


def limited(limit: int):
    """preexec_fn: the limit, soft and hard, in the child only."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def bare_and_psrun(targets, workdir, limit: int, options: list[str], args: list[str]):
    """The program run bare, then under psrun, both under the limit."""
    exe = targets["fsize_writer"]
    bare = subprocess.run([exe, *args], capture_output=True, text=True, preexec_fn=limited(limit), timeout=60)
    for leftover in workdir.iterdir():
        if leftover.name != "own.dat":
            leftover.unlink()
    p = run_tool("psrun", *options, exe, *args, preexec_fn=limited(limit))
    return bare, p


def assert_clean(workdir, p):
    left = sorted(f.name for f in workdir.iterdir() if f.name.startswith(".psuite-"))
    assert left == [], (left, p.stderr)
    assert "Traceback" not in p.stderr


# psuite's reports of a 50 ms run exceed 1 KiB (a count report of one event
# is about 1.1 KiB); the resource report psrun -R writes itself is about
# 0.9 KiB, so its case has a 512-byte limit.
MODES = {
    "count": (["-q", "-e", "task-clock"], 1024, 1),
    "per-thread": (["-q", "-p", "-e", "task-clock"], 1024, 2),
    "ITIMER_PROF": (["-q", "--profile", "ITIMER_PROF", "--period", "1000"], 1024, 1),
    "callpath": (["-q", "--callpath", "--period", "1000"], 1024, 1),
    "resources": (["-q", "-R", "-e", "task-clock"], 512, 2),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_reports_past_the_limit_fail_cleanly(targets, workdir, mode):
    options, limit, failed = MODES[mode]
    bare, p = bare_and_psrun(targets, workdir, limit, options, ["none", "own.dat", "0.05"])
    assert bare.returncode == 0 and bare.stdout == "wrote 0 bytes, no error\n", bare
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert_clean(workdir, p)
    lines = [line for line in p.stderr.splitlines() if LIMIT_LINE in line]
    assert len(lines) == failed, p.stderr
    for line in lines:  # one line each: the report, the limit, the fix
        assert line.startswith("psrun: could not save the ") and "ulimit -f unlimited" in line, line
    # nothing written past the limit, nothing written at all for the failed ones
    assert [f.name for f in workdir.iterdir() if f.suffix == ".xml"] == [], p.stderr


def test_a_report_within_the_limit_is_still_written(targets, workdir):
    bare, p = bare_and_psrun(targets, workdir, 1024, ["-q", "-R", "-e", "task-clock"], ["none", "own.dat"])
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert_clean(workdir, p)
    [resource_report] = [f for f in workdir.iterdir() if f.name.endswith(".resource.xml")]
    assert 0 < resource_report.stat().st_size <= 1024
    assert resource_report.read_text().rstrip().endswith("</resourcereport>")


@pytest.mark.parametrize("options", [["-q", "-e", "task-clock"], ["-q", "-R", "-e", "task-clock"]])
def test_the_program_meets_its_own_limit_as_without_psrun(targets, workdir, options):
    # SIGXFSZ ignored: the program's own write fails with EFBIG after the
    # 1024 bytes that fit, under psrun as bare
    bare, p = bare_and_psrun(targets, workdir, 1024, options, ["ignore", "own.dat"])
    assert (bare.returncode, bare.stdout) == (3, "wrote 1024 bytes, then EFBIG\n"), bare
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert (workdir / "own.dat").stat().st_size == 1024
    assert_clean(workdir, p)
    # the default disposition: killed by SIGXFSZ, under psrun as bare
    bare, p = bare_and_psrun(targets, workdir, 1024, options, ["default", "own.dat"])
    assert bare.returncode == -signal.SIGXFSZ, bare
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert_clean(workdir, p)
