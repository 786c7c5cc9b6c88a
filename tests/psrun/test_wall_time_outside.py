"""Wall-clock sampling (--profile ITIMER_REAL) with the sampling
descriptors outside the program: when the hard RLIMIT_NOFILE leaves no room
above the soft limit (`ulimit -n 16` in bash sets both), the collector opens
each thread's perf_event task clock for the thread's tid (its sigtrap still
signals the program's thread, so running time is sampled as with room) and
reads /proc/PID/task/TID/syscall for the blocked ones, so the program holds
no descriptor of psuite's.  The program opens as many files as bare, sees
the descriptors bare sees, its sleeps are never cut short, and its profile
covers its wall time: running and blocked, in the main thread and in a
thread started and ended while it runs.  The programs are
tests/targets/program_view.c, rt_naps.c and a sleeper compiled here."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from psuite.analysis.inputs import load
from tests.conftest import TARGETS, validate
from tests.hwpc.test_api_profiling import CODES, UNITS, linked, one
from tests.psrun.test_counters_outside import hard_nofile_16
from tests.psrun.test_psrun import reports
from tests.psrun.test_sampler_runtime import functions, profile_roots, samples
from tests.psrun.test_survival import annotation, process_report, psrun, run_to_end, wait_ended
from tests.psrun.test_threads_counted import uncharged_seconds

PERIOD_US = 1000
REAL = ("--profile", "ITIMER_REAL", "--period", str(PERIOD_US))
OUTSIDE_NOTE = "no room above the descriptor limit: the collector process holds the sampling descriptors"

# main sleeps NAP s and burns NAP s of CPU time; a thread started meanwhile
# does the same with half of it and ends; every sleep that comes back early
# (EINTR) is counted and printed.  `ready` (argv[1]) makes it say its pid
# and sleep until killed, after the work.  `threads N`: N threads burn
# NAP / 2 s of CPU time each, all at once.
SLEEPER = r"""
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NAP 0.5
static volatile int cut;

static double thread_cpu(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void nap(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts))
        if (errno == EINTR)
            __atomic_fetch_add(&cut, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) static void burn(double s)
{
    double end = thread_cpu() + s;
    volatile double x = 0;
    while (thread_cpu() < end)
        for (int k = 0; k < 10000; k++)
            x += k;
}

static void *worker(void *arg)
{
    (void)arg;
    nap(NAP / 2);
    burn(NAP / 2);
    return NULL;
}

