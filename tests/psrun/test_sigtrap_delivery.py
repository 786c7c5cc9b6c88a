"""perf_event samples delivered by a synchronous SIGTRAP (attr.sigtrap):
the program's own SIGTRAP - raise(), a breakpoint instruction - still
reaches its handler as the kernel would run it (si_code, sa_mask,
SA_ONSTACK) and never one of psuite's samples, even one that waited while
the program blocked SIGTRAP; its default action still kills with the report
written first; a sample pending across an exec does not kill the new image;
and the fall-backs to SIGPROF (PSUITE_SAMPLE_SIGNAL, a traced process) say
so.  Each run is compared with the bare one."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import psrun_command, run_tool, validate
from tests.psrun.test_psrun import reports

PROFILE = ["--profile", "ITIMER_PROF", "--period", "1000"]

TRAPS_C = r"""
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long calls, perf_traps, bad_mask, off_stack, codes[8];
static char *alt;
static size_t alt_size = 1 << 16;

static void work(long n)
{
    volatile double x = 0;
    for (long i = 0; i < n; i++)
        x += i * 0.5;
}

static void on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char here;
    calls++;
    if (si->si_code == 6) /* TRAP_PERF: never the program's here */
        perf_traps++;
    if (si->si_code == -6) /* SI_TKILL: raise() */
        codes[0]++;
    else if (si->si_code == 0x80) /* SI_KERNEL: int3 */
        codes[1]++;
    else
        codes[2]++;
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    if (sig != SIGTRAP || !sigismember(&now, SIGUSR1) || !sigismember(&now, SIGTRAP))
        bad_mask++;
    if (&here < alt || &here >= alt + alt_size)
        off_stack++;
}

static void breakpoint(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("int3");
#else
    raise(SIGTRAP);
#endif
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "handler";
    long n = argc > 2 ? atol(argv[2]) : 30000000L;
    if (!strcmp(mode, "handler")) {
        alt = malloc(alt_size);
        stack_t ss = {.ss_sp = alt, .ss_size = alt_size};
        sigaltstack(&ss, NULL);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_trap;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGUSR1);
        sigaction(SIGTRAP, &sa, NULL);
        sigset_t trap;
        sigemptyset(&trap);
        sigaddset(&trap, SIGTRAP);
        for (int i = 0; i < 10; i++) {
            work(n);
            raise(SIGTRAP);
            breakpoint();
            /* samples wait while SIGTRAP is blocked, and come when it is not */
            sigprocmask(SIG_BLOCK, &trap, NULL);
            work(n);
            sigprocmask(SIG_UNBLOCK, &trap, NULL);
        }
        struct sigaction now;
        sigaction(SIGTRAP, NULL, &now);
        printf("calls %ld raise %ld int3 %ld other %ld perf %ld mask %ld offstack %ld same %d\n", calls, codes[0],
               codes[1], codes[2], perf_traps, bad_mask, off_stack, now.sa_sigaction == on_trap);
        return 0;
    }
    if (!strcmp(mode, "ignored")) { /* raise() is ignored; a breakpoint still kills */
        signal(SIGTRAP, SIG_IGN);
        work(n);
        raise(SIGTRAP);
        printf("raise ignored\n");
        fflush(stdout);
        breakpoint();
        printf("survived\n");
        return 0;
    }
    if (!strcmp(mode, "default")) {
        work(n);
        breakpoint();
        return 0;
    }
    if (!strcmp(mode, "exec") || !strcmp(mode, "exec-own")) {
        /* SIGTRAP blocked while sampled, then exec'd into an image without
         * psuite (no environment) that unblocks it */
        sigset_t trap;
        sigemptyset(&trap);
        sigaddset(&trap, SIGTRAP);
        sigprocmask(SIG_BLOCK, &trap, NULL);
        work(n);
        if (!strcmp(mode, "exec-own"))
            raise(SIGTRAP); /* the program's own: pending in the new image */
        char *args[] = {argv[0], "after-exec", NULL}, *env[] = {NULL};
        execve("/proc/self/exe", args, env);
        return 1;
    }
    if (!strcmp(mode, "after-exec")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_trap;
        sa.sa_flags = SA_SIGINFO;
        sigaddset(&sa.sa_mask, SIGUSR1);
        sigaction(SIGTRAP, &sa, NULL);
        sigset_t trap;
        sigemptyset(&trap);
        sigaddset(&trap, SIGTRAP);
        sigprocmask(SIG_UNBLOCK, &trap, NULL);
        printf("after exec: calls %ld raise %ld perf %ld\n", calls, codes[0], perf_traps);
        return 0;
    }
    return 2;
}
"""


@pytest.fixture(scope="module")
def traps(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("sigtrap")
    src, exe = out / "traps.c", out / "traps"
    src.write_text(TRAPS_C)
    subprocess.run(["cc", "-O1", "-o", str(exe), str(src)], check=True)
    return str(exe)


def annotation(workdir: Path) -> str:
    [report] = reports(workdir)
    return validate(report, "hwpcreport-0.3.dtd").findtext("annotation") or ""


def samples(workdir: Path) -> int:
    [report] = reports(workdir)
    return int(validate(report, "hwpcreport-0.3.dtd").findtext(".//totalsamples") or 0)


def test_program_sigtrap_reaches_its_handler_and_samples_do_not(traps, workdir):
    """raise() and a breakpoint, 10 of each, reach the program's handler on
    its alternate stack with its sa_mask (and SIGTRAP) blocked, as bare;
    none of the ~300 samples does, not even those that waited while it
    blocked SIGTRAP."""
    bare = subprocess.run([traps, "handler"], capture_output=True, text=True, timeout=60)
    int3 = 10 if platform.machine() in ("x86_64", "i686", "i386") else 0  # else raise() stands in for it
    assert bare.stdout == f"calls 20 raise {20 - int3} int3 {int3} other 0 perf 0 mask 0 offstack 0 same 1\n"
    p = run_tool("psrun", *PROFILE, traps, "handler")
    assert (p.returncode, p.stdout) == (0, bare.stdout), p.stderr
    assert "own SIGTRAP handler" in p.stderr
    note = annotation(workdir)
    assert "samples delivered by SIGTRAP (perf_event sigtrap)" in note, note
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    cpu = float(root.findtext(".//usertime")) + float(root.findtext(".//systemtime"))
    # the samples are psuite's: about one per ms of CPU time it was not blocking them
    assert samples(workdir) >= 0.3 * cpu * 1000, (samples(workdir), cpu)


def test_breakpoint_with_default_or_ignored_action_kills_with_the_report(traps, workdir):
    """A breakpoint with SIGTRAP's default action dumps core, bare and under
    psrun, whose report is written first; ignored, raise() is ignored and a
    breakpoint still kills (the kernel forces it), as bare."""
    for mode in ("default", "ignored"):
        bare = subprocess.run([traps, mode], capture_output=True, text=True, timeout=60)
        p = run_tool("psrun", "-q", *PROFILE, traps, mode)
        if platform.machine() not in ("x86_64", "i686", "i386") and mode == "ignored":
            assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout) == (0, "raise ignored\nsurvived\n")
            continue
        assert bare.returncode == p.returncode == -signal.SIGTRAP, (mode, p.stderr)
        assert p.stdout == bare.stdout == ("raise ignored\n" if mode == "ignored" else "")
        note = annotation(workdir)
        assert "report written on SIGTRAP" in note and "samples delivered by SIGTRAP" in note, note
        for r in reports(workdir):
            r.unlink()


@pytest.mark.parametrize("mode", ["exec", "exec-own"])
def test_sample_pending_at_exec_does_not_reach_the_new_image(traps, workdir, mode):
    """SIGTRAP blocked while sampled (one sample pending), then an exec into
    an image without psuite that unblocks it: it runs as bare, no SIGTRAP
    (bare has none to die of); the program's own pending SIGTRAP (exec-own)
    stays pending and reaches the new image's handler, as bare."""
    bare = subprocess.run([traps, mode, "60000000"], capture_output=True, text=True, timeout=60)
    own = 1 if mode == "exec-own" else 0
    assert bare.stdout == f"after exec: calls {own} raise {own} perf 0\n"
    p = run_tool("psrun", "-q", *PROFILE, traps, mode, "60000000")
    assert (p.returncode, p.stdout) == (0, bare.stdout), p.stderr
    assert "written before exec" in annotation(workdir)


