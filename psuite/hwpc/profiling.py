"""Profiling sources and their periods, checked before launch.  Kept free
of heavy imports: psrun --profile uses it on every run."""

from __future__ import annotations

from psuite.errors import ConfigError

TIMERS = ("ITIMER_PROF", "ITIMER_VIRTUAL", "ITIMER_REAL")
DEFAULT_TIMER_PERIOD_US = 10000


def check_profile_event(name: str, threshold: int | None, where: str) -> int:
    """The threshold to use (timers default to 10 ms); errors name the fix."""
    if threshold is None:
        if name in TIMERS:
            return DEFAULT_TIMER_PERIOD_US
        raise ConfigError(f"{where}: sampling on {name} needs an overflow threshold (a count of events)")
    if threshold <= 0:
        raise ConfigError(f"{where}: the threshold must be a positive integer, not {threshold}")
    return threshold
