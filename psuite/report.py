"""The one in-memory report model shared by psprocess, the exporters and
the Python API.  No I/O here: readers build it, writers render it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from psuite.libperfsuite.machine import MachineInfo


@dataclass
class Event:
    name: str
    count: float
    type: str = "native"  # "preset" or "native"
    derived: bool = False
    description: str = ""


@dataclass
class Metric:
    name: str
    value: float
    description: str = ""
    unit: str = ""


@dataclass
class CountReport:
    """One process's (or thread's) event counts: <hwpcreport mode="count">."""

    source: str = ""
    version: str = ""
    generator: str = ""
    date: str = ""
    hostname: str = ""
    domainname: str = ""
    pid: int | None = None
    thread: str = ""
    username: str = ""
    command: str = ""
    md5sum: str = ""
    annotation: str = ""
    wallclock: float | None = None  # seconds
    usertime: float | None = None
    systemtime: float | None = None
    machine: MachineInfo | None = None
    counter_class: str = ""  # "PAPI", "perfmon" (perf_event) or "null"
    counter_version: str = ""
    domain: str = "user"
    multiplexed: bool = False
    events: list[Event] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)

    @property
    def cputime(self) -> float | None:
        if self.usertime is None and self.systemtime is None:
            return None
        return (self.usertime or 0.0) + (self.systemtime or 0.0)

    @property
    def collector(self) -> str:
        """Which backend counted, in words."""
        if self.counter_class == "perfmon" and self.counter_version.startswith("perf_event"):
            return "Linux perf_event"
        return f"{self.counter_class} {self.counter_version}".strip()

    def to_dict(self) -> dict:
        return asdict(self)