def test_sigprof_delivery_on_request_and_when_traced(traps, workdir):
    """PSUITE_SAMPLE_SIGNAL=sigprof, and a process traced at start (strace:
    a debugger would stop at every SIGTRAP), sample through SIGPROF as
    before; the program's SIGTRAP is unaffected; a bad value is one line."""
    bare = subprocess.run([traps, "handler"], capture_output=True, text=True, timeout=60)
    env = dict(os.environ, PSUITE_SAMPLE_SIGNAL="sigprof")
    p = run_tool("psrun", "-q", *PROFILE, traps, "handler", env=env)
    assert (p.returncode, p.stdout) == (0, bare.stdout), p.stderr
    note = annotation(workdir)
    assert "samples delivered by SIGPROF (F_SETSIG), as PSUITE_SAMPLE_SIGNAL asks" in note, note
    assert samples(workdir) > 100
    for r in reports(workdir):
        r.unlink()

    env = dict(os.environ, PSUITE_SAMPLE_SIGNAL="sigusr1")
    p = run_tool("psrun", "-q", *PROFILE, traps, "handler", env=env)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr  # refused before the program runs
    assert p.stderr == ("psrun: PSUITE_SAMPLE_SIGNAL=sigusr1 is not valid: use sigtrap or sigprof, or unset it for "
                        "the default\n")
    assert reports(workdir) == []

    t = subprocess.run(
        [
            "strace",
            "-f",
            "-e",
            "trace=none",
            "-e",
            "signal=none",
            "-o",
            os.devnull,
            psrun_command(),
            *PROFILE,
            traps,
            "handler",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (t.returncode, t.stdout) == (0, bare.stdout), t.stderr
    assert "the process is traced: samples are delivered by SIGPROF" in t.stderr
    note = annotation(workdir)
    assert "samples delivered by SIGPROF (F_SETSIG): the process was traced" in note, note
