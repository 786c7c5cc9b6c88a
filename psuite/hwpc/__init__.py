"""Event counting: the Python API over psuite's C library, event
catalogue and configuration files.  Counting and friends are imported on
first use, so that psrun's light modules here (profiling) do not load the
C library binding."""

from __future__ import annotations

__all__ = ["Counting", "EventStatus", "HwpcError"]


def __getattr__(name: str):
    if name in __all__:
        from psuite.hwpc import counting

        return getattr(counting, name)
    raise AttributeError(f"module 'psuite.hwpc' has no attribute {name!r}")
