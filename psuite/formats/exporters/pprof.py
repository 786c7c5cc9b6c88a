"""pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
gzip-compressed, as `go tool pprof` and pprof read it.

Rendered from the analysis model (psuite.model.experiment.Experiment):

- sample_type: for a profile samples/count, then for the ITIMER_ sources
  cpu/nanoseconds (wall/nanoseconds for ITIMER_REAL): its "time" metric;
  for event-overflow sources <event>/count: its estimated "events".  For
  a cube without samples (a Score-P profile) time/nanoseconds, else its
  first measured metric.  The last is the default pprof shows;
  period_type and period say what one sample stands for.
- One Sample per call path and location (thread) with a value of its
  own, in call-tree order (depth first), its locations leaf first (the
  program root psuite adds left out), labelled thread=<the location's name: "rank R thread T", "host pid P
  thread T">, so that `-tagfocus thread=...` picks threads while the
  tables sum them all.
- Location: a call path with the inlined ones below it, as pprof models
  inlining (one address, several Lines, the innermost first); its line
  numbers are the call paths' lines (the sampled line, or the call site
  in a caller).  Addresses are not in the model: locations have address 0,
  are identified by their lines, and every Mapping (one per object file,
  a region's OBJECT attribute) says it has functions, file names, line
  numbers and inline frames, so that pprof does not try to symbolise them
  again.  A Score-P cube's regions name source files only: no mappings.
- Function: one per (name, source file); an unresolved function is named
  by its object file in brackets.
- duration: the longest location's run (its WALLCLOCK attribute).

Encoded here by hand (a varint and length-delimited writer) rather than
with the protobuf package: seven small message types, no generated code
to keep in step without protoc, no run-time dependency for one export,
and samples can be streamed into the gzip stream as the call tree is
walked, each path's packed location ids made from its caller's (protobuf's
repeated fields may come in any order; the tables, which the samples
build, follow them)."""

from __future__ import annotations

import gzip
import os

import numpy as np

from psuite._version import __version__
from psuite.formats.exporters.calltree_common import (
    OBJECT,
    SAMPLED_ON,
    WALLCLOCK,
    added_root,
    as_int,
    check_call_paths,
    location_name,
    region_names,
    text,
    time_metric,
    weight_metric,
)
from psuite.model.experiment import Experiment

EXTENSION = ".pb.gz"

# Field numbers of profile.proto
P_SAMPLE_TYPE, P_SAMPLE, P_MAPPING, P_LOCATION, P_FUNCTION, P_STRING_TABLE = 1, 2, 3, 4, 5, 6
P_DURATION_NANOS, P_PERIOD_TYPE, P_PERIOD, P_COMMENT = 10, 11, 12, 13
VARINT, BYTES = 0, 2


def varint(n: int) -> bytes:
    """Unsigned LEB128, as protobuf writes every integer of this format
    (int64 values here are never negative)."""
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field_varint(number: int, n: int) -> bytes:
    return varint(number << 3 | VARINT) + varint(n) if n else b""  # proto3: zero is the default, left out


def field_bytes(number: int, data: bytes) -> bytes:
    return varint(number << 3 | BYTES) + varint(len(data)) + data


def field_packed(number: int, values: list[int]) -> bytes:
    return field_bytes(number, b"".join(map(varint, values))) if values else b""


