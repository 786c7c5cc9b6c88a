"""Combining many counting reports (ranks, threads, runs) into one view:
per event and per derived metric, count, sum, mean, minimum and maximum
(naming the rank or thread), population standard deviation, quartiles
(linear interpolation, as statistics.quantiles(method="inclusive") and
numpy's default) and the imbalance max / mean.

Inputs are files, directories (their *.xml) and glob patterns; each
document is parsed, reduced to the model and dropped, so memory grows with
the number of reports, not their size."""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Callable, Iterable

from psuite.errors import InputError
from psuite.hwpc.names import canonical
from psuite.model.report import CountReport, MultiReport, PathSpread, ProfileReport, ResourceReport, Statistic
from psuite.model.statistics import pstdev, quartiles, total_and_mean


def expand(inputs: Iterable[str]) -> list[str]:
    """Files, directories (their *.xml, sorted) and glob patterns, in order."""
    out: list[str] = []
    for item in inputs:
        if item.startswith(("http://", "https://")):
            out.append(item)
        elif os.path.isdir(item):
            found = sorted(glob.glob(os.path.join(glob.escape(item), "*.xml")))
            if not found:
                raise InputError(f"{item}: no .xml reports in this directory")
            out += found
        elif any(c in item for c in "*?[") and not os.path.exists(item):
            found = sorted(glob.glob(item))
            if not found:
                raise InputError(f"{item}: no file matches")
            out += found
        else:
            out.append(item)
    return out


def statistic(name: str, kind: str, values: list[tuple[float, str]]) -> Statistic:
    """The statistics of finite values (the readers admit no others); a
    sum beyond float's range is inf (written as null in JSON)."""
    nums = [v for v, _ in values]
    total, mu = total_and_mean(nums)
    lo = min(values, key=lambda vw: vw[0])
    hi = max(values, key=lambda vw: vw[0])
    q1, median, q3 = quartiles(nums)
    imbalance = hi[0] / mu if mu else None
    return Statistic(name=name, kind=kind, count=len(nums), sum=total, mean=mu, min=lo[0], min_who=lo[1],
                     max=hi[0], max_who=hi[1], stddev=pstdev(nums, mu), q1=q1, median=median, q3=q3,
                     imbalance=imbalance if imbalance is not None and math.isfinite(imbalance) else None)


def compute(reports: list[CountReport]) -> list[Statistic]:
    """Statistics of every event, then of every derived metric, in the order
    they first appear; each over the reports that have it."""
    by_name: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for r in reports:
        who = r.who
        for e in r.events:
            by_name.setdefault(("event", e.name), []).append((float(e.count), who))
        for m in r.metrics:
            by_name.setdefault(("metric", m.name), []).append((float(m.value), who))
    events = [statistic(n, k, v) for (k, n), v in by_name.items() if k == "event"]
    metrics = [statistic(n, k, v) for (k, n), v in by_name.items() if k == "metric"]
    return events + metrics


def function_spread(reports: list[ProfileReport]) -> list[Statistic]:
    """Per function, its samples across the profiles (0 where a profile has
    none), most samples first."""
    per_report: list[dict[str, int]] = []
    for r in reports:
        counts: dict[str, int] = {}
        for loc in r.locations:
            counts[loc.function] = counts.get(loc.function, 0) + loc.samples
        per_report.append(counts)
    names = {f for counts in per_report for f in counts}
    stats = [statistic(f, "function", [(float(c.get(f, 0)), r.who) for c, r in zip(per_report, reports,
                                                                                   strict=True)])
             for f in names]
    return sorted(stats, key=lambda s: (-s.sum, s.name))


def _keep_total_callpaths(multi: MultiReport) -> None:
    """A process's call paths are one document for all its threads; when
    it came with the process total of a `psrun -p` run and none of the
    thread reports has call paths, it goes with the first of them, so that
    the combination keeps the call trees (each thread's once)."""
    for total in multi.totals:
        if getattr(total, "callpaths", None) is None:
            continue
        same = [r for r in multi.reports if (r.hostname, r.pid, r.rank) == (total.hostname, total.pid, total.rank)]
        if same and all(r.callpaths is None for r in same):
            same[0].callpaths, total.callpaths = total.callpaths, None


def callpath_spread(multi: MultiReport) -> list[PathSpread]:
    """The call trees of every thread of every profile merged; per calling
    context, the statistics of its inclusive and exclusive samples across
    those threads (0 where a thread never was in it), as function_spread
    gives them per function.  In tree order: parents first, siblings by
    inclusive samples, most first."""
    from psuite.model.calltree import CallNode, CallTree, thread_trees

    trees = thread_trees(multi)
    if not trees:
        return []
    merged = CallTree()
    values: dict[int, dict[int, tuple[float, float]]] = {}  # id(merged node) -> {member: (incl, excl)}
    for k, t in enumerate(trees):
        inclusive = t.tree.inclusive_values()
        stack = [(t.tree.root, merged.root)]
        while stack:
            src, dst = stack.pop()
            for c in src.children.values():
                d = dst.child(c.frame)
                d.exclusive += c.exclusive
                values.setdefault(id(d), {})[k] = (inclusive[id(c)], c.exclusive)
                stack.append((c, d))
    who = [t.label for t in trees]
    totals = merged.inclusive_values()
    out: list[PathSpread] = []
    stack2: list[tuple[CallNode, tuple[str, ...]]] = [(merged.root, ())]
    while stack2:
        node, path = stack2.pop()
        if node is not merged.root:
            per = values[id(node)]
            name = ";".join(path)
            incl = [(per.get(k, (0.0, 0.0))[0], w) for k, w in enumerate(who)]
            excl = [(per.get(k, (0.0, 0.0))[1], w) for k, w in enumerate(who)]
            out.append(PathSpread(path, len(path), statistic(name, "callpath", incl),
                                  statistic(name, "callpath", excl)))
        children = sorted(node.children.values(), key=lambda c: (-totals[id(c)], c.frame.function))
        stack2.extend((c, (*path, c.frame.function)) for c in reversed(children))
    return out


