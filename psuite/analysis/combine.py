"""Combining many reports (ranks, threads, runs) into one view: the
members' experiments merged (experiments.from_report of the combination,
the cube `psprocess -c --cube` writes), and statistics over that
experiment's locations.  Per event and per derived metric of counting
reports, per function and per call path of profiles: count, sum, mean,
minimum and maximum (naming the rank or thread), population standard
deviation, quartiles (linear interpolation, as
statistics.quantiles(method="inclusive") and numpy's default) and the
imbalance max / mean.

Inputs are files, directories (their *.xml) and glob patterns; each
document is parsed, reduced to the model and dropped, so memory grows with
the number of reports, not their size."""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Callable, Iterable, Iterator

from psuite.errors import InputError
from psuite.hwpc.names import canonical
from psuite.model.experiment import Experiment
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


def compute(reports: list[CountReport], exp: Experiment | None = None) -> list[Statistic]:
    """Statistics of every event, then of every derived metric, in the order
    they first appear, over the locations of the combination's experiment
    (from_report(..., for_reports=True): the merge `psprocess -c --cube`
    writes, its events as metric columns): each metric at the root, over
    the locations whose report has it (an event one run did not count is
    not a count of 0), minimum and maximum naming the first such location
    in the system tree."""
    import numpy as np

    from psuite.analysis import experiments
    from psuite.model.experiment import REPORT_METRIC

    if exp is None:
        exp = experiments.from_report(MultiReport(reports=list(reports)), for_reports=True)
    cols = exp.columns
    who = [loc.run.who if loc.run is not None else "" for loc in exp.locations]
    everywhere = np.ones(len(exp.locations), dtype=bool)
    out: list[Statistic] = []
    for i in range(len(cols)):
        row = cols.row(i)
        at = everywhere if cols.listed is None else cols.listed[i]
        out.append(statistic(cols.displays[i], "event", [(float(row[j]), who[j]) for j in np.flatnonzero(at)]))
    root = cols.cnode
    for m in exp.metrics:
        if m.attributes.get(REPORT_METRIC) != "yes":
            continue
        row = (exp.derived_values(m.name) if m.derived else exp.stored(m.name))[root]
        at = cols.metrics_listed.get(m.name, everywhere)
        out.append(statistic(m.display, "metric", [(float(row[j]), who[j]) for j in np.flatnonzero(at)]))
    return out


def function_spread(reports: list[ProfileReport], exp: Experiment | None = None) -> list[Statistic]:
    """Per function, its samples across the locations of the combination's
    experiment (each profile, or each thread of profiles with call paths;
    0 where a location has none of them), summed over the function's call
    paths; most samples first."""
    import numpy as np

    from psuite.analysis import experiments
    from psuite.formats.exporters.calltree_common import added_root

    if exp is None:
        exp = experiments.from_report(MultiReport(reports=list(reports)))
    if exp.attributes.get(experiments.FLAT_PROFILE):  # a location per profile, named as the report is
        who = [""] * len(exp.locations)
        for r, loc in zip(reports, experiments.report_locations(exp, reports), strict=True):
            who[loc] = r.who
    else:  # a location per thread of the call trees
        who = [thread_label(loc) for loc in exp.locations]
    names = _function_names(exp)
    samples = exp.stored("samples")
    per_name: dict[str, np.ndarray] = {}
    for k, c in enumerate(exp.cnodes):
        if added_root(exp, k):
            continue
        name = names[c.region]
        got = per_name.get(name)
        per_name[name] = samples[k].astype(np.float64) if got is None else got + samples[k]
    stats = [statistic(f, "function", [(float(v), w) for v, w in zip(row, who, strict=True)])
             for f, row in per_name.items()]
    return sorted(stats, key=lambda s: (-s.sum, s.name))


def thread_label(loc) -> str:
    """How a thread's location of an experiment made from call-path
    profiles is named among others, as calltree.ThreadTree.label names it:
    "rank 3 thread 0", or "host pid 42 thread 1"."""
    a = loc.attributes
    where = f"rank {a['rank']}" if "rank" in a else f"{a.get('host', 'localhost')} pid {a.get('pid', 0)}"
    return f"{where} thread {a.get('thread', 0)}"


