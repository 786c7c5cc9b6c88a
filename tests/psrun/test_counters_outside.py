"""Counting with the counters outside the program: under psrun the
collector holds the perf_event counting descriptors and enables, disables
and reads them for the program, which keeps none.  So a program whose hard
RLIMIT_NOFILE leaves no room above its soft limit (`ulimit -n 16` in bash
sets both) opens as many files as bare, sees the descriptors bare sees, and
keeps its report with counts that match the CPU time the kernel charged to
it, at a normal end after closefrom(3) and after SIGKILL alike.  The
programs are tests/targets/program_view.c and hard_endings.c.  Under psrun -p
with no room above the limit the collector holds every thread's counters
too (threads.c, spin_threads.c)."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import time
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import validate
from tests.psrun.test_callpath_runtime import companion_root
from tests.psrun.test_psrun import reports
from tests.psrun.test_survival import (
    Ended,
    annotation,
    check_numbers,
    process_report,
    psrun,
    run_to_end,
    start_spinning,
    task_clock,
    wait_ended,
    wait_for,
)
from tests.psrun.test_threads_counted import assert_per_thread_reports_add_up, uncharged_seconds

COUNT = ("-e", "task-clock")
PER_THREAD = ("-p", *COUNT)
HELD = "no room above the descriptor limit: counters held by the collector process"
NOFILE = 16
# Sampling the CPU time: per-thread POSIX timers (no descriptor) when the
# limit leaves no room above it, and libgcc_s's unwinder for call paths
# (libunwind validates addresses through a pipe of its own).
SAMPLING = {"itimer-prof": ("--profile", "ITIMER_PROF"), "callpath": ("--callpath",)}


def hard_nofile_16():
    """A preexec_fn: `ulimit -n 16`, soft and hard limit both 16 (no room above)."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def test_as_many_files_as_bare_with_no_room_above_the_limit(targets, workdir):
    argv = [targets["program_view"], "nofile"]
    bare = subprocess.run(argv, capture_output=True, text=True, timeout=120, preexec_fn=hard_nofile_16)
    under = run_to_end(psrun("-q", *COUNT, *argv), preexec_fn=hard_nofile_16)
    assert bare.stdout.endswith(" files opened (Too many open files)\n"), bare
    assert (under.returncode, under.stdout) == (bare.returncode, bare.stdout), under.stderr
    assert validate(process_report(workdir, "count"), "hwpcreport-0.3.dtd").get("mode") == "count"


def test_the_program_sees_the_descriptors_bare_sees_and_no_counter(targets, workdir):
    """/proc/self/fd at main, every descriptor (the soft limit is the hard
    one): what bare lists, no perf_event among them; the collector holds
    the counter."""
    argv = [targets["program_view"], "fds"]
    bare = subprocess.run(argv, capture_output=True, text=True, timeout=120, preexec_fn=hard_nofile_16)
    under = run_to_end(psrun("-q", *COUNT, *argv), preexec_fn=hard_nofile_16)
    assert (under.returncode, under.stdout) == (bare.returncode, bare.stdout), under.stderr
    assert "anon_inode:" not in under.stdout  # program_view cuts "[perf_event]" off anonymous inodes
    assert reports(workdir)


def test_counts_after_closefrom_match_the_cpu_time(targets, workdir):
    """closefrom(3) then 1 s of CPU time: the program closed every
    descriptor it could, and the task clock the collector read is the CPU
    time the kernel charged to the program (wait4)."""
    before = uncharged_seconds()
    ended = run_to_end(psrun("-q", *COUNT, targets["program_view"], "burn"), preexec_fn=hard_nofile_16)
    assert ended.returncode == 0, ended.stderr
    report = process_report(workdir, "count")
    check_numbers(report, "count", ended, uncharged_seconds() - before)
    assert "counts lost" not in annotation(validate(report, "hwpcreport-0.3.dtd"))


