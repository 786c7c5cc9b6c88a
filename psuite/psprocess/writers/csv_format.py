"""CSV output: one row per event and per metric of every report.

Columns (stable): source, hostname, pid, thread, kind ("event"|"metric"),
name, value, description."""

from __future__ import annotations

import csv
import io

from psuite.hwpc.names import canonical, descriptions
from psuite.report import CountReport

EXTENSION = ".csv"
COLUMNS = ("source", "hostname", "pid", "thread", "kind", "name", "value", "description")


def render(reports: list[CountReport], **_options) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    desc = descriptions()
    for r in reports:
        ident = (r.source, r.hostname, r.pid if r.pid is not None else "", r.thread)
        for e in r.events:
            w.writerow((*ident, "event", e.name, e.count, e.description or desc.get(canonical(e.name), "")))
        for m in r.metrics:
            w.writerow((*ident, "metric", m.name, repr(m.value), m.description))
    return out.getvalue()
