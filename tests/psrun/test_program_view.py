"""What the program sees of its own process under psrun, compared with the
bare run in every mode: psuite's descriptors live above the soft
RLIMIT_NOFILE (never a number the program gets or chooses, never closed
when the program reused the number), a program that closes them is told its
samples were lost, the program can open as many files as bare, no
alternate signal stack is installed, and counting maps nothing after main.
The programs are tests/targets/program_view.c and a bash idiom."""

from __future__ import annotations

import re
import resource
import signal
import subprocess

import pytest

from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports

MODES = {
    "counting": ("-e", "task-clock"),
    "ITIMER_PROF": ("--profile", "ITIMER_PROF"),
    "ITIMER_REAL": ("--profile", "ITIMER_REAL"),
    "callpath": ("--callpath",),
}
SAMPLING = [m for m in MODES if m != "counting"]


def _hard_nofile() -> int:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return (1 << 20) if hard == resource.RLIM_INFINITY else hard


def soft_nofile(n: int):
    """A preexec_fn: the soft descriptor limit n, the hard one kept (room above)."""
    hard = _hard_nofile()
    assert hard > n, f"the tests need a hard descriptor limit above {n} (ulimit -Hn is {hard})"
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))


LOW = 256  # a soft limit below the hard one, as a login session has


def run_both(cmd: list[str], mode: str, **kw):
    bare = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
    under = run_tool("psrun", "-q", *MODES[mode], *cmd, **kw)
    return bare, under


@pytest.mark.parametrize("mode", SAMPLING)
def test_prefork_server_workers_keep_their_log(targets, workdir, mode):
    """closefrom(3), the log opened as fd 3, three workers forked that write
    to it: every worker writes as bare (the child forgets psuite's sources
    without closing the program's fd 3)."""
    exe = targets["program_view"]
    bare = subprocess.run([exe, "prefork"], capture_output=True, text=True, preexec_fn=soft_nofile(LOW))
    bare_log = sorted((workdir / "server.log").read_text().splitlines())
    p = run_tool("psrun", "-q", *MODES[mode], exe, "prefork", preexec_fn=soft_nofile(LOW))
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout) == (0, ""), p.stderr
    assert sorted((workdir / "server.log").read_text().splitlines()) == bare_log == [f"worker {i}" for i in range(3)]
    assert reports(workdir)


@pytest.mark.parametrize("mode", SAMPLING)
def test_bash_exec_fd3_idiom(workdir, mode):
    """exec 3>out.txt; a subshell and an external command write to fd 3:
    both lines land as bare, no "Bad file descriptor"."""
    script = "exec 3>out.txt; ( echo sub >&3 ); /bin/echo ext >&3; cat out.txt"
    bare, p = run_both(["bash", "-c", script], mode, preexec_fn=soft_nofile(LOW))
    assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, bare.stderr)
    assert bare.stdout == "sub\next\n"


@pytest.mark.parametrize("mode", SAMPLING)
def test_thread_end_after_closefrom_keeps_the_programs_fd(targets, workdir, mode):
    """A thread started before closefrom(3) ends after the program opened
    fds 3 and 4 again: its source's end leaves fd 4 the program's."""
    bare, p = run_both([targets["program_view"], "threadend"], mode, preexec_fn=soft_nofile(LOW))
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert bare.stdout == "fds 3 4; fd 4 still the program's file\n"