def killed_holding_no_counter(argv: list[str], seconds: float) -> tuple[subprocess.Popen, tuple]:
    """argv (psrun and a program that prints "running PID") under ulimit -n
    16, killed by SIGKILL once it has used `seconds` of CPU time, after
    checking that the program held no perf_event descriptor then: the
    process and wait4's (returncode, cpu, user, wall)."""
    proc, started = start_spinning(argv, seconds, preexec_fn=hard_nofile_16)
    held = [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{proc.pid}/fd")]
    os.kill(proc.pid, signal.SIGKILL)
    ended = wait_ended(proc, started)
    proc.stdout.close()
    proc.stderr.close()
    assert "anon_inode:[perf_event]" not in held, held
    return proc, ended


def test_counts_of_a_killed_program_are_read_by_the_collector(targets, workdir):
    """SIGKILL after 1 s of CPU time: the counts up to the kill, read
    through the collector's descriptors, with the program holding none."""
    before = uncharged_seconds()
    proc, (code, cpu, user, wall) = killed_holding_no_counter(psrun("-q", *COUNT, targets["hard_endings"], "spin"),
                                                              1.0)
    assert code == -signal.SIGKILL
    report = process_report(workdir, "count")
    check_numbers(report, "count", Ended(proc.pid, code, "", "", cpu, user, wall), uncharged_seconds() - before)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert "killed by SIGKILL" in annotation(root), annotation(root)
    assert task_clock(root) >= 0.9 * cpu, (task_clock(root), cpu)


def session_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[3])


def collector_of(pid: int) -> int | None:
    """The collector of process pid: its executable, in another session
    (the collector's own)."""
    try:
        exe, session = os.readlink(f"/proc/{pid}/exe"), session_of(pid)
    except OSError:
        return None
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == pid:
            continue
        try:
            if os.readlink(f"/proc/{entry}/exe") == exe and session_of(int(entry)) != session:
                return int(entry)
        except OSError:
            continue
    return None


