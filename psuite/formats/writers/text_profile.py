"""The human-readable profile report: profile information, then summaries
by module, file, function and file:line, each sorted by samples with self
and cumulative percentages (PerfSuite psprocess style)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate
from operator import attrgetter

from psuite.formats import native_rows
from psuite.formats.writers import documents
from psuite.model.report import ProfileReport

RULE = "=" * 78
_HEAD = f"{'Samples':>10} {'Self %':>8} {'Total %':>8}  Name"
_MODULE, _FILE, _FUNCTION = attrgetter("module"), attrgetter("file"), attrgetter("function")
_LINE, _SAMPLES = attrgetter("line"), attrgetter("samples")


def _hidden(count: int, threshold: float) -> str:
    return f"{'':>10} ({count} more below {threshold:g}%)"


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
    lines += ["", title, "-" * len(title), _HEAD]
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
        lines.append(_hidden(hidden, threshold))


def render_one(r: ProfileReport, threshold: float = 0.0) -> str:
    locs = r.locations
    return _render(r, list(map(_MODULE, locs)), list(map(_FILE, locs)), list(map(_FUNCTION, locs)),
                   list(map(_LINE, locs)), list(map(_SAMPLES, locs)), threshold)


def render_lines(d: documents.Lines, threshold: float = 0.0) -> str:
    """The report of a profile document's experiment (writers.documents)."""
    return _render(d.run, d.modules, d.files, d.functions, d.lines, d.samples, threshold)


def _render(r: ProfileReport, modules: list[str], files: list[str], functions: list[str], line_nos: list[int],
            counts: list[int], threshold: float) -> str:
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
    total = sum(counts) or 1
    native = native_rows.Summaries(counts, total)
    if native.ok:
        pieces = _native_summaries(native, modules, files, functions, line_nos, threshold)
        if pieces is not None:
            return "".join(["\n".join(lines), "\n", *pieces])  # the long rows copied once
    _summary(lines, "Module Summary", modules, counts, total, threshold)
    _summary(lines, "File Summary", files, counts, total, threshold)
    # names %-formatted through map: no Python loop per location
    _summary(lines, "Function Summary", map("%s  (%s)".__mod__, zip(functions, files, strict=True)), counts, total,
             threshold)
    _summary(lines, "Function:File:Line Summary",
             map("%s:%s:%s".__mod__, zip(functions, files, line_nos, strict=True)), counts, total,
             threshold)
    return "\n".join(lines) + "\n"


def _native_summaries(native: native_rows.Summaries, modules: list[str], files: list[str], functions: list[str],
                      line_nos: list[int], threshold: float) -> list[str] | None:
    """The four summaries written by the C library, as _summary writes them
    (each line ending with a newline), in pieces; None when it leaves any
    of them to Python."""
    done = []
    for title, a, b, shape in (("Module Summary", modules, None, 0), ("File Summary", files, None, 0),
                               ("Function Summary", functions, files, 1),
                               ("Function:File:Line Summary", functions, files, 2)):
        block = native.summary(a, b, line_nos, shape, threshold)
        if block is None:
            return None
        done.append((title, *block))
    pieces = []
    for title, rows, hidden in done:
        pieces += [f"\n{title}\n{'-' * len(title)}\n{_HEAD}\n", rows]  # rows: each ending with a newline
        if hidden:
            pieces.append(_hidden(hidden, threshold) + "\n")
    return pieces
