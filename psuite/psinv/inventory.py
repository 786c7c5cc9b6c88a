"""Gathering the machine inventory: hardware, OS, and what can be measured."""

from __future__ import annotations

import os
import platform
import socket
from dataclasses import asdict, dataclass, field

from psuite.hwpc import events
from psuite.libperfsuite.machine import MachineInfo, machine_info

PARANOID_MEANING = {
    -1: "no restrictions: unprivileged users may measure anything",
    0: "unprivileged users may measure CPUs and the kernel, but not raw tracepoints",
    1: "unprivileged users may measure their own processes, user and kernel",
    2: "unprivileged users may measure their own processes in user space only",
    3: "unprivileged users may not use perf_event at all",
}


@dataclass
class Counters:
    papi_version: str
    papi_components: list[dict]
    perf_event_paranoid: int | None
    paranoid_meaning: str
    privileged: bool
    perf_event_available: bool
    hardware_pmu: bool
    hardware_pmu_reason: str
    hardware_counters: int  # as PAPI's perf_event component reports them


@dataclass
class Inventory:
    hostname: str
    os: dict
    machine: MachineInfo
    counters: Counters
    virtual_machine: bool
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _os_release() -> str:
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return ""


def _paranoid() -> int | None:
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _privileged() -> bool:
    """Root, or CAP_PERFMON (38) / CAP_SYS_ADMIN (21) in the effective set."""
    if os.geteuid() == 0:
        return True
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    caps = int(line.split()[1], 16)
                    return bool(caps & (1 << 38) or caps & (1 << 21))
    except (OSError, ValueError):
        pass
    return False


def counters() -> Counters:
    version = events.papi_version()
    comps = [asdict(c) for c in events.papi_components()] if version else []
    paranoid = _paranoid()
    meaning = PARANOID_MEANING.get(min(paranoid, 3) if paranoid is not None else 99, "unknown setting")
    if paranoid is None:
        meaning = "this kernel has no perf_event support"
    privileged = _privileged()
    if privileged and paranoid is not None:
        meaning += "; you are privileged (root or CAP_PERFMON), so no restriction applies to you"
    sw_status, _ = events.probe("task-clock", "perf_event")
    hw_status, hw_why = events.probe("cycles", "perf_event")
    hw_counters = next((c["counters"] for c in comps if c["name"] == "perf_event" and not c["disabled"]), 0)
    return Counters(
        papi_version=version,
        papi_components=comps,
        perf_event_paranoid=paranoid,
        paranoid_meaning=meaning,
        privileged=privileged,
        perf_event_available=sw_status == events.COUNTED,
        hardware_pmu=hw_status == events.COUNTED,
        hardware_pmu_reason="" if hw_status == events.COUNTED else hw_why,
        hardware_counters=hw_counters if hw_status == events.COUNTED else 0,
    )


def gather() -> Inventory:
    machine = machine_info()
    uname = platform.uname()
    return Inventory(
        hostname=socket.gethostname(),
        os={
            "system": uname.system,
            "kernel": uname.release,
            "kernel_version": uname.version,
            "architecture": uname.machine,
            "distribution": _os_release(),
        },
        machine=machine,
        counters=counters(),
        virtual_machine=bool(machine.hypervisor),
    )