class _Strings:
    """The string table: index 0 is "", as the format requires."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.index)
        return i


class _Tables:
    """Mappings, functions and locations, numbered from 1 as they are met."""

    def __init__(self, strings: _Strings) -> None:
        self.s = strings
        self.mappings: dict[str, int] = {}
        self.functions: dict[tuple[str, str], int] = {}
        self.locations: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}

    def mapping(self, module: str) -> int:
        if not module:
            return 0
        return self.mappings.setdefault(module, len(self.mappings) + 1)

    def function(self, name: str, file: str) -> int:
        return self.functions.setdefault((name, file), len(self.functions) + 1)

    def location(self, mapping: int, lines: tuple[tuple[int, int], ...]) -> int:
        """The location of a call path's lines (its own and those of the
        paths inlined into it, the innermost first) in a mapping."""
        return self.locations.setdefault((mapping, lines), len(self.locations) + 1)

    def encode(self) -> bytes:
        s = self.s
        out = bytearray()
        for module, i in self.mappings.items():
            out += field_bytes(P_MAPPING, field_varint(1, i) + field_varint(5, s(text(module))) +
                               field_varint(7, 1) + field_varint(8, 1) + field_varint(9, 1) + field_varint(10, 1))
        for (mapping, lines), i in self.locations.items():
            body = field_varint(1, i) + field_varint(2, mapping)
            for function, line in lines:
                body += field_bytes(4, field_varint(1, function) + field_varint(2, line))
            out += field_bytes(P_LOCATION, body)
        for (name, file), i in self.functions.items():
            n = s(name)
            out += field_bytes(P_FUNCTION, field_varint(1, i) + field_varint(2, n) + field_varint(3, n) +
                               field_varint(4, s(file)))
        return bytes(out)


def _regions(exp: Experiment) -> tuple[list[tuple[str, str]], list[str], list[bool]]:
    """Per region: its function (name, source file), its object file ("" when
    not known) and whether it is inlined into its caller.  A psuite profile's
    region without OBJECT names its object file (an unresolved function); a
    Score-P cube's regions name source files only."""
    sampled = SAMPLED_ON in exp.attributes
    functions, objects, inlined = [], [], []
    for r, (name, inl) in zip(exp.regions, region_names(exp), strict=True):
        if OBJECT in r.attributes:
            obj, file = r.attributes[OBJECT], r.module
        else:
            obj, file = (r.module, "") if sampled else ("", r.module)
        functions.append((name, text(file)))
        objects.append(obj)
        inlined.append(inl)
    return functions, objects, inlined


def _children(exp: Experiment) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The roots, and each cnode's children as order[start[c]:start[c + 1]]
    (in cnode order), without a list per cnode."""
    parents = np.fromiter((-1 if c.parent is None else c.parent for c in exp.cnodes), dtype=np.int64,
                          count=len(exp.cnodes))
    order = np.argsort(parents, kind="stable")
    start = np.searchsorted(parents[order], np.arange(-1, len(exp.cnodes) + 1))
    return order[start[0]:start[1]].tolist(), order, start[1:]


def _value_types(exp: Experiment) -> tuple[list[tuple[str, str]], list[np.ndarray]]:
    """The sample types and their (cnode, location) integer values: a
    profile's samples, and its time in nanoseconds or its estimated events;
    a cube's time in nanoseconds, else its first measured metric."""
    if "samples" in exp.values:
        samples = exp.exclusive("samples")
        samples = samples if samples.dtype.kind == "i" else as_int(samples.astype(np.float64))
        event = exp.attributes.get(SAMPLED_ON, "")
        timed = time_metric(exp)
        if timed is not None:
            ns = as_int(exp.exclusive(timed.name).astype(np.float64) * 1e9)
            return [("samples", "count"), ("wall" if event == "ITIMER_REAL" else "cpu", "nanoseconds")], [samples, ns]
        if "events" in exp.values:
            events = as_int(exp.exclusive("events").astype(np.float64))
            if events.any():  # none without a threshold: samples only
                return [("samples", "count"), (event or "events", "count")], [samples, events]
        return [("samples", "count")], [samples]
    metric, scale = weight_metric(exp)
    values = exp.exclusive(metric.name).astype(np.float64)
    if scale != 1.0:  # the time of a cube without samples
        return [("time", "nanoseconds")], [as_int(values * 1e9)]
    return [(text(metric.name), "count")], [as_int(values)]


def _period(values: list[np.ndarray]) -> int:
    """What one sample stands for, in the last type's unit: the first
    sampled location's last value per sample (its period or threshold)."""
    if len(values) < 2:
        return 1
    samples, last = values[0], values[-1]
    for k in range(samples.shape[1]):
        n = int(samples[:, k].sum())
        if n > 0:
            return int(round(int(last[:, k].sum()) / n))
    return 0


def _value_type(types: tuple[str, str], s: _Strings) -> bytes:
    return field_varint(1, s(types[0])) + field_varint(2, s(types[1]))


