"""Counting covers every thread of the program, however it ends: the
task clock of the report equals the CPU time the kernel charged to the
process over the same interval (both are in the report)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports


def task_clock_and_cputime(root) -> tuple[float, float]:
    [event] = [e for e in root.iter("hwpcevent") if "task-clock" in e.get("name").lower()]
    cpu = float(root.findtext("cputime/usertime")) + float(root.findtext("cputime/systemtime"))
    return int(event.text) / 1e9, cpu


def uncharged_seconds() -> float:
    """CPU time of the whole machine so far that the scheduler charges to no
    task: steal (the hypervisor ran something else on a vCPU) and interrupt
    time (/proc/stat, all CPUs; irq and softirq count here only with
    CONFIG_IRQ_TIME_ACCOUNTING, steal with PARAVIRT_TIME_ACCOUNTING)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    # cpu user nice system idle iowait irq softirq steal ...
    ticks = sum(int(fields[i]) for i in (6, 7, 8) if i < len(fields))
    return ticks / os.sysconf("SC_CLK_TCK")


def assert_task_clock_is_cpu_time(task: float, cpu: float, uncharged: float, rel: float = 0.05,
                                  margin: float = 0.0) -> None:
    """task-clock against the CPU time of the same interval and threads.
    They differ by what the scheduler leaves out of CPU time but perf's
    task-clock counts, since it runs whenever the thread holds its CPU:
    time a hypervisor took the vCPU away (steal) and interrupt time.  The
    machine's total of those during the run bounds that difference (plus
    one tick: /proc/stat counts in 1/USER_HZ)."""
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert cpu * (1 - rel) - margin <= task <= cpu * (1 + rel) + margin + uncharged + tick, (task, cpu, uncharged)


@pytest.mark.parametrize("mode", ["join", "exit", "pthread_exit"])
def test_all_threads_are_counted(targets, workdir, mode):
    before = uncharged_seconds()
    p = run_tool("psrun", "-e", "task-clock", targets["threads"], "3", mode)
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0, p.stderr
    [report] = reports(workdir)
    assert report.name.startswith("threads."), report.name  # the exe is still named after main has gone
    root = validate(report, "hwpcreport-0.3.dtd")
    assert root.findtext("command").endswith(f"threads 3 {mode}")
    task, cpu = task_clock_and_cputime(root)
    # enough work to compare: in "exit" mode only the worker that ends the
    # process is sure to run (a quarter of its work, about 0.04 s); on a
    # loaded machine the others may hardly have started
    assert cpu > (0.02 if mode == "exit" else 0.05)
    assert_task_clock_is_cpu_time(task, cpu, uncharged)


@pytest.mark.papi
def test_papi_without_inheritance_says_so(targets, workdir):
    """Forced PAPI: where PAPI can follow threads the counts are whole;
    where it cannot (no PMU: PAPI checks inheritance with a hardware
    counter) psrun and the report say that one thread is measured."""
    before = uncharged_seconds()
    p = run_tool("psrun", "--backend", "PAPI", "-e", "task-clock", targets["threads"], "3", "join")
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0, p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    task, cpu = task_clock_and_cputime(root)
    if "PAPI cannot count other threads" in p.stderr:
        assert "only the thread that starts counting is measured" in root.findtext("annotation")
        assert task < 0.5 * cpu
    else:
        assert_task_clock_is_cpu_time(task, cpu, uncharged)


def test_automatic_backend_prefers_one_that_follows_threads(targets, workdir):
    before = uncharged_seconds()
    p = run_tool("psrun", "-e", "task-clock", targets["threads"], "2", "join")
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0, p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    if "PAPI cannot count other threads" in p.stderr:
        assert "counting through perf_event" in p.stderr
        assert root.find("hwpceventdata").get("class") == "perfmon"
    task, cpu = task_clock_and_cputime(root)
    assert_task_clock_is_cpu_time(task, cpu, uncharged)


def assert_per_thread_reports_add_up(workdir: Path, uncharged: float) -> list:
    """psrun -p of `threads 3 MODE`: the process total and a report for each
    thread, main and three workers, numbered from 1, each thread's task
    clock its CPU time, and together the total's.  The threads' roots."""
    found = reports(workdir)
    process = [r for r in found if ".t" not in r.name]
    threads = [r for r in found if ".t" in r.name]
    assert len(process) == 1 and len(threads) == 4  # main and three workers
    total_root = validate(process[0], "hwpcreport-0.3.dtd")
    assert total_root.findtext("thread") == "0"  # the process total, and it says so
    assert "process total" in total_root.findtext("annotation")
    total, _ = task_clock_and_cputime(total_root)
    per_thread, roots = {}, []
    for r in threads:
        root = validate(r, "hwpcreport-0.3.dtd")
        number = root.findtext("thread")
        assert f".t{number}." in r.name  # the file name says which thread
        task, cpu = task_clock_and_cputime(root)
        per_thread[number] = task
        roots.append(root)
        # each thread's CPU time covers the interval its counters ran (for
        # the main thread, not the process start-up before them)
        assert_task_clock_is_cpu_time(task, cpu, uncharged, margin=0.002)
    assert sorted(per_thread) == ["1", "2", "3", "4"]  # the main thread is 1
    assert sum(per_thread.values()) == pytest.approx(total, rel=0.05)
    # combined, each thread is named by its index
    import json

    doc = json.loads(run_tool("psprocess", "-c", "-f", "json", *map(str, threads)).stdout)
    clock = {s["name"]: s for s in doc["statistics"]}["task-clock"]
    assert clock["count"] == 4 and "thread " in clock["min_who"]
    return roots


@pytest.mark.parametrize("mode", ["join", "exit", "pthread_exit"])
def test_per_thread_reports_add_up_to_the_process(targets, workdir, mode):
    before = uncharged_seconds()
    p = run_tool("psrun", "-q", "-p", "-e", "task-clock", targets["threads"], "3", mode)
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0, p.stderr
    assert_per_thread_reports_add_up(workdir, uncharged)
