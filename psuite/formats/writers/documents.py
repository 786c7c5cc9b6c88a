"""What psprocess's reports (text, JSON, CSV, XML) of a document read
from the document's experiment, psuite.analysis.experiments.
from_report(report, for_reports=True): the run's description
(Location.run); of a counting report its events from the experiment's
metric columns and its derived metrics (psmetrics', marked
REPORT_METRIC) evaluated on the model; of a profile its samples by
source line (Experiment.lines), its sampled PCs (Experiment.addresses)
and each thread's call paths (the experiment's call tree).  The writers
render these; a CountReport given to them directly (the Python API's) is
read the same way (`of_report`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from psuite.model.experiment import REPORT_METRIC, Experiment
from psuite.model.report import (
    CountReport,
    Event,
    Metric,
    ModuleSamples,
    MultiReport,
    ProfileReport,
    event_descriptions,
)

FLAT_PROFILE = "psuite::flat"  # experiments.FLAT_PROFILE: a profile without call paths (no call-tree rows)

BLOCK = 20_000  # events read at a time: a report can hold a million


@dataclass
class Counts:
    """One location's counting report as the writers show it."""

    run: CountReport  # the run's description; its events and metrics are empty
    size: int  # the number of events
    blocks: Iterator[list[tuple[str, int | float, str, bool, str, str]]]
    # (name, count, type, derived, description, counted_as), BLOCK at a time
    metrics: list[Metric]
    names: list[str]  # the events' names, in order

    def names_width(self) -> int:
        """The longest event name's length."""
        return max(map(len, self.names), default=0)


def is_counts(item: object) -> bool:
    """A counting document's experiment (what the writers take beside documents)."""
    return isinstance(item, Experiment) and item.columns is not None


def is_profile(item: object) -> bool:
    """A profile document's experiment, with its samples by source line."""
    return isinstance(item, Experiment) and item.lines is not None


def of_experiment(exp: Experiment) -> list[Counts]:
    """Each location of the experiment that came from a document, in order."""
    rows = _metric_rows(exp)  # each metric evaluated once, not once per location
    return [_location(exp, j, rows) for j, loc in enumerate(exp.locations) if loc.run is not None]


def is_combined(item: object) -> bool:
    """A combination (psprocess -c) made by combine.summarize, with its experiment."""
    return isinstance(item, MultiReport) and item.experiment is not None


def combined(m: MultiReport) -> tuple[Iterable[Counts | Lines], list[Counts | Lines]]:
    """The reports a combination lists, and the process totals of `psrun
    -p` runs it left out of its statistics, from the model: a combination
    of counting reports from its experiment (its events as metric
    columns, each location's run), in system-tree order (as its statistics
    and its cube have them), each member with the events and metrics it
    has; a combination of profiles, and the totals, from each one's own
    document experiment (MultiReport.member_experiments and
    total_experiments), converted one at a time."""

    def own(experiments: Iterable[Experiment]) -> Iterator[Counts | Lines]:
        for exp in experiments:
            yield from of_experiment(exp) if is_counts(exp) else profiles(exp)

    totals = list(own(m.total_experiments or ()))
    if is_counts(m.experiment):
        return of_experiment(m.experiment), totals
    return own(m.member_experiments or ()), totals


@dataclass
class Lines:
    """One profile document as the writers show it, from its experiment."""

    run: ProfileReport  # the run's description: its locations and modules empty, its call paths' facts
    modules: list[str]  # the samples by source line (Experiment.lines), a column each
    files: list[str]
    functions: list[str]
    lines: list[int]
    samples: list[int]
    sampled: list[ModuleSamples] = field(default_factory=list)  # the sampled PCs per module (addresses)
    calltree: list[dict] = field(default_factory=list)  # each thread's call paths, as calltree_records


