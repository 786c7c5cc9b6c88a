"""Calibration: from a counting run, the overflow threshold (or timer
period) that gives a wanted sample rate, and the profiling configuration
that uses it (PerfSuite's psprocess --calibrate)."""

from __future__ import annotations

from dataclasses import dataclass

from psuite.errors import InputError
from psuite.hwpc.names import canonical
from psuite.model.report import CountReport

# Events worth sampling on, best first (canonical names).
PREFERRED = ("PAPI_TOT_CYC", "cycles", "PAPI_TOT_INS", "instructions", "task-clock", "cpu-clock")


@dataclass
class Proposal:
    event: str
    threshold: int  # events between samples; microseconds for ITIMER_PROF
    samples: int  # expected over a run like the calibrating one
    profile_class: str  # itimer, PAPI or perfmon


def propose(report: CountReport, rate_hz: float) -> list[Proposal]:
    """One proposal per usable event, best first, then ITIMER_PROF."""
    cpu = report.cputime or report.wallclock
    if not cpu or cpu <= 0:
        raise InputError(f"{report.source}: no CPU or wall time in the report to calibrate against")
    if rate_hz <= 0:
        raise InputError("--rate must be a positive number of samples per second")
    by_name = {canonical(e.name): e for e in report.events if e.count and e.count > 0}
    out = []
    for name in PREFERRED:
        e = by_name.get(name)
        if e is None:
            continue
        threshold = max(1, round(e.count / (cpu * rate_hz)))
        cls = "PAPI" if report.counter_class == "PAPI" else "perfmon"
        out.append(Proposal(e.name, threshold, round(e.count / threshold), cls))
    period_us = max(1, round(1e6 / rate_hz))
    out.append(Proposal("ITIMER_PROF", period_us, round(cpu * 1e6 / period_us), "itimer"))
    return out


def profile_config(p: Proposal, domain: str = "user") -> str:
    kind = ' type="preset"' if p.event.startswith("PAPI_") else (' type="native"' if p.profile_class != "itimer"
                                                                  else "")
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<ps_hwpc_profile class="{p.profile_class}" domain="{domain}">\n'
            f'  <ps_hwpc_event{kind} name="{p.event}" threshold="{p.threshold}"/>\n</ps_hwpc_profile>\n')
