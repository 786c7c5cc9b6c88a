"""The human-readable profile report: profile information, then summaries
by module, file, function and file:line, each sorted by samples with self
and cumulative percentages (PerfSuite psprocess style)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate

from psuite.report import ProfileReport

RULE = "=" * 78


def _summary(lines: list[str], title: str, keys: Iterable[str], counts: list[int], total: int,
             threshold: float) -> None:
    """Samples summed per key, the largest first (ties by name)."""
    keys = list(keys)
    sums: dict[str, int] = dict(zip(keys, counts, strict=True))  # right when every key is distinct
    if len(sums) != len(keys):
        sums = {}
        get = sums.get
        for k, n in zip(keys, counts, strict=True):
            sums[k] = get(k, 0) + n
    lines += ["", title, "-" * len(title), f"{'Samples':>10} {'Self %':>8} {'Total %':>8}  Name"]
    names = sorted(sums)  # by name: the stable sort by samples below keeps that order among ties
    names.sort(key=sums.__getitem__, reverse=True)
    ranked = list(map(sums.__getitem__, names))
    scale = 100.0 / total if total else 0.0
    # "samples self%" once per distinct count (most counts are small and repeat), None when below the threshold
    heads = {n: None if n * scale < threshold else f"{n:>10,} {n * scale:>7.2f}%" for n in set(ranked)}
    rows = zip(map(heads.__getitem__, ranked), map(scale.__mul__, accumulate(ranked)), names, strict=True)
    if None in heads.values():
        rows = (row for row in rows if row[0] is not None)
    shown = list(map("%s %7.2f%%  %s".__mod__, rows))  # %-formatting through map: twice as fast as an f-string
    lines += shown
    hidden = len(names) - len(shown)
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
    locs = r.locations
    counts = [loc.samples for loc in locs]
    total = sum(counts) or 1
    _summary(lines, "Module Summary", [loc.module for loc in locs], counts, total, threshold)
    files, functions = [loc.file for loc in locs], [loc.function for loc in locs]
    _summary(lines, "File Summary", files, counts, total, threshold)
    # names %-formatted through map: no Python loop per location
    _summary(lines, "Function Summary", map("%s  (%s)".__mod__, zip(functions, files, strict=True)), counts, total,
             threshold)
    _summary(lines, "Function:File:Line Summary",
             map("%s:%s:%s".__mod__, zip(functions, files, [loc.line for loc in locs], strict=True)), counts, total,
             threshold)
    return "\n".join(lines) + "\n"
