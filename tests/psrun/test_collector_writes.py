"""psuite's collector writes thousands of -p reports whatever happens to the
program meanwhile, and a report is never left half written: killed at any
instant (the collector too), a run leaves whole reports and no temporary
file."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import psrun_command, validate
from tests.psrun.test_collector_name import collector_of

THREADS = 2000  # the main thread's, the threads' and the process total's reports: THREADS + 2


def documents(directory: Path) -> list[Path]:
    return sorted(directory.glob("many_threads.*.xml"))


def leftovers(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if not name.endswith(".xml")]


def start_and_catch_the_writing(targets, workdir) -> tuple[subprocess.Popen, int]:
    """psrun -p of THREADS threads, returned once the first report is there
    (the collector is writing the rest), with the collector's pid."""
    proc = subprocess.Popen([psrun_command(), "-q", "-p", "-e", "task-clock", targets["many_threads"], str(THREADS)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    collector = collector_of(proc.pid)
    deadline = time.monotonic() + 300
    while not documents(workdir):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"no report while the program ran: {proc.communicate(timeout=60)}")
        time.sleep(0.002)
    return proc, collector


def wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 300
    while Path(f"/proc/{pid}").exists():
        status = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
        if ") Z " in status:  # a zombie of another parent: it has ended
            return
        assert time.monotonic() < deadline, f"{pid} still running"
        time.sleep(0.01)


def test_program_killed_while_its_thread_reports_are_written_gets_all_of_them(targets, workdir):
    proc, collector = start_and_catch_the_writing(targets, workdir)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=120) == -signal.SIGKILL
    proc.communicate(timeout=60)
    wait_gone(collector)
    reports = documents(workdir)
    assert len(reports) == THREADS + 2, len(reports)
    for report in reports:
        etree.parse(str(report))  # every one whole
    validate(reports[0], "hwpcreport-0.3.dtd")
    validate(reports[-1], "hwpcreport-0.3.dtd")
    assert not leftovers(workdir), leftovers(workdir)


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.05])
def test_collector_killed_while_writing_leaves_whole_reports_and_no_temporary(targets, workdir, delay):
    """The job killed whole (program and collector) at some instant of the
    writing: what is there is whole, and nothing else is."""
    proc, collector = start_and_catch_the_writing(targets, workdir)
    time.sleep(delay)
    os.kill(collector, signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=120)
    proc.communicate(timeout=60)
    wait_gone(collector)
    reports = documents(workdir)
    assert reports
    for report in reports:
        etree.parse(str(report))
    assert not leftovers(workdir), leftovers(workdir)
