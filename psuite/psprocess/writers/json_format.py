"""JSON output.  Schema "psuite.count/1", stable:

{"schema": "psuite.count/1", "reports": [ {
    "source", "version", "generator", "date", "hostname", "domainname", "pid",
    "thread", "username", "command", "md5sum", "buildid" (GNU build-id, hex, or ""), "annotation",
    "wallclock", "usertime", "systemtime"          (seconds, or null),
    "counter_class", "counter_version", "domain", "multiplexed",
    "machine": {cpu_count, vendor, brand, family, model, stepping, mhz,
                hypervisor, caches: [...], tlbs: [...], memory_mb, page_size} | null,
    "events":  [{"name", "count", "type", "derived", "description"}],
    "metrics": [{"name", "value", "description", "unit"}] } ] }

Profiles: schema "psuite.profile/1", each report with the execution fields
above and "profile_class", "profile_version", "event", "event_type",
"domain", "threshold", "total_samples", "mapper",
    "modules":   [{"file", "offset", "samples": {pc: count}}],
    "locations": [{"module", "file", "function", "line", "samples"}],
    "callpaths": null, or for a profile recorded with psrun --callpath
                 {"source", "profile_file", "event", "threshold", "maxdepth",
                  "unwinder", "samples", "truncated", "lost",
                  "modules": [{"id", "file", "offset"}],
                  "threads": [{"thread", "tid", "samples", "truncated", "lost",
                               "contexts"}]},
    "calltree":  [{"thread", "tid", "path" (function names, outermost
                   first), "function", "module", "inlined", "inclusive",
                   "exclusive", "depth"}] (one per calling context, parents
                   first; empty without call paths).
Combined reports (psprocess -c): schema "psuite.multi/1" with "reports"
(as above) and "statistics": [{"name", "kind" ("event"|"metric"), "count",
"sum", "mean", "min", "min_who", "max", "max_who", "stddev" (population),
"q1", "median", "q3", "imbalance" (max/mean or null)}].  Combined profiles:
"psuite.multiprofile/1", the profiles as above and one statistic of kind
"function" per function (its samples in each profile, 0 where absent);
with call paths also "callpath_statistics": [{"path", "depth", "inclusive",
"exclusive"}] per context of the merged call tree (tree order), inclusive
and exclusive each a statistic as above across every thread combined.
Resource reports (psrun -R): schema "psuite.resource/1", the fields of
psuite.report.ResourceReport.  A mix of kinds is "psuite.report/1"; every
report then says its "kind" ("count", "profile" or "resource", or "multi"
and "multiprofile" for a combined document given among other inputs, with
the fields of psuite.multi/1 and psuite.multiprofile/1).  Combined
documents also list the process totals of `psrun -p` runs, left out of the
statistics, under "totals".  Written compactly (no indentation): the
standard library's fast encoder only works that way, and a profile has
tens of thousands of locations.  Always strict JSON: a number that is not
finite is written as null, never as Infinity or NaN.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterator

from psuite.report import CountReport, MultiReport, ProfileReport, ResourceReport

EXTENSION = ".json"
SCHEMA = "psuite.count/1"


def _dumps(data: dict) -> str:
    try:
        return json.dumps(data, allow_nan=False) + "\n"
    except ValueError:  # a non-finite float somewhere: rare, so only then walk the data
        return json.dumps(_finite(data), allow_nan=False) + "\n"


def _finite(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def render(reports: list[CountReport], **_options) -> str:
    if len(reports) == 1 and isinstance(reports[0], MultiReport):
        schema = "psuite.multiprofile/1" if reports[0].of_profiles else "psuite.multi/1"
        return _dumps({"schema": schema, **reports[0].to_dict()})
    def kind(r) -> str:
        if isinstance(r, MultiReport):
            return "multiprofile" if r.of_profiles else "multi"
        return "profile" if isinstance(r, ProfileReport) else "resource" if isinstance(r, ResourceReport) else "count"

    kinds = {kind(r) for r in reports}
    one = kinds.pop() if len(kinds) == 1 else None
    schema = f"psuite.{one}/1" if one and not one.startswith("multi") else "psuite.report/1"
    out = []
    for r in reports:
        d = r.to_dict()
        if schema == "psuite.report/1":
            d["kind"] = kind(r)
        out.append(d)
    return _dumps({"schema": schema, "reports": out})


BLOCK = 20_000  # events encoded at a time


def render_chunks(reports: list, **options) -> Iterator[str]:
    """render() in pieces: a counting report of a million events is
    encoded a block of events at a time, never as one dict per event."""
    if len(reports) != 1 or type(reports[0]) is not CountReport or len(reports[0].events) <= BLOCK:
        yield render(reports, **options)
        return
    r = reports[0]
    text = render([dataclasses.replace(r, events=[])])
    # The one unescaped '"events": []' is the key's: quotes in strings are escaped.
    head, tail = text.split('"events": []', 1)
    yield head + '"events": ['
    for start in range(0, len(r.events), BLOCK):
        block = [{"name": e.name, "count": e.count, "type": e.type, "derived": e.derived,
                  "description": e.description} for e in r.events[start:start + BLOCK]]
        yield (", " if start else "") + _dumps(block)[1:-2]
    yield "]" + tail