def profiles(exp: Experiment, sampled: bool = True) -> list[Lines]:
    """Each profile document of the experiment (its locations share a run
    description), in the order of its first location: its rows of
    Experiment.lines and Experiment.addresses (those at its locations or
    at -1, its process; sampled=False: none, for the reports that do not
    list them), and its threads' call paths."""
    import numpy as np

    table = exp.lines
    seen: dict[int, list[int]] = {}
    runs = []
    for j, loc in enumerate(exp.locations):
        if loc.run is not None:
            if id(loc.run) not in seen:
                seen[id(loc.run)] = []
                runs.append(loc.run)
            seen[id(loc.run)].append(j)
    columns = (table.modules, table.files, table.functions, table.lines, table.samples)
    trees = _calltree_rows(exp) if exp.attributes.get(FLAT_PROFILE) is None else {}
    out = []
    for run in runs:
        where = seen[id(run)]
        if len(runs) == 1:  # the common case: the table is one document's
            lines = Lines(run, *columns)
        else:
            rows = np.flatnonzero(np.isin(table.location, [-1, *where])).tolist()
            lines = Lines(run, *([column[i] for i in rows] for column in columns))
        if sampled:  # (a million PCs: only for the reports that list them, JSON and XML)
            lines.sampled = _sampled(exp, where)
        lines.calltree = [row for j in where for row in trees.get(j, [])]
        out.append(lines)
    return out


def _sampled(exp: Experiment, where: list[int]) -> list[ModuleSamples]:
    """The sampled PCs of the document at locations `where` (and -1), per
    module in the document's order."""
    import numpy as np

    a = exp.addresses
    if a is None:
        return []
    mine = np.isin(a.location, [-1, *where])
    out = []
    for m, module in enumerate(a.modules):
        rows = mine & (a.module == m)
        samples: dict[int, int] = {}
        for pc, n in zip(a.pc[rows].tolist(), a.samples[rows].tolist(), strict=True):
            samples[pc] = samples.get(pc, 0) + n
        out.append(ModuleSamples(module.file, module.offset, samples, module.buildid))
    return out


def _calltree_rows(exp: Experiment) -> dict[int, list[dict]]:
    """Per location (a thread), its call paths as ProfileReport.
    calltree_records gives them from the document: "thread", "tid",
    "path" (the recorded function names, outermost first), "function",
    "module", "inlined", "inclusive" and "exclusive" samples, "depth";
    parents first, siblings in the experiment's order; the call paths the
    thread took samples in (inclusive), as its recorded tree holds them."""
    import numpy as np

    from psuite.formats.exporters.calltree_common import OBJECT, RECORDED_FUNCTION, added_root

    if not exp.cnodes or "samples" not in exp.values:
        return {}
    own = exp.stored("samples")
    inclusive = exp.inclusive("samples")
    kids = exp.children()
    frames = []
    for r in exp.regions:
        inlined = r.description == "inlined into its caller"
        function = r.attributes.get(RECORDED_FUNCTION) or r.name
        frames.append((function, r.attributes.get(OBJECT) or r.module, inlined))
    tops = [c for root in exp.roots for c in (kids[root] if added_root(exp, root) else [root])]
    out: dict[int, list[dict]] = {}
    for j, loc in enumerate(exp.locations):
        if "thread" not in loc.attributes:
            continue
        thread = int(loc.attributes["thread"])
        tid = int(loc.attributes["tid"]) if "tid" in loc.attributes else None
        taken = np.flatnonzero(inclusive[:, j] > 0)
        if not len(taken):
            continue
        took = set(taken.tolist())
        rows = []
        stack = [(c, ()) for c in reversed(tops) if c in took]
        while stack:
            c, above = stack.pop()
            function, module, inlined = frames[exp.cnodes[c].region]
            path = (*above, function)
            rows.append({"thread": thread, "tid": tid, "path": path, "function": function, "module": module,
                         "inlined": inlined, "inclusive": inclusive[c, j].item(), "exclusive": own[c, j].item(),
                         "depth": len(path)})
            stack.extend((k, path) for k in reversed(kids[c]) if k in took)
        out[j] = rows
    return out