@pytest.mark.parametrize("mode", SAMPLING)
def test_closed_sampling_descriptor_is_reported(targets, workdir, mode):
    """closefrom(3) then 1 s of CPU: the samples of that second are counted
    lost and the report and psrun's note say why; never a silent empty
    profile."""
    p = run_tool("psrun", *MODES[mode], targets["program_view"], "burn", preexec_fn=soft_nofile(LOW))
    assert p.returncode == 0, p.stderr
    [report] = [r for r in reports(workdir) if not r.name.endswith(".callpaths.xml")]
    root = validate(report, "hwpcreport-0.3.dtd")  # raw profiles are <hwpcreport mode="profile">
    note = root.findtext("annotation") or ""
    assert "closed psuite's sampling descriptor" in note
    lost = int(re.search(r"(\d+) samples lost", note).group(1))
    cpu = float(root.findtext(".//usertime") or 0) + float(root.findtext(".//systemtime") or 0)
    period_s = 0.01
    assert lost >= 0.5 * cpu / period_s > 0, (lost, cpu, note)
    summary = [line for line in p.stderr.splitlines() if line.startswith("psrun: profile:")]
    assert summary and "closed psuite's sampling descriptor" in summary[0], p.stderr


@pytest.mark.parametrize("mode", MODES)
def test_as_many_files_as_bare_and_the_report_kept(targets, workdir, mode):
    """ulimit -Sn 16: the program opens as many files as bare (psuite's
    descriptors are above the soft limit), and, having used them all, still
    gets its report."""
    bare, p = run_both([targets["program_view"], "nofile"], mode, preexec_fn=soft_nofile(16))
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert bare.stdout.endswith(" files opened (Too many open files)\n")
    assert reports(workdir), p.stderr


def caught(out: str) -> set[int]:
    """The signals a SigCgt line says have a handler."""
    mask = int(out.split()[1], 16)
    return {sig for sig in range(1, 65) if mask >> (sig - 1) & 1}


@pytest.mark.parametrize("mode", MODES)
def test_no_fatal_signal_handler_at_main(targets, workdir, mode):
    """The kernel's view of the program's signal actions at main: counting
    installs none, sampling only the signal samples come by (SIGTRAP from
    perf_event, SIGPROF from timers); a fatal signal is the collector's to
    see, so none of the signals that end a process has a handler of
    psuite's."""
    bare, p = run_both([targets["program_view"], "caught"], mode)
    assert p.returncode == bare.returncode == 0, p.stderr
    added = caught(p.stdout) - caught(bare.stdout)
    # ITIMER_REAL's sampler thread: the C library's own handlers for its
    # thread signals (32 and 33: SIGCANCEL, SIGSETXID) come with a program's
    # first thread, which bare has not started
    allowed = {signal.SIGTRAP, signal.SIGPROF, 32, 33} if mode in SAMPLING else set()
    assert added <= allowed, sorted(added)


@pytest.mark.parametrize("mode", MODES)
def test_no_alternate_signal_stack_at_main(targets, workdir, mode):
    bare, p = run_both([targets["program_view"], "altstack"], mode)
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout) == (0, "SS_DISABLE\n"), p.stderr


@pytest.mark.parametrize("mode", MODES)
def test_descriptors_below_the_soft_limit_as_bare(targets, workdir, mode):
    """/proc/self/fd below the soft limit lists what the bare run lists
    (libunwind's pipe included in --callpath: made above the limit)."""
    bare, p = run_both([targets["program_view"], "fds"], mode, preexec_fn=soft_nofile(LOW))
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr


def test_counting_maps_nothing_after_main(targets, workdir):
    """Under ulimit -v, the room the program finds by mapping until ENOMEM
    is the bare room less what psuite mapped before main (its own library
    and configuration reader), within two pages: no alternate signal stack,
    no writer stacks, no thread tables in counting mode."""
    limit = 1 << 30

    def as_limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    bare, p = run_both([targets["program_view"], "asroom"], "counting", preexec_fn=as_limit)
    assert bare.returncode == 0 and p.returncode == 0, p.stderr
    vm_bare, room_bare = map(int, bare.stdout.split())
    vm_psrun, room_psrun = map(int, p.stdout.split())
    mapped_before_main = (vm_psrun - vm_bare) // 4
    assert room_bare - room_psrun <= mapped_before_main + 2, (room_bare, room_psrun, mapped_before_main)
