"""psrun --backend PAPI -p where PAPI cannot count other threads (no
PAPI_INHERIT on this machine): the process total is PAPI's count of the
thread that started counting, the per-thread reports are counted through
Linux perf_event, every thread.  Each report must say what it measured, so
that they agree: the total names the per-thread reports, each thread report
names its collector and the total's."""

from __future__ import annotations

import resource
import subprocess

import pytest

from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports

WORKERS = 2


def child_cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def task_clock_s(root) -> float:
    [event] = [e for e in root.iter("hwpcevent") if e.get("name") in ("perf::TASK-CLOCK", "task-clock")]
    return int(event.text) / 1e9


@pytest.mark.papi
def test_papi_total_and_perf_event_thread_reports_say_what_they_measured(targets, workdir):
    before = child_cpu_seconds()
    bare = subprocess.run([targets["threads"], str(WORKERS), "join"], capture_output=True, text=True, timeout=60)
    bare_cpu = child_cpu_seconds() - before  # the workers' fixed work, measured outside psuite
    assert bare.returncode == 0
    p = run_tool("psrun", "--backend", "PAPI", "-p", "-e", "task-clock", targets["threads"], str(WORKERS), "join")
    assert (p.returncode, p.stdout) == (0, bare.stdout), p.stderr
    by_thread = {}
    for report in reports(workdir):
        root = validate(report, "hwpcreport-0.3.dtd")
        by_thread[int(root.findtext("thread") or 0)] = root
    assert sorted(by_thread) == list(range(WORKERS + 2)), p.stderr  # the total, main, the workers

    total = by_thread.pop(0)
    data = total.find("hwpceventdata")
    annotation = total.findtext("annotation")
    if "PAPI cannot count other threads here" not in annotation:
        # a PAPI that inherits counts every thread in the total
        assert data.get("class") == "PAPI"
        assert task_clock_s(total) > 0.5 * bare_cpu, (task_clock_s(total), bare_cpu)
        return
    assert data.get("class") == "PAPI", annotation
    assert "this process total counts only the thread that starts counting" in annotation, annotation
    assert "the per-thread reports count each thread through Linux perf_event" in annotation, annotation
    assert "per-thread reports count each thread through Linux perf_event" in p.stderr, p.stderr
    # what it says is what was measured: the main thread only, a sliver of the work
    assert task_clock_s(total) < 0.25 * bare_cpu, (task_clock_s(total), bare_cpu)

    threads_sum = 0.0
    for thread, root in by_thread.items():
        assert root.find("hwpceventdata").get("class") == "perfmon", thread
        assert root.find("hwpceventdata").get("version") == "perf_event", thread
        note = root.findtext("annotation")
        assert "this thread counted through Linux perf_event (the process total through PAPI)" in note, note
        threads_sum += task_clock_s(root)
    # the thread reports do count every thread: together about the bare run's CPU time
    assert 0.5 * bare_cpu < threads_sum < 2 * bare_cpu, (threads_sum, bare_cpu)
