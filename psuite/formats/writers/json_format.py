"""JSON output.  Schema "psuite.count/1", stable:

{"schema": "psuite.count/1", "reports": [ {
    "source", "version", "generator", "date", "hostname", "domainname", "pid",
    "thread" (an int, docs/formats/numbering.md, or null), "username", "command", "md5sum",
    "buildid" (GNU build-id, hex, or ""), "annotation",
    "wallclock", "usertime", "systemtime"          (seconds, or null),
    "counter_class", "counter_version", "domain", "multiplexed",
    "machine": {cpu_count, vendor, brand, family, model, stepping, mhz,
                hypervisor, caches: [...], tlbs: [...], memory_mb, page_size} | null,
    "events":  [{"name", "count", "type", "derived", "description" (the document's,
                 else psuite's catalogue's, as CSV and the text report show it)}],
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
psuite.model.report.ResourceReport.  A mix of kinds is "psuite.report/1"; every
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
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring_ascii as _escape  # json.dumps's own, for its ensure_ascii
from operator import attrgetter

from psuite.formats import native_rows
from psuite.formats.writers import documents
from psuite.model.report import (
    CountReport,
    Location,
    ModuleSamples,
    MultiReport,
    ProfileReport,
    ResourceReport,
)

_MODULE, _FILE, _FUNCTION = attrgetter("module"), attrgetter("file"), attrgetter("function")
_LINE, _SAMPLES = attrgetter("line"), attrgetter("samples")

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


def render(reports: list, **_options) -> str:
    return "".join(_pieces(reports))


def render_chunks(reports: list, **_options) -> Iterator[str]:
    """render() in pieces: a counting report of a million events is
    encoded a block of events at a time, never as one dict per event."""
    return _pieces(reports)


def _pieces(reports: list) -> Iterator[str]:
    """render()'s text in pieces, the long lists of a profile each a piece
    of its own, a counting report's events a block at a time: joined once
    (or written one after the other), never copied into a larger string
    step by step.  A counting document's experiment (writers.counts) is
    each of its locations' reports."""
    if len(reports) == 1 and isinstance(reports[0], MultiReport):
        schema = "psuite.multiprofile/1" if reports[0].of_profiles else "psuite.multi/1"
        yield '{"schema": ' + json.dumps(schema) + ", "
        yield from _multi(reports[0], None, opened=True)
        yield "\n"
        return
    reports = [c for r in reports for c in (documents.of_experiment(r) if documents.is_counts(r) else
                                            documents.profiles(r) if documents.is_profile(r) else [r])]

    def kind(r) -> str:
        if isinstance(r, MultiReport):
            return "multiprofile" if r.of_profiles else "multi"
        if isinstance(r, (ProfileReport, documents.Lines)):
            return "profile"
        return "resource" if isinstance(r, ResourceReport) else "count"

    kinds = {kind(r) for r in reports}
    one = kinds.pop() if len(kinds) == 1 else None
    schema = f"psuite.{one}/1" if one and not one.startswith("multi") else "psuite.report/1"
    # {"schema": ..., "reports": [...]} as json.dumps writes it, each report
    # encoded on its own (a profile's long lists without a dict per entry).
    yield '{"schema": ' + json.dumps(schema) + ', "reports": ['
    for i, r in enumerate(reports):
        if i:
            yield ", "
        yield from _report(r, kind(r) if schema == "psuite.report/1" else None)
    yield "]}\n"


def _report(r, kind: str | None) -> Iterator[str]:
    """One report's JSON text in pieces, as _dumps(r.to_dict()) without its newline."""
    if isinstance(r, (CountReport, documents.Counts)):
        return _counts(documents.of_report(r) if isinstance(r, CountReport) else r, kind)
    if isinstance(r, documents.Lines):  # a profile document's experiment
        return iter(_profile_of_model(r, kind))
    if type(r) is ProfileReport:
        pieces = _profile(r, kind)
        if pieces is not None:
            return pieces
    if isinstance(r, MultiReport):
        return _multi(r, kind)
    d = r.to_dict()
    if kind is not None:
        d["kind"] = kind
    return iter([_dumps(d)[:-1]])


def _multi(m: MultiReport, kind: str | None, opened: bool = False) -> Iterator[str]:
    """A combination as MultiReport.to_dict() gives it (without its
    enclosing "{" when opened: the schema comes first), a combination of
    counting reports from its experiment, of profiles from each member's
    (documents.combined)."""
    if not documents.is_combined(m):  # a MultiReport the Python API made
        d = m.to_dict()
        if kind is not None:
            d["kind"] = kind
        text = _dumps(d)[:-1]
        yield text[1:] if opened else text
        return
    members, totals = documents.combined(m)
    yield ("" if opened else "{") + '"reports": ['
    yield from _joined(members)
    yield '], "statistics": ' + _dumps([dict(vars(s)) for s in m.statistics])[:-1] + ', "totals": ['
    yield from _joined(totals)
    yield "]"
    if m.callpath_statistics:
        yield ', "callpath_statistics": ' + _dumps(m.to_dict(members=False)["callpath_statistics"])[:-1]
    yield (f', "kind": {json.dumps(kind)}' if kind is not None else "") + "}"


