"""Resource usage that is right on Linux, for this process and for a child.

getrusage/wait4 give CPU times, faults, context switches and the peak
resident set, but no peak virtual size; and a child's /proc entry loses its
memory figures once it has exited.  run() therefore traces the child with
PTRACE_O_TRACEEXIT and reads VmPeak/VmHWM at its exit stop, before the
kernel releases the address space, then reaps it with wait4.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

_PTRACE_TRACEME = 0
_PTRACE_CONT = 7
_PTRACE_SETOPTIONS = 0x4200
_PTRACE_O_TRACEEXIT = 0x40
_PTRACE_EVENT_EXIT = 6


@dataclass
class ResourceUsage:
    user_time: float  # seconds
    system_time: float
    max_rss_kb: int  # peak resident set
    max_vm_kb: int | None  # peak virtual size; None where it cannot be known
    minor_faults: int
    major_faults: int
    voluntary_switches: int
    involuntary_switches: int

    def to_dict(self) -> dict:
        return asdict(self)


def _status_kb(path: str, key: str) -> int | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _from_rusage(ru: Any, max_vm_kb: int | None, max_rss_kb: int | None = None) -> ResourceUsage:
    return ResourceUsage(
        user_time=ru.ru_utime,
        system_time=ru.ru_stime,
        # Linux reports KB.  For a child, ru_maxrss also covers the forked
        # copy of the parent before exec; VmHWM read at exit is the program's.
        max_rss_kb=max_rss_kb if max_rss_kb is not None else ru.ru_maxrss,
        max_vm_kb=max_vm_kb,
        minor_faults=ru.ru_minflt,
        major_faults=ru.ru_majflt,
        voluntary_switches=ru.ru_nvcsw,
        involuntary_switches=ru.ru_nivcsw,
    )


def of_self() -> ResourceUsage:
    """This process so far (all threads)."""
    return _from_rusage(resource.getrusage(resource.RUSAGE_SELF), _status_kb("/proc/self/status", "VmPeak"))


def of_children() -> ResourceUsage:
    """All waited-for descendants together; the kernel keeps no VM peak for them."""
    return _from_rusage(resource.getrusage(resource.RUSAGE_CHILDREN), None)


@dataclass
class ChildResult:
    pid: int
    status: int  # raw wait status
    usage: ResourceUsage

    @property
    def exit_code(self) -> int | None:
        return os.waitstatus_to_exitcode(self.status) if os.WIFEXITED(self.status) else None

    @property
    def signal(self) -> int | None:
        return os.WTERMSIG(self.status) if os.WIFSIGNALED(self.status) else None


def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    return libc


def run(argv: Sequence[str], **popen_kwargs: Any) -> ChildResult:
    """Run argv to completion and return its wait status and resource usage.

    stdin/stdout/stderr are inherited unless given as Popen keywords.
    Signals that stop the child are passed on to it unchanged.
    """
    libc = _libc()

    def traceme() -> None:
        libc.ptrace(_PTRACE_TRACEME, 0, None, None)

    proc = subprocess.Popen(list(argv), preexec_fn=traceme, **popen_kwargs)
    pid = proc.pid
    peak_vm = peak_rss = None
    options_set = False
    while True:
        _, status, ru = os.wait4(pid, 0)
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            proc.returncode = os.waitstatus_to_exitcode(status)
            return ChildResult(pid, status, _from_rusage(ru, peak_vm, peak_rss))
        if not os.WIFSTOPPED(status):
            continue
        sig = os.WSTOPSIG(status)
        event = status >> 16
        deliver = 0
        if not options_set and sig == signal.SIGTRAP:
            # The stop after a successful exec: from now on, stop at exit.
            libc.ptrace(_PTRACE_SETOPTIONS, pid, None, ctypes.c_void_p(_PTRACE_O_TRACEEXIT))
            options_set = True
        elif event == _PTRACE_EVENT_EXIT:
            peak_vm = _status_kb(f"/proc/{pid}/status", "VmPeak")
            peak_rss = _status_kb(f"/proc/{pid}/status", "VmHWM")
        elif sig != signal.SIGTRAP or event == 0:
            deliver = sig
        libc.ptrace(_PTRACE_CONT, pid, None, ctypes.c_void_p(deliver))
