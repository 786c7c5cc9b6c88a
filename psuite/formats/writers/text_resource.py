"""The human-readable resource report (psrun -R)."""

from __future__ import annotations

import signal

from psuite.model.report import ResourceReport


def render_one(r: ResourceReport) -> str:
    if r.exit_type == "signal":
        try:
            ended = f"killed by {signal.Signals(r.exit_code).name}"
        except ValueError:
            ended = f"killed by signal {r.exit_code}"
    else:
        ended = f"exit status {r.exit_code}"
    pairs = [("XML Source", r.source), ("Command", r.command), ("Host", r.hostname), ("Process ID", r.pid),
             ("Started", r.starttime), ("Ended", ended),
             ("Samples", f"{r.samples:,} at {r.frequency:g} per second"),
             ("Peak resident set", f"{r.maxrss_mb:,.1f} MB"), ("Peak virtual size", f"{r.maxvm_mb:,.1f} MB"),
             ("CPU time", f"{r.usertime:.3f} s user, {r.systemtime:.3f} s system"),
             ("Page faults", f"{r.major_faults:,} major, {r.minor_faults:,} minor"), ("Swaps", f"{r.swaps:,}"),
             ("Highest load average", ", ".join(f"{v:.2f} ({k} min)" for k, v in sorted(r.maxloads.items())))]
    lines = ["PerfSuite Resource Report", ""] + [f"{k:<24}: {v}" for k, v in pairs if v not in (None, "")]
    if r.loads:
        lines += ["", "1-minute load average while running (samples)"]
        lines += [f"  {load:6.1f} - {load + r.load_resolution:<6.1f} {n:>8,}" for load, n in sorted(r.loads.items())]
        if r.load_outofrange:
            lines.append(f"  above {r.load_max:g}     {r.load_outofrange:>8,}")
    return "\n".join(lines) + "\n"
