"""Under an RLIMIT_AS, the memory psuite shares with its collector starts
small and grows with what is recorded (System V segments the collector
attaches too): the program keeps its room, and a program killed after its
records outgrew the first reservation still gets every thread's samples."""

from __future__ import annotations

import os
import resource
import signal
import subprocess

import pytest

from tests.conftest import validate
from tests.psrun.test_callpath_runtime import companion_root, totals
from tests.psrun.test_survival import (
    MODES,
    annotation,
    process_report,
    psrun,
    sampled_seconds,
    start_spinning,
    wait_ended,
)

# Records well beyond the first reservation: each thread has its own sample
# table and (--callpath) call-path tree.  Fewer threads with call paths:
# libunwind's thread-local data, allocated at each thread's first unwinding,
# gives every thread a glibc malloc arena (64 MiB of address space) that a
# bare thread which never allocates does not have.  One thread with call
# paths: its tree needs the arena's first segment right after its stack was
# mapped, and the kernel puts that segment where the collector's own stack
# is (the program unmapped its copy): the collector must be offered another
# address.
RUNS = [("itimer-prof", 12), ("callpath", 4), ("callpath", 1)]


def address_space_limit():
    limit = 1 << 30  # ulimit -v 1048576
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize(("mode", "threads"), RUNS, ids=[f"{m}-{n}" for m, n in RUNS])
def test_killed_program_under_rlimit_as_keeps_every_threads_samples(targets, workdir, mode, threads):
    proc, started = start_spinning(psrun("-q", *MODES[mode], targets["spin_threads"], str(threads)), 1.0,
                                   preexec_fn=address_space_limit)
    os.kill(proc.pid, signal.SIGKILL)
    code, cpu, _, _ = wait_ended(proc, started)
    proc.stdout.close()
    proc.stderr.close()
    assert code == -signal.SIGKILL
    root = validate(process_report(workdir, mode), "hwpcreport-0.3.dtd")
    note = annotation(root)
    assert "killed by SIGKILL" in note, note
    assert "beyond the shared memory" not in note, note
    if mode != "callpath":
        # ITIMER_PROF: the process's CPU time, its expirations while a signal was pending counted as overruns
        assert sampled_seconds(root) >= 0.9 * cpu, (sampled_seconds(root), cpu, note)
        return
    # --callpath samples each thread's perf_event task clock, whose kernel timer skips the periods it
    # fired late for (hrtimer_forward_now: one in eight on a loaded VM here), so its samples are compared
    # with each other: the main thread and every spinning thread spin alike, and each keeps its share
    companion = companion_root(next(workdir.glob("*.callpaths.xml")))
    flat_samples, kept, lost = totals(root, companion)
    assert (kept, lost) == (flat_samples, 0), (flat_samples, kept, lost)
    per_thread = [int(t.get("samples")) for t in companion.findall("thread")]
    assert len(per_thread) == threads + 1, per_thread
    assert min(per_thread) >= 0.5 * sum(per_thread) / len(per_thread) > 0, (per_thread, note)


def reserved_regions(argv: list[str]) -> int:
    """The large PROT_NONE mappings of a running spin_threads: the reserved
    part of every glibc malloc arena (thread stacks' guard pages are a page
    or two)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == f"running {proc.pid}\n"
        with open(f"/proc/{proc.pid}/maps") as maps:
            fields = [line.split() for line in maps]
        spans = [(int(f[0].split("-")[1], 16) - int(f[0].split("-")[0], 16), f[1]) for f in fields]
        return sum(1 for size, perms in spans if perms == "---p" and size >= 1 << 20)
    finally:
        proc.kill()
        proc.communicate(timeout=60)


@pytest.mark.parametrize("mode", ["per-thread", "itimer-prof", "itimer-real"])
def test_threads_that_never_allocate_get_no_malloc_arena(targets, workdir, mode):
    """psuite allocates nothing in the threads it measures (a thread's first
    malloc or free gets it a 64 MiB arena): the program's threads, which
    never allocate, have as many reserved mappings as bare."""
    argv = [targets["spin_threads"], "4"]
    assert reserved_regions(psrun("-q", *MODES[mode], *argv)) == reserved_regions(argv)


def address_space_kb(argv: list[str]) -> int:
    """VmSize of a running spin_threads started under RLIMIT_AS."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=address_space_limit)
    try:
        assert proc.stdout.readline() == f"running {proc.pid}\n"
        with open(f"/proc/{proc.pid}/status") as status:
            [size] = [line.split()[1] for line in status if line.startswith("VmSize:")]
        return int(size)
    finally:
        proc.kill()
        proc.communicate(timeout=60)


def test_per_thread_counts_take_room_as_threads_come(targets, workdir):
    """Under an RLIMIT_AS, psrun -p holds its per-thread count records in
    chunks mapped as threads start: a program with a few threads has about
    the room it has under plain counting (not a table for 16,384 threads)."""
    argv = [targets["spin_threads"], "2"]
    counting = address_space_kb(psrun("-q", "-e", "task-clock", *argv))
    per_thread = address_space_kb(psrun("-q", "-p", "-e", "task-clock", *argv))
    assert per_thread - counting <= 2048, (per_thread, counting)