def _joined(reports: Iterable) -> Iterator[str]:
    for i, r in enumerate(reports):
        if i:
            yield ", "
        yield from _report(r, None)


def _counts(c: documents.Counts, kind: str | None) -> Iterator[str]:
    """A counting report as CountReport.to_dict() gives it, its events
    encoded a block at a time."""
    d = c.run.to_dict()  # its events and metrics are empty
    d["metrics"] = [{"name": m.name, "value": m.value, "description": m.description, "unit": m.unit}
                    for m in c.metrics]
    if kind is not None:
        d["kind"] = kind
    # The one unescaped '"events": []' is the key's: quotes in strings are escaped.
    head, tail = _dumps(d)[:-1].split('"events": []', 1)
    yield head + '"events": ['
    for k, block in enumerate(c.blocks):
        yield (", " if k else "") + _dumps([{"name": n, "count": count, "type": t, "derived": derived,
                                             "description": description, "counted_as": spelt}
                                            for n, count, t, derived, description, spelt in block])[1:-2]
    yield "]" + tail


def _profile_of_model(p: documents.Lines, kind: str | None) -> list[str]:
    """A profile document's JSON from its experiment: as ProfileReport.
    to_dict gives the document's, its source lines, sampled PCs and call
    paths the model's."""
    r = dataclasses.replace(p.run, locations=[], modules=[])
    locations = _location_columns(p.modules, p.files, p.functions, p.lines, p.samples)
    modules = _modules(p.sampled)
    d = r.to_dict(calltree=p.calltree)
    if locations is None or modules is None:  # values not of the plain types: through json whole
        d["locations"] = [{"module": m, "file": f, "function": fn, "line": ln, "samples": n}
                          for m, f, fn, ln, n in zip(p.modules, p.files, p.functions, p.lines, p.samples,
                                                     strict=True)]
        d["modules"] = [dataclasses.asdict(m) for m in p.sampled]
        locations, modules = None, None
    return _profile_pieces(d, kind, locations, modules)


def _profile(r: ProfileReport, kind: str | None) -> list[str] | None:
    """A profile's JSON text written directly, in pieces: its locations and
    sampled PCs (tens of thousands) as text, the rest through json.  None
    when a value is not of the plain types the direct path writes exactly
    as json.dumps would."""
    locations = _locations(r.locations)
    modules = _modules(r.modules)
    if locations is None or modules is None:
        return None
    return _profile_pieces(dataclasses.replace(r, locations=[], modules=[]).to_dict(), kind, locations, modules)


def _profile_pieces(d: dict, kind: str | None, locations: str | None, modules: list[str] | None) -> list[str]:
    """The profile's dict as JSON, its locations and modules the text given
    (None: the dict's own)."""
    if kind is not None:
        d["kind"] = kind
    parts = ["{"]
    for key, value in d.items():
        if len(parts) > 1:
            parts.append(", ")
        parts.append(f"{json.dumps(key)}: ")
        if key == "locations" and locations is not None:
            parts.append(locations)
        elif key == "modules" and modules is not None:
            parts += modules
        else:
            parts.append(_dumps(value)[:-1])
    parts.append("}")
    return parts


def _locations(locations: list) -> str | None:
    """[{"module", "file", "function", "line", "samples"}, ...] as
    json.dumps writes them, each distinct string escaped once."""
    if not locations:
        return "[]"
    if set(map(type, locations)) != {Location}:
        return None
    return _location_columns(list(map(_MODULE, locations)), list(map(_FILE, locations)),
                             list(map(_FUNCTION, locations)), list(map(_LINE, locations)),
                             list(map(_SAMPLES, locations)))


def _location_columns(modules: list, files: list, functions: list, lines: list, samples: list) -> str | None:
    """_locations of the columns."""
    if not lines:
        return "[]"
    if set(map(type, lines)) != {int} or set(map(type, samples)) != {int}:
        return None
    text = native_rows.json_locations(modules, files, functions, lines, samples)
    if text is not None:
        return text
    try:
        strings = set(modules)
        strings.update(files, functions)
        escaped = dict(zip(strings, map(_escape, strings), strict=True))  # each distinct string once
    except TypeError:  # not a string
        return None
    modules, files, functions = (list(map(escaped.__getitem__, column)) for column in (modules, files, functions))
    return "[" + ", ".join(map('{"module": %s, "file": %s, "function": %s, "line": %d, "samples": %d}'.__mod__,
                               zip(modules, files, functions, lines, samples, strict=True))) + "]"


def _modules(modules: list) -> list[str] | None:
    """[{"file", "offset", "samples": {pc: count}}, ...] as json.dumps
    writes them, in pieces."""
    out = ["["]
    for m in modules:
        samples = m.samples
        if type(m) is not ModuleSamples or type(m.offset) is not int or type(samples) is not dict or \
                (samples and (set(map(type, samples)) != {int} or set(map(type, samples.values())) != {int})):
            return None
        try:
            file = _escape(m.file)
        except TypeError:
            return None
        table = native_rows.json_samples(samples)
        if table is None:
            table = ", ".join([f'"{pc}": {n}' for pc, n in samples.items()])
        out += [", " if len(out) > 1 else "", f'{{"file": {file}, "offset": {m.offset}, "samples": {{', table, "}}"]
    out.append("]")
    return out
