"""The human-readable profile report: profile information, then summaries
by module, file, function and file:line, each sorted by samples with self
and cumulative percentages (PerfSuite psprocess style)."""

from __future__ import annotations

from collections.abc import Callable

from psuite.report import Location, ProfileReport

RULE = "=" * 78


def _summary(lines: list[str], title: str, locations: list[Location], key: Callable[[Location], str],
             total: int, threshold: float) -> None:
    sums: dict[str, int] = {}
    get = sums.get
    for loc in locations:
        k = key(loc)
        sums[k] = get(k, 0) + loc.samples
    lines += ["", title, "-" * len(title), f"{'Samples':>10} {'Self %':>8} {'Total %':>8}  Name"]
    running = 0
    hidden = 0
    scale = 100.0 / total if total else 0.0
    for name, n in sorted(sums.items(), key=lambda kv: (-kv[1], kv[0])):
        running += n
        share = n * scale
        if share < threshold:
            hidden += 1
            continue
        lines.append(f"{n:>10,} {share:>7.2f}% {running * scale:>7.2f}%  {name}")
    if hidden:
        lines.append(f"{'':>10} ({hidden} more below {threshold:g}%)")


def render_one(r: ProfileReport, threshold: float = 0.0) -> str:
    lines = ["PerfSuite Profile Report", ""]
    pairs = [("XML Source", r.source), ("Created", r.date), ("Generator", r.generator),
             ("Host", r.hostname + (f".{r.domainname}" if r.domainname else "")), ("Process ID", r.pid),
             ("Thread", r.thread), ("Command", r.command)]
    lines += [f"{k:<24}: {v}" for k, v in pairs if v not in (None, "")]
    lines += ["", "Profile Information", RULE]
    unit = "microseconds" if r.is_timer else "events"
    run = []
    if r.wallclock is not None:
        run.append(f"{r.wallclock:.3f} s wall clock")
    if r.cputime is not None:
        run.append(f"{r.cputime:.3f} s CPU")
    info = [("Class", r.profile_class), ("Event", r.event),
            ("Period" if r.is_timer else "Threshold", f"{r.threshold:,} {unit}" if r.threshold else ""),
            ("Total samples", f"{r.total_samples:,}"), ("Domain", r.domain), ("Run time", ", ".join(run)),
            ("Sampling", r.annotation), ("Minimum self %", f"{threshold:g}"), ("Mapper", r.mapper)]
    lines += [f"{k:<24}: {v}" for k, v in info if v not in (None, "")]
    total = sum(loc.samples for loc in r.locations) or 1
    _summary(lines, "Module Summary", r.locations, lambda loc: loc.module, total, threshold)
    _summary(lines, "File Summary", r.locations, lambda loc: loc.file, total, threshold)
    _summary(lines, "Function Summary", r.locations, lambda loc: f"{loc.function}  ({loc.file})", total, threshold)
    _summary(lines, "Function:File:Line Summary", r.locations,
             lambda loc: f"{loc.function}:{loc.file}:{loc.line}", total, threshold)
    return "\n".join(lines) + "\n"
