"""psuite's collector goes by a name of its own: ps, pgrep and pkill, by
command line or by process name, find the measured program alone, as
they would find it bare."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import psrun_command, validate
from tests.psrun.test_survival import MODES, annotation, process_report

COLLECTOR_NAME = "psuite-collect"


def pgrep(*args: str) -> set[int]:
    out = subprocess.run(["pgrep", *args], capture_output=True, text=True)
    return {int(pid) for pid in out.stdout.split()}


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()


def collector_of(pid: int) -> int:
    """The collector writing pid's reports (its command line names pid)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for c in pgrep("-x", COLLECTOR_NAME):
            try:
                if cmdline(c) == f"psuite-collector {pid}":
                    return c
            except OSError:
                continue
        time.sleep(0.02)
    pytest.fail(f"no collector of {pid}: {sorted(pgrep('-x', COLLECTOR_NAME))}")


@pytest.mark.parametrize("mode", ["count", "itimer-prof", "callpath"])
def test_pgrep_and_pkill_find_the_program_alone(targets, workdir, mode):
    tag = f"tag{os.getpid()}{mode.replace('-', '')}"
    proc = subprocess.Popen([psrun_command(), "-q", *MODES[mode], targets["hard_endings"], "spin", tag],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == f"running {proc.pid}\n"  # the program has psrun's pid
        collector = collector_of(proc.pid)
        assert collector != proc.pid
        out = subprocess.run(["ps", "-o", "comm=", "-p", str(collector)], capture_output=True, text=True)
        assert out.stdout.strip() == COLLECTOR_NAME
        assert pgrep("-f", tag) == {proc.pid}
        assert proc.pid in pgrep("-x", "hard_endings") and collector not in pgrep("-x", "hard_endings")
        assert subprocess.run(["pkill", "-f", tag]).returncode == 0
        assert proc.wait(timeout=120) == -signal.SIGTERM  # as bare: hard_endings has no handler
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
    root = validate(process_report(workdir, mode), "hwpcreport-0.3.dtd")
    assert "SIGTERM" in annotation(root), annotation(root)
