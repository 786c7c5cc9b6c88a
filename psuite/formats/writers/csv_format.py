"""CSV output: one row per event and per metric of every counting report,
one per resolved location of every profile, one per figure of a resource
report (kind "resource"); for a combination, the rows
of every report combined (ready for pandas to group).

Columns (stable): source, hostname, pid, thread, kind ("event"|"metric"|
"location"), name, value, description.  For a location, name is the
function, value its samples, description "file:line (module)".

Profiles with call paths add one row per calling context of every
thread (kind "callpath": name the leaf function, value its inclusive
samples, description its module, thread the psuite thread number) and
three columns after these (empty in the other rows): path (the frames'
functions, outermost first, joined with ";"), exclusive (samples), depth."""

from __future__ import annotations

import csv
import io

from psuite.formats.writers import documents
from psuite.model.report import CountReport, MultiReport, ProfileReport, ResourceReport

EXTENSION = ".csv"
COLUMNS = ("source", "hostname", "pid", "thread", "kind", "name", "value", "description")


CALLPATH_COLUMNS = ("path", "exclusive", "depth")


class _Padded:
    """A csv writer whose rows get empty cells for the call-path columns."""

    def __init__(self, writer, extra: int) -> None:
        self.writer, self.pad = writer, ("",) * extra

    def writerow(self, row) -> None:
        self.writer.writerow((*row, *self.pad))

    def writerows(self, rows) -> None:
        self.writer.writerows([(*row, *self.pad) for row in rows])


def render(reports: list, **_options) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    # A combined document (alone, or among other inputs): the rows of the reports combined; a counting
    # document's experiment (writers.counts): each of its locations' reports.
    reports = [m for r in reports for m in (documents.combined(r)[0] if documents.is_combined(r) else
                                            r.reports if isinstance(r, MultiReport) else
                                            documents.of_experiment(r) if documents.is_counts(r) else
                                            documents.profiles(r, sampled=False) if documents.is_profile(r) else [r])]
    trees = {id(r): r.calltree_records() for r in reports if isinstance(r, ProfileReport) and r.callpaths}
    trees.update((id(p), p.calltree) for p in reports if isinstance(p, documents.Lines))  # the model's
    if any(trees.values()):
        w = _Padded(w, len(CALLPATH_COLUMNS))
        w.writer.writerow(COLUMNS + CALLPATH_COLUMNS)
    else:
        w.writerow(COLUMNS)
    for r in reports:
        if isinstance(r, ResourceReport):
            ident = (r.source, r.hostname, r.pid if r.pid is not None else "", "")
            for name, value in r.to_dict().items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value is not None:
                    w.writerow((*ident, "resource", name, value, ""))
            continue
        if isinstance(r, (ProfileReport, documents.Lines)):
            p = r
            r = p.run if isinstance(p, documents.Lines) else p
            ident = (r.source, r.hostname, r.pid if r.pid is not None else "",
                     r.thread if r.thread is not None else "")
            if isinstance(p, documents.Lines):  # the model's source lines, the most samples first
                for i in sorted(range(len(p.samples)), key=lambda i: -p.samples[i]):
                    w.writerow((*ident, "location", p.functions[i], p.samples[i],
                                f"{p.files[i]}:{p.lines[i]} ({p.modules[i]})"))
            else:
                for loc in sorted(r.locations, key=lambda loc: -loc.samples):
                    w.writerow((*ident, "location", loc.function, loc.samples,
                                f"{loc.file}:{loc.line} ({loc.module})"))
            for row in trees.get(id(p), []):
                w.writer.writerow((r.source, r.hostname, r.pid if r.pid is not None else "", row["thread"], "callpath",
                                   row["function"], row["inclusive"], row["module"], ";".join(row["path"]),
                                   row["exclusive"], row["depth"]))
            continue
        c = documents.of_report(r) if isinstance(r, CountReport) else r
        ident = (c.run.source, c.run.hostname, c.run.pid if c.run.pid is not None else "",
                 c.run.thread if c.run.thread is not None else "")
        for block in c.blocks:
            w.writerows([(*ident, "event", name, count, description)
                         for name, count, _, _, description, _ in block])
        for m in c.metrics:
            w.writerow((*ident, "metric", m.name, repr(m.value), m.description))
    return out.getvalue()
