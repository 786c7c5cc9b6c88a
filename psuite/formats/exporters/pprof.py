"""pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
gzip-compressed, as `go tool pprof` and pprof read it.

- sample_type: samples/count, then for the ITIMER_ sources cpu/nanoseconds
  (wall/nanoseconds for ITIMER_REAL): samples x the period; for
  event-overflow sources <event>/count: samples x the threshold.  The last
  is the default pprof shows; period_type and period say what one sample
  stands for.
- One Sample per thread and call path with samples of its own, its
  locations leaf first, labelled thread=<the thread's label>, so that
  `-tagfocus thread=...` picks threads while the tables sum them all.
- Location: a frame with the frames inlined into it, as pprof models
  inlining (one address, several Lines, the innermost first); its line
  numbers are the resolved ones (the sampled line, or the call site in a
  caller).  Addresses are not in resolved trees: locations have address 0,
  are identified by their lines, and every Mapping (one per module) says
  it has functions, file names, line numbers and inline frames, so pprof
  does not try to symbolise them again.
- Function: one per (name, source file); an unresolved frame is named by
  its module in brackets.

Encoded here by hand (a varint and length-delimited writer) rather than
with the protobuf package: seven small message types, no generated code
to keep in step without protoc, no run-time dependency for one export,
and samples can be streamed into the gzip stream as the trees are walked
(protobuf's repeated fields may come in any order; the tables, which the
samples build, follow them)."""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence

from psuite._version import __version__
from psuite.formats.exporters.calltree_common import (
    SourceTree,
    executable,
    frame_file,
    frame_name,
    microseconds_per_sample,
    source_trees,
    text,
)
from psuite.model.calltree import CallNode, CallTree, Frame
from psuite.model.report import MultiReport, ProfileReport

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

    def function(self, frame: Frame) -> int:
        key = (frame_name(frame), frame_file(frame))
        return self.functions.setdefault(key, len(self.functions) + 1)

    def location(self, group: Sequence[Frame]) -> int:
        """The location of a frame (group[0]) and the frames inlined into
        it (group[1:], outermost first)."""
        lines = tuple((self.function(f), max(f.line, 0)) for f in reversed(group))
        return self.locations.setdefault((self.mapping(group[0].module), lines), len(self.locations) + 1)

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


def contexts(tree: CallTree, tables: _Tables) -> Iterator[tuple[list[int], float]]:
    """(location ids leaf first, exclusive value) of every context with
    samples.  A frame and the inlined frames that follow it (towards the
    leaf) make one location; each context's location is looked up once,
    extending its parent's."""
    todo: list[tuple[CallNode, tuple[int, ...], tuple[Frame, ...]]] = \
        [(c, (), ()) for c in reversed(tree.root.children.values())]
    while todo:
        node, above, group = todo.pop()
        f = node.frame
        if f.inlined and group:  # inlined into the frame of the parent's location: same address
            group = (*group, f)
            ids = (*above[:-1], tables.location(group))
        else:
            group = (f,)
            ids = (*above, tables.location(group))
        if node.exclusive:
            yield list(reversed(ids)), node.exclusive
        todo.extend((c, ids, group) for c in reversed(node.children.values()))


def _value_types(st: SourceTree) -> tuple[list[tuple[str, str]], int]:
    """The sample types of a tree's source and its period (in the last
    type's unit)."""
    us = microseconds_per_sample(st)
    if us:
        return [("samples", "count"), ("wall" if st.event == "ITIMER_REAL" else "cpu", "nanoseconds")], us * 1000
    if st.threshold:
        return [("samples", "count"), (st.event or "events", "count")], st.threshold
    return [("samples", "count")], 1


def _value_type(types: tuple[str, str], s: _Strings) -> bytes:
    return field_varint(1, s(types[0])) + field_varint(2, s(types[1]))


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(report: ProfileReport | MultiReport, path: str, module: str | None = None, force: bool = False) -> str:
    """Write every thread's call tree as one gzipped profile.proto (module:
    unused); says what was written."""
    from psuite.cli_common import atomic_output

    trees = source_trees(report, "--pprof")
    members = getattr(report, "reports", None) or [report]
    types, period = _value_types(trees[0])
    s = _Strings()
    tables = _Tables(s)
    tables.mapping(executable(trees))  # the program's module first: pprof names the profile after mapping 1
    nsamples = nrecords = 0  # the samples the records hold; the records (one per thread and call path)
    with atomic_output(path, force, binary=True) as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        for t in types:
            out.write(field_bytes(P_SAMPLE_TYPE, _value_type(t, s)))
        thread_key = s("thread")
        for st in trees:
            label = field_bytes(3, field_varint(1, thread_key) + field_varint(2, s(text(st.thread.label))))
            per_sample = _value_types(st)[1] if len(types) > 1 else 1
            for locations, value in contexts(st.thread.tree, tables):
                samples = int(value + 0.5)
                if samples <= 0:
                    continue
                values = [samples, int(value * per_sample + 0.5)][: len(types)]
                out.write(field_bytes(P_SAMPLE, field_packed(1, locations) +
                                      field_packed(2, values) + label))
                nsamples += samples
                nrecords += 1
        out.write(tables.encode())
        out.write(field_bytes(P_PERIOD_TYPE, _value_type(types[-1], s)) + field_varint(P_PERIOD, period))
        wall = max((r.wallclock or 0.0 for r in members), default=0.0)
        out.write(field_varint(P_DURATION_NANOS, int(wall * 1e9)))
        command = text(members[0].command or "")
        out.write(field_packed(P_COMMENT, [s(f"psuite {__version__}" + (f": {command}" if command else ""))]))
        # the string table last: every message above has added to it
        out.write(b"".join(field_bytes(P_STRING_TABLE, x.encode()) for x in s.index))
    modules = len(tables.mappings)
    # The samples as every other output counts them (pprof's Sample messages
    # are distinct stacks per thread, each holding many samples).
    return (f"pprof ({nsamples:,} samples in {nrecords:,} stacks, {len(tables.locations)} locations, "
            f"{modules} modules) {path}")

