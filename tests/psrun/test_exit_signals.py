"""The exits psrun once missed: every signal whose default action ends the
process (SIGPROF, SIGIO, SIGPWR, SIGSTKFLT, the real-time ones), the
program's own SIGPROF while psuite samples with it, quick_exit(),
execveat(), execl() with thousands of arguments; and the program's SIGPROF
handler run by psuite as the kernel would run it.  Each is compared with
the bare run: same status or signal, same output."""

from __future__ import annotations

import re
import signal
import subprocess

import pytest

from tests.conftest import psrun_command, run_tool, validate
from tests.psrun.test_psrun import reports

MODES = {"count": ["-e", "task-clock"], "profile": ["--profile", "ITIMER_PROF", "--period", "1000"]}


def signal_name(sig: int) -> str:
    """The name psuite gives a signal in <annotation>: as kill -l does."""
    lo, hi = int(signal.SIGRTMIN), int(signal.SIGRTMAX)
    if lo <= sig <= hi:
        n = sig - lo
        if n > (hi - lo) // 2:
            return "SIGRTMAX" + (f"-{hi - sig}" if hi != sig else "")
        return "SIGRTMIN" + (f"+{n}" if n else "")
    return signal.Signals(sig).name


SIGNALS = [
    int(signal.SIGPROF),
    int(signal.SIGIO),
    int(signal.SIGPOLL),
    int(signal.SIGPWR),
    int(signal.SIGSTKFLT),
    int(signal.SIGRTMIN),
    int(signal.SIGRTMIN) + 1,
    int(signal.SIGRTMIN) + 15,
    int(signal.SIGRTMIN) + 16,
    int(signal.SIGRTMAX) - 1,
    int(signal.SIGRTMAX),
]


def bare_and_psrun(targets, mode, target, *args):
    bare = subprocess.run([targets[target], *args], capture_output=True, text=True, timeout=60)
    p = run_tool("psrun", "-q", *MODES[mode], targets[target], *args)
    assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, bare.stderr), p.stderr
    return bare


def the_report(workdir, mode):
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert root.get("mode") == mode
    return root.findtext("annotation") or ""


def ended_by(annotation: str) -> str | None:
    """The signal a report says the process died of: written by the process
    itself (where it must) or by its collector (which sees how it ended)."""
    m = re.search(r"(?:report written on|killed by) (SIG[A-Z0-9+-]+)", annotation)
    return m and m.group(1)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("sig", SIGNALS, ids=[f"{signal_name(s)}({s})" for s in SIGNALS])
def test_default_fatal_signal_writes_its_report(targets, workdir, mode, sig):
    # in profile mode SIGPROF is psuite's: the program's own raise() is
    # passed on with its default action, the report written first
    bare = bare_and_psrun(targets, mode, "exit_paths", "raise", str(sig))
    assert bare.returncode == -sig
    assert ended_by(the_report(workdir, mode)) == signal_name(sig)


@pytest.mark.parametrize("mode", list(MODES))
def test_own_itimer_prof_at_its_default_writes_the_report(targets, workdir, mode):
    bare = bare_and_psrun(targets, mode, "exit_signals", "itimer_prof")
    assert bare.returncode == -signal.SIGPROF
    assert ended_by(the_report(workdir, mode)) == "SIGPROF"


@pytest.mark.parametrize("mode", list(MODES))
def test_quick_exit_writes_its_report_and_runs_the_handlers(targets, workdir, mode):
    bare = bare_and_psrun(targets, mode, "exit_signals", "quick_exit", "3")
    assert bare.returncode == 3
    assert "at_quick_exit handler ran" in bare.stdout and "atexit" not in bare.stdout
    assert "quick_exit()" in the_report(workdir, mode)


@pytest.mark.parametrize("mode", list(MODES))
def test_execveat_writes_the_report_first(targets, workdir, mode):
    bare = bare_and_psrun(targets, mode, "exit_signals", "execveat")
    assert bare.returncode == 4
    assert "written before exec" in the_report(workdir, mode)


def test_failed_execveat_goes_on_counting(targets, workdir):
    bare = bare_and_psrun(targets, "count", "exit_signals", "execveat_fail")
    assert bare.returncode == 5 and "No such file or directory" in bare.stdout  # the exec's errno
    annotation = the_report(workdir, "count")  # the one before the failed exec was taken back
    assert "before exec" not in annotation


@pytest.mark.parametrize("how", ["execl_many", "execlp_many", "execle_many"])
def test_execl_passes_every_argument(targets, workdir, how):
    bare = bare_and_psrun(targets, "count", "exit_signals", how)
    assert bare.returncode == 0 and "5001 arguments, the last last" in bare.stdout
    if how == "execle_many":
        assert "kept" in bare.stdout
    assert "written before exec" in the_report(workdir, "count")


# m: sa_mask SIGUSR1, n: SA_NODEFER, r: SA_RESETHAND, o: SA_ONSTACK (with an
# alternate stack), i: SA_SIGINFO
HANDLER_FLAGS = ["-", "m", "n", "r", "o", "i", "mn", "ri", "mo", "mnoi", "mor"]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("flags", HANDLER_FLAGS)
def test_program_sigprof_handler_runs_as_without_psrun(targets, workdir, mode, flags):
    # what the handler sees (its mask, its stack), the action sigaction()
    # reports before and after, and how the program ends are the bare run's
    bare = bare_and_psrun(targets, mode, "exit_signals", "prof_handler", flags)
    assert "handler 1:" in bare.stdout
    if "r" in flags:
        assert bare.returncode == -signal.SIGPROF and "action: default" in bare.stdout
        if mode == "profile":  # psuite's SIGPROF: passed on with its default action, the report first
            assert ended_by(the_report(workdir, mode)) == "SIGPROF"
    else:
        assert bare.returncode == 0 and "survived 2 deliveries" in bare.stdout
        assert ended_by(the_report(workdir, mode)) is None


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("how", ["sigaction", "signal"])
def test_own_fault_handler_blocks_for_real(targets, workdir, mode, how):
    # psuite stops hiding a blocked SIGSEGV once the handler is the program's
    bare = bare_and_psrun(targets, mode, "exit_signals", "own_segv_blocked", how)
    assert bare.returncode == 0 and "SIGSEGV pending 1" in bare.stdout
    the_report(workdir, mode)


RESTORED = [int(signal.SIGILL), int(signal.SIGUSR1), int(signal.SIGRTMIN) + 2]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("how", ["sigaction", "signal", "sysv_signal", "bsd_signal"])
@pytest.mark.parametrize("sig", RESTORED, ids=[signal_name(s) for s in RESTORED])
def test_default_put_back_still_writes_the_report(targets, workdir, mode, how, sig):
    # a handler of its own for a while (a probe), then the action it was
    # told of put back: the default, with psuite's report first
    bare = bare_and_psrun(targets, mode, "exit_signals", "restore_default", how, str(sig))
    assert bare.returncode == -sig
    assert ended_by(the_report(workdir, mode)) == signal_name(sig)


def test_mask_calls_make_no_extra_system_calls(targets, workdir):
    # rt_sigaction about once per signal at start, not once per fault signal
    # on each of the loop's 2,000 pthread_sigmask calls
    trace = workdir / "trace"
    p = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-e",
            "trace=rt_sigaction",
            "-o",
            str(trace),
            psrun_command(),
            "-q",
            *MODES["count"],
            targets["sigmask_loop"],
            "1000",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    calls = trace.read_text().count("rt_sigaction(")
    assert 0 < calls < 400, calls