def _function_names(exp: Experiment) -> list[str]:
    """Per region, the function's name as the text reports show it: an
    unresolved frame (which the model names by its module in brackets, as
    flame graphs show it) is "??", as in a single profile's call tree."""
    import os

    from psuite.formats.exporters.calltree_common import region_names
    from psuite.model.calltree import UNKNOWN

    out = []
    for r, (name, _) in zip(exp.regions, region_names(exp), strict=True):
        bracketed = f"[{os.path.basename(r.module)}]" if r.module else "[unknown]"
        out.append(UNKNOWN if r.role == "function" and r.name == bracketed else name)
    return out


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


def callpath_spread(multi: MultiReport, exp: Experiment | None = None) -> list[PathSpread]:
    """Per calling context of the combination's experiment (the call trees
    of every thread merged, as -c --cube writes them), the statistics of
    its inclusive and exclusive samples across the locations (0 where a
    thread never was in it), as function_spread gives them per function.
    In tree order: parents first, siblings by inclusive samples, most
    first.  Empty for profiles without call paths."""
    from psuite.analysis import experiments
    from psuite.formats.exporters.calltree_common import added_root

    if exp is None:
        exp = experiments.from_report(MultiReport(reports=list(multi.reports)))
    if exp.attributes.get(experiments.FLAT_PROFILE):
        return []
    who = [thread_label(loc) for loc in exp.locations]
    names = _function_names(exp)
    exclusive = exp.stored("samples").astype(float)
    inclusive = exp.inclusive("samples").astype(float)
    totals = inclusive.sum(axis=1)
    children = exp.children()
    tops = [c for r in exp.roots for c in (children[r] if added_root(exp, r) else [r])]
    out: list[PathSpread] = []

    def ordered(nodes: list[int]) -> list[int]:
        return sorted(nodes, key=lambda c: (-totals[c], names[exp.cnodes[c].region]))

    stack: list[tuple[int, tuple[str, ...]]] = [(c, ()) for c in reversed(ordered(tops))]
    while stack:
        c, above = stack.pop()
        path = (*above, names[exp.cnodes[c].region])
        name = ";".join(path)
        out.append(PathSpread(path, len(path),
                              statistic(name, "callpath", list(zip(inclusive[c].tolist(), who, strict=True))),
                              statistic(name, "callpath", list(zip(exclusive[c].tolist(), who, strict=True)))))
        stack.extend((k, path) for k in reversed(ordered(children[c])))
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


class Converted:
    """Reports as their own documents' experiments (experiments.from_report
    with for_reports), converted one at a time each time they are
    iterated: what a combination's reports list of its members where the
    merge does not keep what a member's report shows (a profile's source
    lines and sampled PCs), without holding them all at once."""

    def __init__(self, reports: list) -> None:
        self.reports = reports

    def __len__(self) -> int:
        return len(self.reports)

    def __iter__(self) -> Iterator[Experiment]:
        from psuite.analysis import experiments

        for r in self.reports:
            yield experiments.from_report(r, for_reports=True)


def summarize(reports: list) -> MultiReport:
    """The combination of single reports of one kind, process totals set
    apart."""
    same_sampling([r for r in reports if isinstance(r, ProfileReport)])
    multi = MultiReport()
    multi.reports, multi.totals = split_totals(reports)
    _keep_total_callpaths(multi)
    if not multi.reports:
        return multi
    from psuite.analysis import experiments

    # one model for the statistics and every output of the combination: the merge of its members, as the
    # reports render it (counting reports: each member's events as metric columns, its run description)
    multi.experiment = experiments.from_report(MultiReport(reports=list(multi.reports)), for_reports=True)
    multi.total_experiments = Converted(multi.totals)
    if isinstance(multi.reports[0], ProfileReport):
        multi.member_experiments = Converted(multi.reports)
        multi.statistics = function_spread(multi.reports, multi.experiment)
        multi.callpath_statistics = callpath_spread(multi, multi.experiment)
    else:
        multi.statistics = compute(multi.reports, multi.experiment)
    return multi