static void *burner(void *arg)
{
    (void)arg;
    burn(NAP / 2);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "threads") == 0) {
        int n = atoi(argv[2]);
        pthread_t all[64];
        for (int i = 0; i < n && i < 64; i++)
            pthread_create(&all[i], NULL, burner, NULL);
        for (int i = 0; i < n && i < 64; i++)
            pthread_join(all[i], NULL);
        printf("threads %d\n", n);
        return 0;
    }
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    nap(NAP);
    burn(NAP);
    pthread_join(t, NULL);
    printf("sleeps cut short %d\n", cut);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "ready") == 0) {
        printf("running %d\n", (int)getpid());
        fflush(stdout);
        for (;;)
            nap(1);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def sleeper(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("wall_outside")
    (out / "sleeper.c").write_text(SLEEPER)
    subprocess.run(["cc", "-O1", "-g", "-pthread", "-o", str(out / "sleeper"), str(out / "sleeper.c")], check=True)
    return str(out / "sleeper")


@pytest.mark.parametrize("what", ["nofile", "fds"])
def test_as_many_files_and_the_same_descriptors_as_bare(targets, workdir, what):
    """`nofile` opens /dev/null until EMFILE (12 as bare, 10 when psuite
    held a task clock and a /proc reader per thread); `fds` lists
    /proc/self/fd at main: what bare lists, no perf_event, no /proc file."""
    argv = [targets["program_view"], what]
    bare = subprocess.run(argv, capture_output=True, text=True, timeout=120, preexec_fn=hard_nofile_16)
    under = run_to_end(psrun("-q", *REAL, *argv), preexec_fn=hard_nofile_16)
    assert (under.returncode, under.stdout) == (bare.returncode, bare.stdout), under.stderr
    if what == "nofile":
        assert bare.stdout.endswith(" files opened (Too many open files)\n"), bare
    root = validate(process_report(workdir, "itimer-real"), "hwpcreport-0.3.dtd")
    assert OUTSIDE_NOTE in annotation(root), annotation(root)


def test_sleeps_are_never_cut_short(targets, workdir):
    """1,500 nanosleep(1 ms) and 1,500 poll(1 ms) at 1 kHz: no EINTR, as
    bare; the wall time is sampled (the sleeps from /proc, by the
    collector)."""
    argv = [targets["rt_naps"], "1500"]
    bare = subprocess.run(argv, capture_output=True, text=True, timeout=300, preexec_fn=hard_nofile_16)
    assert bare.stdout == "nanosleep EINTR 0 poll EINTR 0\n"
    under = run_to_end(psrun("-q", *REAL, *argv), preexec_fn=hard_nofile_16)
    assert (under.returncode, under.stdout) == (bare.returncode, bare.stdout), under.stderr
    report = process_report(workdir, "itimer-real")
    root = validate(report, "hwpcreport-0.3.dtd")
    wall = load(str(report)).wallclock
    assert 0.7 * wall <= samples(root) * PERIOD_US / 1e6 <= 1.05 * wall, (samples(root), wall)
    assert OUTSIDE_NOTE in annotation(root)


def test_running_and_blocked_time_of_each_thread(sleeper, workdir):
    """main and a thread it starts each sleep and then burn CPU time: each
    thread's samples cover its wall time, its sleep (in the C library's
    nanosleep, read from /proc) and its burn (its task clock, held by the
    collector and opened for the thread when it started); the sleeps come
    back whole, as bare."""
    bare = subprocess.run([sleeper], capture_output=True, text=True, timeout=120, preexec_fn=hard_nofile_16)
    assert (bare.returncode, bare.stdout) == (0, "sleeps cut short 0\n")
    before = uncharged_seconds()
    under = run_to_end(psrun("-q", "-p", *REAL, sleeper), preexec_fn=hard_nofile_16)
    uncharged = uncharged_seconds() - before
    assert (under.returncode, under.stdout) == (bare.returncode, bare.stdout), under.stderr
    process_report(workdir, "itimer-real")
    roots = profile_roots(workdir)
    assert sorted(roots) == [0, 1, 2], sorted(roots)
    assert OUTSIDE_NOTE in annotation(roots[0])
    assert samples(roots[0]) == samples(roots[1]) + samples(roots[2])
    for number, nap in ((1, 0.5), (2, 0.25)):
        [report] = [r for r in reports(workdir) if f".t{number}." in r.name]
        root = roots[number]
        wall = load(str(report)).wallclock
        user = float(root.findtext("cputime/usertime"))
        sampled = samples(root) * PERIOD_US / 1e6
        # its lifetime: the sleep, the burn, and (main) the join; as with room
        # above the limit, time running in the kernel is not sampled
        assert 0.7 * wall <= sampled <= 1.05 * wall + 0.02, (number, samples(root), wall)
        found = functions(report)
        slept = sum(n for name, n in found.items() if "nanosleep" in name) * PERIOD_US / 1e6
        burnt = found.get("burn", 0) * PERIOD_US / 1e6
        assert 0.7 * nap <= slept <= 1.1 * nap + 0.02, (number, found)
        # running in user mode (the task clock), plus the run-queue wait charged there
        assert 0.85 * user <= burnt <= wall + 0.02 + uncharged, (number, found, user, wall)


def test_more_threads_than_the_limit_are_each_sampled(sleeper, workdir):
    """20 threads burning 0.25 s of CPU time each, all at once, under a
    limit of 16 descriptors, which binds the collector too: each thread's
    running time is sampled (its clock inherited from main's, which the
    collector holds: no descriptor per thread anywhere)."""
    under = run_to_end(psrun("-q", "-p", *REAL, sleeper, "threads", "20"), preexec_fn=hard_nofile_16)
    assert (under.returncode, under.stdout) == (0, "threads 20\n"), under.stderr
    process_report(workdir, "itimer-real")
    roots = profile_roots(workdir)
    assert sorted(roots) == list(range(22)), sorted(roots)
    assert "could not open" not in annotation(roots[0]), annotation(roots[0])
    for number in range(2, 22):
        [report] = [r for r in reports(workdir) if f".t{number}." in r.name]
        root = roots[number]
        user = float(root.findtext("cputime/usertime"))
        # the kernel splits CPU time into user and system by ticks: with 20
        # threads on two cores a 0.25 s burn once showed 0.198 s of user time
        cpu = user + float(root.findtext("cputime/systemtime"))
        wall = load(str(report)).wallclock
        burnt = functions(report).get("burn", 0) * PERIOD_US / 1e6
        assert cpu > 0.2 and 0.85 * user <= burnt <= 1.05 * wall + 0.02, (number, burnt, user, cpu, wall)


def test_the_program_suspends_the_collectors_clocks(tmp_path_factory, workdir):
    """ps_hwpc_suspend and ps_hwpc_start switch the task clocks the
    collector holds (and the threads' inherited copies): the suspended
    function gets no sample, the others theirs, in the program's own
    profile and in psrun's."""
    program = linked(tmp_path_factory.mktemp("api"), "cc", TARGETS / "api" / "api_profile.c", "-lpthread")
    p = run_to_end(psrun("-q", *REAL, program, UNITS, "region", "threads"), cwd=workdir, preexec_fn=hard_nofile_16)
    assert (p.returncode, p.stdout, p.stderr) == (0, CODES, ""), p.stderr
    for prefix in ("region", "api_profile"):
        report = one(workdir, prefix)
        by_function = functions(report)
        assert "spin_b" not in by_function, by_function
        assert by_function.get("spin_a", 0) >= 50 and by_function.get("spin_c", 0) >= 50, by_function
    assert OUTSIDE_NOTE in annotation(validate(one(workdir, "api_profile"), "hwpcreport-0.3.dtd"))


def test_killed_program_keeps_its_profile(sleeper, workdir):
    """SIGKILL after the work: the collector stops its sampling, gives its
    task clocks back and writes the profile, which covers the work."""
    started = time.monotonic()
    proc = subprocess.Popen(psrun("-q", *REAL, sleeper, "ready"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=hard_nofile_16)
    assert proc.stdout.readline() == b"sleeps cut short 0\n"
    line = proc.stdout.readline().decode()
    assert line == f"running {proc.pid}\n", line  # psrun exec'd it: the program has psrun's pid
    held = [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{proc.pid}/fd")]
    os.kill(proc.pid, signal.SIGKILL)
    code = wait_ended(proc, started)[0]
    proc.stdout.close()
    proc.stderr.close()
    assert code == -signal.SIGKILL
    assert not [h for h in held if "perf_event" in h or h.startswith("/proc/")], held
    report = process_report(workdir, "itimer-real")
    root = validate(report, "hwpcreport-0.3.dtd")
    assert "killed by SIGKILL" in annotation(root), annotation(root)
    found = functions(report)
    # main's 0.5 s burn and the thread's 0.25 s (user time, sampled through
    # the collector's task clocks), and at least main's first sleep
    assert found.get("burn", 0) * PERIOD_US / 1e6 >= 0.85 * 0.75, found
    assert sum(n for name, n in found.items() if "nanosleep" in name) * PERIOD_US / 1e6 >= 0.7 * 0.5, found


def test_nothing_changes_with_room_above_the_limit(sleeper, workdir):
    """No hard limit: the program holds its task clocks and /proc readers
    as before, and the profile says nothing of the collector."""
    under = run_to_end(psrun("-q", *REAL, sleeper))
    assert (under.returncode, under.stdout) == (0, "sleeps cut short 0\n"), under.stderr
    root = validate(process_report(workdir, "itimer-real"), "hwpcreport-0.3.dtd")
    assert OUTSIDE_NOTE not in annotation(root)
