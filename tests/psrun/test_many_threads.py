"""Thread-heavy programs: a thousand short-lived threads and an OpenMP
loop, counted and profiled; the program's status and output unchanged."""

from __future__ import annotations

import subprocess

import pytest

from psuite.analysis import srcmap
from psuite.analysis.inputs import load
from tests.conftest import TARGETS, run_tool, validate
from tests.psrun.test_psrun import reports
from tests.psrun.test_threads_counted import assert_task_clock_is_cpu_time, task_clock_and_cputime, uncharged_seconds


@pytest.fixture(scope="module")
def omp_work(tmp_path_factory) -> str:
    exe = tmp_path_factory.mktemp("omp") / "omp_work"
    subprocess.run(["cc", "-O1", "-g", "-fopenmp", "-o", str(exe), str(TARGETS / "omp" / "omp_work.c")],
                   check=True)
    return str(exe)


@pytest.mark.parametrize("n", [1, 8, 1000])
def test_short_lived_threads_are_counted(targets, workdir, n):
    before = uncharged_seconds()
    p = run_tool("psrun", "-q", "-e", "task-clock", targets["many_threads"], str(n))
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0 and p.stdout == f"{n} threads done\n", p.stderr
    [report] = reports(workdir)
    task, cpu = task_clock_and_cputime(validate(report, "hwpcreport-0.3.dtd"))
    assert_task_clock_is_cpu_time(task, cpu, uncharged, rel=0.1, margin=0.02)


def test_thousand_threads_profiled_per_thread(targets, workdir):
    p = run_tool("psrun", "-q", "--profile", "ITIMER_PROF", "--period", "1000", "-p", targets["many_threads"],
                 "1000")
    assert p.returncode == 0, p.stderr
    found = reports(workdir)
    threads = [r for r in found if ".t" in r.name]
    assert len(threads) == 1001  # main and every thread
    process = [r for r in found if ".t" not in r.name]
    assert len(process) == 1
    total = load(str(process[0])).total_samples
    assert total == sum(load(str(r)).total_samples for r in threads)


def test_openmp_counted_and_profiled(omp_work, workdir):
    bare = subprocess.run([omp_work], capture_output=True, text=True)
    before = uncharged_seconds()
    p = run_tool("psrun", "-q", "-e", "task-clock", omp_work)
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0 and p.stdout == bare.stdout, p.stderr
    [report] = reports(workdir)
    task, cpu = task_clock_and_cputime(validate(report, "hwpcreport-0.3.dtd"))
    assert_task_clock_is_cpu_time(task, cpu, uncharged)
    report.unlink()
    p = run_tool("psrun", "-q", "--profile", "ITIMER_PROF", "--period", "2000", "-p", omp_work)
    assert p.returncode == 0, p.stderr
    per_thread = [load(str(r)) for r in reports(workdir) if ".t" in r.name]
    busy = [r for r in per_thread if r.total_samples > 10]
    assert len(busy) == 4  # libgomp's team: main and three workers
    for r in busy:
        functions = {loc.function for loc in srcmap.resolve(r)}
        assert any(f.startswith("omp_kernel") for f in functions), functions


def test_thousand_threads_counted_per_thread(targets, workdir):
    p = run_tool("psrun", "-q", "-p", "-e", "task-clock", targets["many_threads"], "1000")
    assert p.returncode == 0, p.stderr
    found = reports(workdir)
    threads = [r for r in found if ".t" in r.name]
    [process] = [r for r in found if ".t" not in r.name]
    assert len(threads) == 1001
    total, _ = task_clock_and_cputime(validate(process, "hwpcreport-0.3.dtd"))
    clocks = [task_clock_and_cputime(validate(r, "hwpcreport-0.3.dtd"))[0] for r in threads]
    assert all(c > 0 for c in clocks)
    # A thread is counted from its start routine to its end; creating and
    # tearing it down (clone, stack, exit) falls outside, in the process
    # total only - a large share for threads that live a millisecond.
    assert 0.3 * total < sum(clocks) <= total * 1.02
