"""CSV output: one row per event and per metric of every counting report,
one per resolved location of every profile, one per figure of a resource
report (kind "resource"); for a combination, the rows
of every report combined (ready for pandas to group).

Columns (stable): source, hostname, pid, thread, kind ("event"|"metric"|
"location"), name, value, description.  For a location, name is the
function, value its samples, description "file:line (module)"."""

from __future__ import annotations

import csv
import io

from psuite.hwpc.names import canonical, descriptions
from psuite.report import CountReport, MultiReport, ProfileReport, ResourceReport

EXTENSION = ".csv"
COLUMNS = ("source", "hostname", "pid", "thread", "kind", "name", "value", "description")


def render(reports: list[CountReport], **_options) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    desc = descriptions()
    # A combined document (alone, or among other inputs): the rows of the reports combined.
    reports = [m for r in reports for m in (r.reports if isinstance(r, MultiReport) else [r])]
    for r in reports:
        if isinstance(r, ResourceReport):
            ident = (r.source, r.hostname, r.pid if r.pid is not None else "", "")
            for name, value in r.to_dict().items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value is not None:
                    w.writerow((*ident, "resource", name, value, ""))
            continue
        ident = (r.source, r.hostname, r.pid if r.pid is not None else "", r.thread)
        if isinstance(r, ProfileReport):
            for loc in sorted(r.locations, key=lambda loc: -loc.samples):
                w.writerow((*ident, "location", loc.function, loc.samples, f"{loc.file}:{loc.line} ({loc.module})"))
            continue
        for e in r.events:
            w.writerow((*ident, "event", e.name, e.count, e.description or desc.get(canonical(e.name), "")))
        for m in r.metrics:
            w.writerow((*ident, "metric", m.name, repr(m.value), m.description))
    return out.getvalue()
