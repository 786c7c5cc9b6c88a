"""What psprocess's reports of a document read from the document's
experiment, psuite.analysis.experiments.from_report(report,
for_reports=True): the run's description (Location.run); of a counting
report (text, JSON, CSV, XML) its events from the experiment's metric
columns and its derived metrics (psmetrics', marked REPORT_METRIC)
evaluated on the model; of a profile (text, CSV) its samples by source
line (Experiment.lines).  The writers render these; a CountReport given
to them directly (the Python API's) is read the same way (`of_report`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from psuite.model.experiment import REPORT_METRIC, Experiment
from psuite.model.report import CountReport, Event, Metric, ProfileReport, event_descriptions

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
    return [_location(exp, j) for j, loc in enumerate(exp.locations) if loc.run is not None]


@dataclass
class Lines:
    """One profile document's samples by source line, as the writers show them."""

    run: ProfileReport  # the run's description; its locations, modules and call paths are empty
    modules: list[str]
    files: list[str]
    functions: list[str]
    lines: list[int]
    samples: list[int]


def profiles(exp: Experiment) -> list[Lines]:
    """Each profile document of the experiment (its locations share a run
    description), in the order of its first location: its rows of
    Experiment.lines, those at its locations or at -1 (its process)."""
    import numpy as np

    table = exp.lines
    out = []
    seen: dict[int, list[int]] = {}
    runs = []
    for j, loc in enumerate(exp.locations):
        if loc.run is not None:
            if id(loc.run) not in seen:
                seen[id(loc.run)] = []
                runs.append(loc.run)
            seen[id(loc.run)].append(j)
    columns = (table.modules, table.files, table.functions, table.lines, table.samples)
    for run in runs:
        if len(runs) == 1:  # the common case: the table is one document's
            out.append(Lines(run, *columns))
            continue
        rows = np.flatnonzero(np.isin(table.location, [-1, *seen[id(run)]])).tolist()
        out.append(Lines(run, *([column[i] for i in rows] for column in columns)))
    return out


def _location(exp: Experiment, j: int) -> Counts:
    cols = exp.columns
    root = cols.cnode

    def blocks() -> Iterator[list[tuple]]:
        for start in range(0, len(cols), BLOCK):
            stop = min(start + BLOCK, len(cols))
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

    metrics = []
    for m in exp.metrics:
        if m.attributes.get(REPORT_METRIC) != "yes":
            continue
        value = (exp.derived_values(m.name) if m.derived else exp.stored(m.name))[root, j].item()
        metrics.append(Metric(m.display, value, m.attributes.get("psuite::description", m.description),
                              m.attributes.get("psuite::unit", "")))
    return Counts(exp.locations[j].run, len(cols), blocks(), metrics, cols.displays)


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