def test_counters_lost_with_the_collector_are_reported(targets, workdir):
    """The collector killed while the program runs: the counters went with
    it; the program still ends as bare and writes its report itself, which
    says why it has no counts."""
    proc = subprocess.Popen(psrun("-q", *COUNT, targets["program_view"], "burn"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    collector = wait_for("the collector", lambda: collector_of(proc.pid))
    os.kill(collector, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert (proc.returncode, out) == (0, ""), err
    root = validate(process_report(workdir, "count"), "hwpcreport-0.3.dtd")
    assert "counts lost: the collector process holding the counters ended before the program" in annotation(root)
    assert not list(root.iter("hwpcevent"))


@pytest.mark.parametrize("mode", sorted(SAMPLING))
def test_sampling_with_no_room_above_the_limit_takes_no_descriptor(targets, workdir, mode):
    """ulimit -n 16 (hard too) under CPU-time sampling, with and without
    call paths: the program opens as many files and sees the descriptors
    bare does; its profile covers its CPU time, and says how it was taken."""
    view = targets["program_view"]
    for what in ("nofile", "fds"):
        bare = subprocess.run([view, what], capture_output=True, text=True, timeout=120, preexec_fn=hard_nofile_16)
        under = run_to_end(psrun("-q", *SAMPLING[mode], view, what), preexec_fn=hard_nofile_16)
        assert (under.returncode, under.stdout) == (bare.returncode, bare.stdout), (what, under.stderr)
        for report in reports(workdir):
            report.unlink()
    ended = run_to_end(psrun("-q", *SAMPLING[mode], "--period", "10000", view, "burn"), preexec_fn=hard_nofile_16)
    assert ended.returncode == 0, ended.stderr
    root = validate(process_report(workdir, mode), "hwpcreport-0.3.dtd")
    samples = int(root.findtext("hwpcprofiledata/totalsamples"))
    # 1 s of CPU time at 100 Hz, timers limited to the kernel's tick
    assert 0.8 * ended.cpu <= samples / 100 <= 1.1 * ended.cpu + 0.05, (samples, ended.cpu)
    assert "no room above the descriptor limit: POSIX CPU-time timers used" in etree.tostring(root, encoding=str)
    if mode == "callpath":
        [companion] = workdir.glob("*.callpaths.xml")
        assert companion_root(companion).find("sampling").get("unwinder") == "libgcc"


def thread_reports(directory: Path) -> list[Path]:
    return [r for r in reports(directory) if re.search(r"\.t\d+\.", r.name)]


def test_per_thread_counts_with_no_room_above_the_limit_take_no_descriptor(targets, workdir):
    """psrun -p under ulimit -n 16 (hard too): the program opens as many
    files and sees the descriptors bare does (before, the threads' counters
    and the total took two of them); the total and the main thread's report
    are written, and say how the counters were held."""
    view = targets["program_view"]
    for what in ("nofile", "fds"):
        bare = subprocess.run([view, what], capture_output=True, text=True, timeout=120, preexec_fn=hard_nofile_16)
        under = run_to_end(psrun("-q", *PER_THREAD, view, what), preexec_fn=hard_nofile_16)
        assert (under.returncode, under.stdout) == (bare.returncode, bare.stdout), (what, under.stderr)
        assert "anon_inode:" not in under.stdout
        total = validate(process_report(workdir, "per-thread"), "hwpcreport-0.3.dtd")
        assert "process total" in annotation(total)
        [main] = thread_reports(workdir)
        root = validate(main, "hwpcreport-0.3.dtd")
        assert root.findtext("thread") == "1" and HELD in annotation(root), annotation(root)
        # the main thread's counters start a moment before the total's (a
        # program of a millisecond shows it)
        assert 0 < task_clock(root) <= task_clock(total) + 0.001, (task_clock(root), task_clock(total))
        for report in reports(workdir):
            report.unlink()


@pytest.mark.parametrize("mode", ["join", "exit", "pthread_exit"])
def test_per_thread_reports_add_up_with_no_room_above_the_limit(targets, workdir, mode):
    """Threads started under ulimit -n 16: the collector opens each one's
    counters at its start and reads them at its end, and stops the running
    ones with the total in one pass: the reports add up as with room."""
    before = uncharged_seconds()
    ended = run_to_end(psrun("-q", *PER_THREAD, targets["threads"], "3", mode), preexec_fn=hard_nofile_16)
    uncharged = uncharged_seconds() - before
    assert ended.returncode == 0, ended.stderr
    for root in assert_per_thread_reports_add_up(workdir, uncharged):
        assert HELD in annotation(root), annotation(root)


def test_sigkill_under_per_thread_with_no_room_above_the_limit_keeps_every_threads_report(targets, workdir):
    """psrun -p under ulimit -n 16, SIGKILL: the collector holds the counters
    of the threads still running too, so they keep their reports (marked
    killed), beside the three that ended; together they are the total."""
    _, (code, cpu, _, _) = killed_holding_no_counter(psrun("-q", *PER_THREAD, targets["spin_threads"], "1", "3"), 0.5)
    assert code == -signal.SIGKILL
    total = validate(process_report(workdir, "per-thread"), "hwpcreport-0.3.dtd")
    assert "killed by SIGKILL" in annotation(total) and "process total" in annotation(total), annotation(total)
    assert "went with the process" not in annotation(total), annotation(total)
    threads = wait_for("five thread reports", lambda: (found := thread_reports(workdir)) and len(found) == 5 and found)
    time.sleep(0.5)  # nothing more comes
    assert len(thread_reports(workdir)) == 5
    # the main thread is 1, the three ended workers 2-4, the spinner 5
    number = {int(re.search(r"\.t(\d+)\.", r.name).group(1)): validate(r, "hwpcreport-0.3.dtd") for r in threads}
    assert sorted(number) == [1, 2, 3, 4, 5]
    for n, root in number.items():
        assert HELD in annotation(root), annotation(root)
        if n in (2, 3, 4):  # each worked 0.1 s of its own CPU time before it ended
            assert 0.095 <= task_clock(root) <= cpu, (n, task_clock(root))
            assert "killed" not in annotation(root), annotation(root)
        else:
            assert "killed by SIGKILL" in annotation(root), annotation(root)
    assert task_clock(number[5]) > 0
    assert sum(task_clock(root) for root in number.values()) == pytest.approx(task_clock(total), rel=0.05)
    assert task_clock(total) >= 0.9 * cpu, (task_clock(total), cpu)


def test_threads_beyond_the_collectors_descriptors_are_in_the_total(targets, workdir):
    """Under ulimit -n 16 the collector holds each thread's counters within
    its own free descriptors (four kept for itself): twelve workers at once
    are more than that.  Every thread still gets its report; the ones beyond
    say so (their counts are in the total) and nothing about counters held."""
    ended = run_to_end(psrun("-q", *PER_THREAD, targets["threads"], "12", "join"), preexec_fn=hard_nofile_16)
    assert ended.returncode == 0, ended.stderr
    total = task_clock(validate(process_report(workdir, "per-thread"), "hwpcreport-0.3.dtd"))
    roots = [validate(r, "hwpcreport-0.3.dtd") for r in thread_reports(workdir)]
    assert len(roots) == 13  # main and twelve workers
    held = [root for root in roots if HELD in annotation(root)]
    beyond = [root for root in roots if "too many threads at once" in annotation(root)]
    assert len(held) + len(beyond) == 13 and held and beyond, [annotation(root) for root in roots]
    assert not [root for root in beyond if HELD in annotation(root)]
    assert 0 < sum(task_clock(root) for root in held) < total