def members(report) -> list:
    """The single reports of a document: a multi-document's members, or
    the report itself."""
    return report.reports + report.totals if isinstance(report, MultiReport) else [report]


TOTAL_MARK = "process total"  # in <annotation> of the total of a `psrun -p` run


def split_totals(reports: list) -> tuple[list, list]:
    """(reports to combine, process totals left out).  A `psrun -p` run
    writes each thread's report and the process total; combined together,
    every sample would count twice.  The total is the report of a process
    (same host and pid) that other reports of it break down by thread:
    psuite writes it as thread 0 with "process total" in <annotation>
    (older psuite: without <thread>).  The original PerfSuite wrote no
    totals, so its thread 0 is a thread."""
    by_process: dict[tuple, list] = {}
    for r in reports:
        if r.pid is not None:
            by_process.setdefault((r.hostname, r.pid, r.rank), []).append(r)
    totals: set[int] = set()
    for group in by_process.values():
        marked = [r for r in group if r.thread is None or TOTAL_MARK in r.annotation]
        if len(marked) < len(group):  # only where the process's threads are there too
            totals.update(id(r) for r in marked)
    return [r for r in reports if id(r) not in totals], [r for r in reports if id(r) in totals]


def combine(sources: list[str], load: Callable[[str], object], derive: Callable[[CountReport], None],
            resolve: Callable[[ProfileReport], None],
            progress: Callable[[int, int], None] | None = None,
            warn: Callable[[str], None] | None = None) -> MultiReport:
    """Counting reports with statistics per event and metric, or profiles
    with each function's spread; not a mix.  Multi-documents (psprocess
    -c -x output, the original PerfSuite's) count as their members.  psrun
    -R's resource reports, which lie beside the counting reports of the
    same run, are left out, and warn says which."""
    gathered: list = []
    resources: list[str] = []
    for i, source in enumerate(sources, 1):
        document = load(source)
        if isinstance(document, ResourceReport):
            resources.append(source)
            continue
        for report in members(document):
            if isinstance(report, CountReport):
                derive(report)
            elif isinstance(report, ProfileReport):
                resolve(report)
            else:
                raise InputError(f"{source}: -c combines counting reports or profiles, not this document")
            if gathered and type(report) is not type(gathered[0]):
                raise InputError(f"{source}: a "
                                 f"{'profile' if isinstance(report, ProfileReport) else 'counting report'}"
                                 " among the others: combine counting reports and profiles separately")
            gathered.append(report)
        if progress and (i % 64 == 0 or i == len(sources)):
            progress(i, len(sources))
    if resources and not gathered:
        raise InputError(f"{resources[0]}: only resource reports (psrun -R) among the inputs; -c combines "
                         "counting reports or profiles (psprocess shows a resource report alone)")
    if resources and warn:
        warn(f"left out {left_out(resources)}: -c combines counting reports or profiles, not psrun -R's "
             "resource reports")
    return summarize(gathered)


def left_out(sources: list[str], shown: int = 3) -> str:
    """'2 resource reports (a.xml, b.xml)', the first few named."""
    names = [os.path.basename(s) for s in sources[:shown]]
    more = f", and {len(sources) - shown} more" if len(sources) > shown else ""
    return f"{len(sources)} resource report{'s' if len(sources) > 1 else ''} ({', '.join(names)}{more})"


def same_event(a: str | None, b: str | None) -> bool:
    """Whether two sampling events are one, however spelt (task-clock and
    perf::TASK-CLOCK, cycles and PAPI_TOT_CYC)."""
    return a == b or (bool(a) and bool(b) and canonical(a) == canonical(b))


def same_sampling(profiles: list[ProfileReport]) -> None:
    """InputError unless the profiles sample one event: the combination
    sums and compares their samples, and a sample of wall time (ITIMER_REAL)
    is not one of CPU time or of a counter's overflow."""
    if not profiles:
        return
    first = profiles[0]
    for p in profiles[1:]:
        if not same_event(p.event, first.event):
            raise InputError(f"{first.source} samples {first.event or 'an unnamed event'} and {p.source} "
                             f"samples {p.event or 'an unnamed event'}: samples of different events cannot be "
                             "summed; combine each event's profiles separately")


def summarize(reports: list) -> MultiReport:
    """The combination of single reports of one kind, process totals set
    apart."""
    same_sampling([r for r in reports if isinstance(r, ProfileReport)])
    multi = MultiReport()
    multi.reports, multi.totals = split_totals(reports)
    _keep_total_callpaths(multi)
    if multi.reports and isinstance(multi.reports[0], ProfileReport):
        multi.statistics = function_spread(multi.reports)
        multi.callpath_statistics = callpath_spread(multi)
    else:
        multi.statistics = compute(multi.reports)
    return multi
