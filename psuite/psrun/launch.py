"""Starting the measured program: environment, preload, fork/exec, wait4,
and passing its exit status or signal on unchanged."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Mapping, Sequence

from psuite.libperfsuite.native import library_path

# Signals psrun passes on to the program instead of acting on them itself.
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
# Signals a terminal sends to the whole process group: the program gets
# them directly, psrun only outlives it to report.
IGNORED_WHILE_WAITING = (signal.SIGINT, signal.SIGQUIT)


class Outcome:
    """How the program ended: its pid, wait status and resource usage.  (A
    plain class: importing dataclasses costs psrun start-up time on every
    run.)"""

    def __init__(self, pid: int, status: int, rusage: object = None) -> None:
        self.pid = pid
        self.status = status
        self.rusage = rusage

    @property
    def exit_status(self) -> int:
        """What a shell would report: the code, or 128+N for signal N."""
        if os.WIFSIGNALED(self.status):
            return 128 + os.WTERMSIG(self.status)
        return os.waitstatus_to_exitcode(self.status)

    @property
    def signal(self) -> int | None:
        return os.WTERMSIG(self.status) if os.WIFSIGNALED(self.status) else None


def preload_environment(base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    env = dict(base)
    env.update(extra)
    lib = library_path()
    current = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = f"{lib}:{current}" if current else lib
    env["PSUITE_PRELOAD"] = "1"
    return env


def run(argv: Sequence[str], env: Mapping[str, str], tick=None, interval: float = 1.0) -> Outcome:
    """fork/exec argv with env; wait for it; stdin/stdout/stderr untouched.
    With tick, tick(pid) is called every interval seconds while it runs."""
    saved = {s: signal.getsignal(s) for s in FORWARDED + IGNORED_WHILE_WAITING}
    child = {"pid": 0}

    def forward(signum: int, _frame: object) -> None:
        if child["pid"]:
            os.kill(child["pid"], signum)

    for s in FORWARDED:
        signal.signal(s, forward)
    for s in IGNORED_WHILE_WAITING:
        signal.signal(s, signal.SIG_IGN)
    try:
        pid = _spawn(argv, env)
        child["pid"] = pid
        if tick is not None:
            _watch(pid, tick, interval)
        while True:
            try:
                _, status, usage = os.wait4(pid, 0)
            except ChildProcessError:
                status, usage = 0, None
            except InterruptedError:
                continue
            if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                return Outcome(pid, status, usage)
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


def _spawn(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Start argv as a shell would: a file without #! that the kernel will
    not execute (ENOEXEC) is a shell script, run by /bin/sh as execvp does.
    posix_spawn resets the signals psrun ignores to their defaults in the
    child, so the program sees the dispositions it would have had."""
    from psuite.errors import UsageError

    sigdef = FORWARDED + IGNORED_WHILE_WAITING
    try:
        try:
            return os.posix_spawnp(argv[0], list(argv), dict(env), setsigdef=sigdef)
        except OSError as exc:
            if exc.errno != errno.ENOEXEC:
                raise
            return os.posix_spawn("/bin/sh", ["/bin/sh", *argv], dict(env), setsigdef=sigdef)
    except OSError as exc:
        raise UsageError(f"cannot run {argv[0]}: {exc.strerror}") from None


def _watch(pid: int, tick, interval: float) -> None:
    """tick(pid) every interval until the child ends (a pidfd becomes
    readable then, so the end is seen at once)."""
    import select

    fd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        tick(pid)
        while not poller.poll(interval * 1000):
            tick(pid)
    finally:
        os.close(fd)


def host_name() -> str:
    """The host part of report names, as the library writes it."""
    return os.uname().nodename.split(".")[0].replace("/", "_")


def report_names(directory: str) -> set[str]:
    """The report-like files in directory now (compared after the run)."""
    host = host_name()
    try:
        return {n for n in os.listdir(directory) if n.endswith(".xml") and f".{host}" in n}
    except OSError:
        return set()


def new_reports(directory: str, before: set[str]) -> list[str]:
    """Reports that appeared during the run: the program's, its threads'
    and, with -f, its children's."""
    return [os.path.join(directory, n) for n in sorted(report_names(directory) - before)]