def _location(exp: Experiment, j: int, metric_rows: list) -> Counts:
    """Location j's report: the events and metrics it listed (a member of
    a combination may lack some the others have)."""
    cols = exp.columns
    at = cols.at(j)
    if at is None:  # every event: in blocks of the columns themselves
        return Counts(exp.locations[j].run, len(cols), _blocks(cols, j, 0, len(cols)), _metrics(exp, j, metric_rows),
                      cols.displays)
    import numpy as np

    displays = [cols.displays[i] for i in at.tolist()]

    def blocks() -> Iterator[list[tuple]]:  # the runs of consecutive rows it listed, each as above
        if not len(at):
            return
        breaks = np.flatnonzero(np.diff(at) != 1) + 1
        for run in np.split(at, breaks):
            yield from _blocks(cols, j, int(run[0]), int(run[-1]) + 1)

    return Counts(exp.locations[j].run, len(at), blocks(), _metrics(exp, j, metric_rows), displays)


def _blocks(cols, j: int, first: int, end: int) -> Iterator[list[tuple]]:
    """Rows first..end of location j's events, BLOCK at a time."""
    for start in range(first, end, BLOCK):
        stop = min(start + BLOCK, end)
        counts = cols.ints[start:stop, j].tolist()
        for k in (~cols.integer[start:stop]).nonzero()[0].tolist():  # DOUBLE events (rare)
            whole = cols.exact.get(start + k)
            counts[k] = whole[j] if whole is not None and whole[j] is not None else cols.floats[start + k, j].item()
        attrs = cols.attributes
        if not attrs:  # the common case: every event native, counted as named
            yield [(name, count, "native", False, description, "")
                   for name, count, description in zip(cols.displays[start:stop], counts,
                                                       cols.descriptions[start:stop], strict=True)]
            continue
        yield [(name, count, *_kind(attrs.get(i)), description, spelt)
               for i, name, count, description, spelt in zip(
                   range(start, stop), cols.displays[start:stop], counts, cols.descriptions[start:stop],
                   (attrs.get(i, {}).get("psuite::counted_as", "") for i in range(start, stop)), strict=True)]


def _metric_rows(exp: Experiment) -> list:
    """The reports' derived metrics (psmetrics', REPORT_METRIC), each with
    its values at the columns' call path, per location."""
    root = exp.columns.cnode
    return [(m, (exp.derived_values(m.name) if m.derived else exp.stored(m.name))[root])
            for m in exp.metrics if m.attributes.get(REPORT_METRIC) == "yes"]


def _metrics(exp: Experiment, j: int, rows: list) -> list[Metric]:
    """Location j's derived metrics (_metric_rows) that its report has."""
    listed_of = exp.columns.metrics_listed
    out = []
    for m, row in rows:
        listed = listed_of.get(m.name)
        if listed is not None and not listed[j]:
            continue
        out.append(Metric(m.display, row[j].item(), m.attributes.get("psuite::description", m.description),
                          m.attributes.get("psuite::unit", "")))
    return out


def _kind(attrs: dict[str, str] | None) -> tuple[str, bool]:
    """An event's type and whether it is derived, from its metric's attributes."""
    if not attrs:
        return ("native", False)
    return (attrs.get("psuite::event_type", "native"), attrs.get("psuite::derived_event") == "yes")


def of_report(r: CountReport) -> Counts:
    """A CountReport read as the writers read an experiment's location."""

    def blocks() -> Iterator[list[tuple]]:
        for start in range(0, len(r.events), BLOCK):
            events: list[Event] = r.events[start:start + BLOCK]
            yield [(e.name, e.count, e.type, e.derived, description, e.counted_as)
                   for e, description in zip(events, event_descriptions(events), strict=True)]

    from dataclasses import replace

    return Counts(replace(r, events=[], metrics=[]), len(r.events), blocks(), list(r.metrics),
                  [e.name for e in r.events])


def profile_document(p: Lines) -> ProfileReport:
    """The profile document of a profile's experiment, for the writer of
    PerfSuite's XML, which writes that document model: the run with its
    source lines (and sampled PCs) from the model."""
    from dataclasses import replace

    from psuite.model.report import Location

    return replace(p.run, modules=list(p.sampled), locations=[
        Location(m, f, fn, ln, n) for m, f, fn, ln, n in zip(p.modules, p.files, p.functions, p.lines, p.samples,
                                                             strict=True)])
