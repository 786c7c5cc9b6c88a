"""High-resolution timers: wall clock, process CPU time, thread CPU time."""

from __future__ import annotations

import time
from dataclasses import dataclass


def wallclock() -> float:
    """Monotonic wall-clock seconds (arbitrary origin, nanosecond resolution)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) / 1e9


def cputime() -> float:
    """CPU seconds used by this process, all threads."""
    return time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID) / 1e9


def thread_cputime() -> float:
    """CPU seconds used by the calling thread."""
    return time.clock_gettime_ns(time.CLOCK_THREAD_CPUTIME_ID) / 1e9


@dataclass
class Interval:
    wall: float = 0.0
    cpu: float = 0.0
    thread_cpu: float = 0.0


class Stopwatch:
    """Context manager measuring wall, process CPU and thread CPU time."""

    def __init__(self) -> None:
        self.elapsed = Interval()

    def __enter__(self) -> Stopwatch:
        self._start = (wallclock(), cputime(), thread_cputime())
        return self

    def __exit__(self, *exc: object) -> None:
        w, c, t = self._start
        self.elapsed = Interval(wallclock() - w, cputime() - c, thread_cputime() - t)