def executable(exp: Experiment) -> str:
    """The program's object file (the command's first word) among the
    regions' object files, "" when not known."""
    words = exp.attributes.get("command", "").split()
    program = os.path.basename(words[0]) if words else ""
    if program:
        for r in exp.regions:
            obj = r.attributes.get(OBJECT, "")
            if obj and os.path.basename(obj) == program:
                return obj
    return ""


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(exp: Experiment, path: str, module: str | None = None, force: bool = False) -> str:
    """Write the experiment's call tree as one gzipped profile.proto, a
    sample per location and call path with a value of its own (module:
    unused); says what was written."""
    from psuite.cli_common import atomic_output

    check_call_paths(exp, "--pprof")
    types, values = _value_types(exp)
    period = _period(values)
    s = _Strings()
    tables = _Tables(s)
    tables.mapping(executable(exp))  # the program's module first: pprof names the profile after mapping 1
    functions, objects, inlined = _regions(exp)
    function, location = tables.function, tables.location
    first = values[0]
    # the cells with a value of their own, grouped by call path: rows[at[c]:at[c + 1]] are c's
    rows, cols = np.nonzero(first > 0)
    at = np.searchsorted(rows, np.arange(len(exp.cnodes) + 1)).tolist()
    cells = [v[rows, cols].tolist() for v in values]
    cols = cols.tolist()
    nsamples = nrecords = 0  # the samples (or the first type's total) the records hold; the records
    roots, order, start = _children(exp)
    cnodes = exp.cnodes
    with atomic_output(path, force, binary=True) as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        for t in types:
            out.write(field_bytes(P_SAMPLE_TYPE, _value_type(t, s)))
        thread_key = s("thread")
        labels = [field_bytes(3, field_varint(1, thread_key) + field_varint(2, s(location_name(loc))))
                  for loc in exp.locations]
        # Depth first through the call tree, each path's packed location ids (leaf first) made from its
        # caller's: (cnode, and of its caller: its location's lines, mapping and packed ids with and
        # without it).  A path of an inlined region joins its caller's location (one address), its own
        # line first, in place of the caller's.
        todo: list[tuple[int, tuple, int, bytes, bytes]] = []
        for c in reversed(roots):
            if added_root(exp, c):  # the program root psuite added: no frame, stacks start below it
                todo.extend((k, (), 0, b"", b"") for k in reversed(order[start[c]:start[c + 1]].tolist()))
            else:
                todo.append((c, (), 0, b"", b""))
        while todo:
            c, up_lines, up_mapping, up_rest, up_ids = todo.pop()
            node = cnodes[c]
            r = node.region
            own = (function(*functions[r]), node.line if node.line > 0 else 0)
            if inlined[r] and up_lines:
                lines, mapping, rest = (own, *up_lines), up_mapping, up_rest
            else:
                lines, mapping, rest = (own,), tables.mapping(objects[r]), up_ids
            ids = varint(location(mapping, lines)) + rest
            if at[c] < at[c + 1]:
                stack = field_bytes(1, ids)
                for i in range(at[c], at[c + 1]):
                    out.write(field_bytes(P_SAMPLE, stack + field_packed(2, [v[i] for v in cells]) +
                                          labels[cols[i]]))
                nrecords += at[c + 1] - at[c]
                nsamples += sum(cells[0][at[c]:at[c + 1]])
            todo.extend((k, lines, mapping, rest, ids) for k in reversed(order[start[c]:start[c + 1]].tolist()))
        out.write(tables.encode())
        out.write(field_bytes(P_PERIOD_TYPE, _value_type(types[-1], s)) + field_varint(P_PERIOD, period))
        wall = max((float(loc.attributes.get(WALLCLOCK, 0) or 0) for loc in exp.locations), default=0.0)
        out.write(field_varint(P_DURATION_NANOS, int(wall * 1e9)))
        command = text(exp.attributes.get("command", ""))
        out.write(field_packed(P_COMMENT, [s(f"psuite {__version__}" + (f": {command}" if command else ""))]))
        # the string table last: every message above has added to it
        out.write(b"".join(field_bytes(P_STRING_TABLE, x.encode()) for x in s.index))
    modules = len(tables.mappings)
    # The samples as every other output counts them (pprof's Sample messages
    # are distinct stacks per thread, each holding many samples).
    counted = f"{nsamples:,} samples in " if types[0][0] == "samples" else ""
    return f"pprof ({counted}{nrecords:,} stacks, {len(tables.locations)} locations, {modules} modules) {path}"
