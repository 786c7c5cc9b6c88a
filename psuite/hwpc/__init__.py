"""Event counting: the Python API over psuite's C library, event
catalogue and configuration files."""

from psuite.hwpc.counting import Counting, EventStatus, HwpcError

__all__ = ["Counting", "EventStatus", "HwpcError"]
