"""Reading a CUBE 4 file (.cubex) into a psuite.model.experiment.Experiment:
psuite's own and those Score-P and the CUBE tools write.

A .cubex is a tar of anchor.xml (metric tree, program, system tree; gzip
compressed or not) and per metric <id>.index and <id>.data:

- index: "CUBEX.INDEX", int32 1 (its byte order is the file's), int16
  version, int8 format (1 sparse, 3 dense), then for a sparse index int32
  n and n int32 tree indices: the rows the data holds, in order; a call
  path not listed is zero everywhere.  A tree index counts call paths
  depth first for an EXCLUSIVE metric, in cubelib's "wide search" order
  for an INCLUSIVE one.
- data: "CUBEX.DATA" and the rows, one value per location (ordered by
  location id); or "ZCUBEX.DATA", int64 n, n (uncompressed position,
  compressed position, compressed size) int64 triples, and n zlib blocks
  whose concatenation is the rows.

The tar is walked as CubeLib's TarReader walks it (headers' names and
sizes; checksums are not checked, as CubeLib does not; blocks of zeros
passed over).  A metric with no data file holds zeros (Score-P writes none
for an all-zero metric), as does one whose sparse index is CubeLib's
18-byte header without a count.

Values go straight from the file into one (call paths, locations) array
per metric, in pieces, so a cube needs little more memory than its
values; a zlib block never inflates beyond what the anchor and index
declare, a gzip anchor.xml no more than 64 times its size.  Integer
metrics of every width become int64 (a UINT64 metric with a value beyond
int64 becomes DOUBLE), DOUBLE, MINDOUBLE and MAXDOUBLE float64; NaN and
infinities are refused.  RATE, COMPLEX, HISTOGRAM(n) and NDOUBLES(n) are
held as the one number CubeLib's Value::getDouble() gives (cube_dump
prints the parts), TAU_ATOMIC and COMPLEX as their parts (counts and
sums; real and imaginary parts) with the metric derived from them (the
mean; the modulus: getDouble's, also of aggregates),
SCALE_FUNC as zeros, each said once on stderr.  Derived metrics
(POSTDERIVED, PREDERIVED_*) keep their CubePL text, <cubeplinit> and
<cubeplaggr> operators (CubeLib writes cubeplaggrtype= and rowwise=
unquoted, which is quoted before the XML is parsed) and hold no values;
a metric psuite wrote with values and an <attr key="psuite::cubepl"> is
read back as the derived metric it was; derived
metrics psuite cannot evaluate are left out, named in attributes[
"psuite::skipped_metrics"] and on stderr.  Topologies (<cart>) are kept
with the coordinates of their locations.  The experiment's attributes are
kept, and so are the <attr>s of metrics, regions, call paths, locations,
processes, and the machine and node holding them (other system-tree
levels' are dropped with the levels).  Trees are walked without recursion, as deep as
libxml2 parses (2,048 levels).
"""

from __future__ import annotations

import gzip
import re
import struct
import zlib

import numpy as np

from psuite.errors import InputError
from psuite.model.cube_names import with_cubepl_names
from psuite.model.cubepl import aggregation, compiled
from psuite.model.experiment import (
    DERIVED_KINDS,
    EXCLUSIVE,
    INCLUSIVE,
    Cnode,
    Experiment,
    ExpressionError,
    Location,
    Metric,
    Region,
    Topology,
    metric_names,
)

CUBEPL_ATTR, KIND_ATTR = "psuite::cubepl", "psuite::kind"
OWN_METRIC_ATTRS = (CUBEPL_ATTR, KIND_ATTR, "psuite::stand_in")  # exporters/cube.py STAND_IN
INTEGER = {
    "UINT64": "u8",
    "INT64": "i8",
    "UINT32": "u4",
    "INT32": "i4",
    "UINT16": "u2",
    "INT16": "i2",
    "UINT8": "u1",
    "INT8": "i1",
    "INTEGER": "i8",
    "UNSIGNED INTEGER": "u8",
    "SIGNED INTEGER": "i8",
    "INT": "i4",
    "UNSIGNED INT": "u4",
    "SIGNED INT": "i4",
    "SHORT INT": "i2",
    "SIGNED SHORT INT": "i2",
    "UNSIGNED SHORT INT": "u2",
    "CHAR": "u1",
}
FLOATING = {"DOUBLE": "f8", "MINDOUBLE": "f8", "MAXDOUBLE": "f8", "FLOAT": "f8"}
CHUNK_BYTES = 16 << 20  # values are read and placed this many bytes at a time
INT64_MAX = 2**63 - 1


class _Corrupt(Exception):
    """Something in the file is not what CUBE 4 writes."""


def read(path: str) -> Experiment:
    """The experiment of a .cubex file; InputError (one line) when it is
    not a readable CUBE 4 file."""
    try:
        with open(path, "rb") as raw:
            return _read(path, raw, members(raw))
    except InputError:
        raise
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise InputError(f"{path}: no such file; check the name") from None
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc}); check the file") from None
    except _NotTar as exc:
        raise InputError(
            f"{path}: not a CUBE 4 file (not a complete tar archive: {_words(exc)}); give a .cubex "
            "file that CUBE or psuite wrote"
        ) from None
    except MemoryError:
        raise InputError(f"out of memory reading {path}; free memory or raise the memory limit (ulimit -v)") from None
    except (_Corrupt, ValueError, KeyError, struct.error, zlib.error, EOFError, gzip.BadGzipFile) as exc:
        raise InputError(
            f"{path}: a damaged CUBE 4 file ({_words(exc)}); write it again or give another file"
        ) from None


def _words(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _read(path: str, raw, members: dict[str, _Member]) -> Experiment:
    anchor = members.get("anchor.xml")
    if anchor is None:
        raise _Corrupt("no anchor.xml in it")
    data = member_bytes(raw, anchor)
    if not data.lstrip().startswith(b"<"):
        data = _gunzip(data)
    exp, file_ids, layouts = _anchor(data)
    wide = None
    for i, file_id in file_ids.items():
        m = exp.metrics[i]
        if m.derived:
            continue
        index, values = members.get(f"{file_id}.index"), members.get(f"{file_id}.data")
        if values is None and f"ghost_{file_id}.data" in members:  # CubeLib's name for a GHOST metric's values
            index, values = members.get(f"ghost_{file_id}.index"), members[f"ghost_{file_id}.data"]
        if values is None:  # Score-P writes no files for an all-zero metric; CubeLib reads zeros
            exp.zeros(m)
            continue
        if index is None:
            raise _Corrupt(f"metric {m.name!r} has {file_id}.data but no {file_id}.index (the file is cut short?)")
        order, rows = _index(member_bytes(raw, index), len(exp.cnodes))
        if m.kind == INCLUSIVE:
            if wide is None:
                from psuite.formats.exporters.cube import wide_first

                wide = wide_first(exp)
            cnodes = wide if rows is None else wide[rows]
        else:
            cnodes = None if rows is None else rows
        exp.values[m.name] = _data(
            raw, values, m, order, cnodes, len(exp.cnodes), len(exp.locations), layouts.get(m.name)
        )
    for m in exp.metrics:  # SCALE_FUNC: zeros, said when read
        if not m.derived and m.name not in exp.values:
            exp.zeros(m)
    exp.check()
    exp.attributes.setdefault("source", path)
    return _several_roots(exp)


def _several_roots(exp: Experiment) -> Experiment:
    """The roots psuite's writer put under one artificial root for readers
    that take one only (exporters/cube.py one_root): roots again."""
    roots = exp.roots
    if len(roots) != 1 or roots[0] != 0 or len(exp.cnodes) < 3:
        return exp
    top = exp.regions[exp.cnodes[0].region]
    if (top.name, top.role) != ("[roots]", "artificial") or exp.cnodes[0].region != len(exp.regions) - 1 or \
            any(c.region == exp.cnodes[0].region for c in exp.cnodes[1:]):
        return exp
    exp.regions.pop()
    exp.cnodes = [Cnode(c.region, None if c.parent == 0 else c.parent - 1, c.line) for c in exp.cnodes[1:]]
    exp.values = {name: a[1:] for name, a in exp.values.items()}
    return exp


class _NotTar(Exception):
    """The file is not a tar archive as CubeLib reads one."""


class _Member:
    """A file in the archive: its name, where its bytes start, how many."""

    __slots__ = ("name", "offset_data", "size")

    def __init__(self, name: str, offset_data: int, size: int) -> None:
        self.name, self.offset_data, self.size = name, offset_data, size


def _octal(field: bytes) -> int | None:
    """A tar number as CubeLib's strtol(.., 8) takes it: leading blanks,
    octal digits up to the first other byte (None: no digit at all)."""
    text = field.split(b"\0", 1)[0].strip(b" ")
    digits = len(text) - len(text.lstrip(b"01234567"))
    return int(text[:digits], 8) if digits else None


def members(raw) -> dict[str, _Member]:
    """The archive's files, walked as CubeLib's TarReader walks them: a
    512-byte header gives a name and an octal size, a PAX header ('x') the
    size of the next; blocks of zeros are passed over wherever they are,
    so the extra padding block CubeLib and cubew write after a file whose
    size is a multiple of 512 reads like a standard tar.  Header checksums
    are not checked, as CubeLib does not check them: cubes written with a
    wrong checksum are read by CubeLib's tools, and so here.  A header
    whose size is not a number, or a file that runs past the end, is
    damage."""
    raw.seek(0, 2)
    end = raw.tell()
    members: dict[str, _Member] = {}
    at = 0
    pax_size: int | None = None
    ended = False  # a block of zeros after the last file: the archive's end, which CUBE writers all write
    while at + 512 <= end:
        raw.seek(at)
        header = raw.read(512)
        if len(header) < 512:
            break
        if header.count(0) == 512:  # padding or the end-of-archive blocks: skip the run in large steps
            at = _after_zeros(raw, at, end)
            ended = True
            continue
        ended = False
        size = _octal(header[124:136])
        if size is None:
            if not members:
                raise _NotTar("its first block is not a tar header")
            raise _Corrupt(f"a damaged tar header at byte {at:,}")
        if pax_size is not None:
            size, pax_size = pax_size, None
        if at + 512 + size > end:
            if not members:
                raise _NotTar("its first block is not a tar header")
            raise _Corrupt(f"a file in it ends after the file's end (byte {at:,})")
        name = header[:100].split(b"\0", 1)[0].decode("utf-8", "replace")
        kind = header[156:157]
        if kind == b"x":  # PAX: "NN size=N\n" records; CubeLib writes one for files of 8 GiB or more
            raw.seek(at + 512)
            block = raw.read(min(size, 1 << 16))
            for record in block.split(b"\n"):
                key, _, value = record.partition(b" ")[2].partition(b"=")
                if key == b"size" and value.strip().isdigit():
                    pax_size = int(value)
        elif name and kind in (b"0", b"\0", b"7"):
            members[name] = _Member(name, at + 512, size)
        at += 512 + (size + 511) // 512 * 512
    if not members:
        raise _NotTar("no files in it")
    if not ended or at < end:  # without it a file cut between two members would read as all-zero metrics
        raise _Corrupt("the file is cut short (no end-of-archive blocks after its last member)")
    return members


def _after_zeros(raw, at: int, end: int) -> int:
    """The first 512-byte block at or after `at` that is not all zeros
    (or the end of the file)."""
    raw.seek(at)
    while at < end:
        block = raw.read(1 << 16)
        if not block:
            return end
        stripped = len(block) - len(block.lstrip(b"\0"))
        if stripped < len(block):
            return at + stripped // 512 * 512
        at += len(block)
    return end


def member_bytes(raw, member: _Member) -> bytes:
    raw.seek(member.offset_data)
    data = raw.read(member.size)
    if len(data) != member.size:
        raise _Corrupt(f"{member.name} ends after {len(data):,} of its {member.size:,} bytes")
    return data


# -- anchor.xml ----------------------------------------------------------------
ANCHOR_RATIO, ANCHOR_FLOOR = 64, 16 << 20  # a gzip anchor inflates to at most this many times its size


def _gunzip(data: bytes) -> bytes:
    """A gzip-compressed anchor.xml, inflated no further than 64 times its
    compressed size (16 MiB at least): XML compresses some 10 to 30 times,
    a decompression bomb a thousand; refused before it costs the memory."""
    cap = max(ANCHOR_FLOOR, ANCHOR_RATIO * len(data))
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pieces: list[bytes] = []
    size = 0
    tail = data
    while True:
        piece = d.decompress(tail, min(1 << 20, cap - size + 1))
        size += len(piece)
        if size > cap:
            raise _Corrupt(
                f"anchor.xml inflates beyond {cap:,} bytes, {ANCHOR_RATIO} times its compressed size "
                "(a decompression bomb?)"
            )
        pieces.append(piece)
        tail = d.unconsumed_tail
        if d.eof or not tail:
            break
    if not d.eof:
        raise _Corrupt("anchor.xml is a truncated gzip stream")
    return b"".join(pieces)


# CubeLib writes (and its scanner reads only) two attributes unquoted: <cubeplaggr cubeplaggrtype=plus> and
# <cubepl rowwise=false>, which no XML parser takes: quoted before parsing
_UNQUOTED = re.compile(rb"<(cubeplaggr|cubepl)(\s+)(cubeplaggrtype|rowwise)(\s*=\s*)([A-Za-z]+)(\s*)>")


def _parse_xml(data: bytes):
    from lxml import etree

    if b"cubeplaggrtype" in data or b"rowwise" in data:
        data = _UNQUOTED.sub(rb'<\1\2\3\4"\5"\6>', data)

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        if "Excessive depth" in str(exc):  # libxml2's bound, 2,048 levels even for huge trees
            raise _Corrupt(
                "anchor.xml nests its elements deeper than 2,048 levels (a call, metric or system tree "
                "that deep); psuite reads trees up to about 2,000 levels"
            ) from None
        raise _Corrupt(f"anchor.xml is not well-formed XML: {exc}") from None


def _attributes(el) -> dict[str, str]:
    """An element's own <attr key value> children (CubeLib's def_attr: a
    key given twice keeps its last value)."""
    return {a.get("key", ""): a.get("value", "") for a in el.iterchildren("attr")}


def _text(el, tag: str, default: str = "") -> str:
    found = el.find(tag)
    return default if found is None or found.text is None else found.text


def _int(text: str | None, what: str, default: int | None = None) -> int:
    if text is None or not text.strip():
        if default is None:
            raise _Corrupt(f"{what} is missing")
        return default
    try:
        return int(text.strip())
    except ValueError:
        raise _Corrupt(f"{what} is {text!r}, not a whole number") from None


def _anchor(data: bytes) -> tuple[Experiment, dict[int, int], dict[str, _Composite]]:
    """The experiment's dimensions, per metric index with data its file id,
    and per metric of several numbers a value its layout."""
    layouts: dict[str, _Composite] = {}
    root = _parse_xml(data)
    if root.tag != "cube":
        raise _Corrupt(f"anchor.xml holds <{root.tag}>, not <cube>")
    version = root.get("version", "")
    if not version.startswith("4"):
        raise _Corrupt(f"anchor.xml is CUBE version {version or '?'}; psuite reads CUBE 4")
    exp = Experiment()
    exp.attributes.update(_attributes(root))
    file_ids = _metrics(exp, root.find("metrics"), layouts)
    program = root.find("program")
    if program is None:
        raise _Corrupt("anchor.xml has no <program>")
    _program(exp, program)
    system = root.find("system")
    if system is None:
        raise _Corrupt("anchor.xml has no <system>")
    _system(exp, system)
    return exp, file_ids, layouts


class _Composite:
    """A metric type whose value is several numbers (CubeLib's RATE,
    COMPLEX, TAU_ATOMIC, HISTOGRAM(n), NDOUBLES(n)): its layout in the data
    file and the one number CubeLib's Value::getDouble() makes of it, which
    is what psuite holds (cube_dump prints the parts: count, min, max, mean,
    deviation; main and duration; re and im; bins)."""

    def __init__(self, fields: list[tuple[str, str]], shown: str, to_double, base: str = "") -> None:
        self.fields, self.shown, self.to_double, self.base = fields, shown, to_double, base

    def dtype(self, order: str) -> np.dtype:
        return np.dtype([(name, order + code) for name, code in self.fields])  # packed, as CubeLib writes


def _rate(v: np.ndarray) -> np.ndarray:
    m, d = v["main"].astype(np.float64), v["duration"].astype(np.float64)
    out = np.zeros(m.shape)
    np.divide(m, d, out=out, where=d != 0)
    return out


def _tau_mean(v: np.ndarray) -> np.ndarray:
    n, total = v["n"].astype(np.float64), v["sum"].astype(np.float64)
    with np.errstate(all="ignore"):  # CubeLib divides by 1e-256 for n = 0: an infinity is refused later
        return total / np.where(n == 0, 1e-256, n)


def _composite(dtype: str) -> _Composite | None:
    base, _, args = dtype.partition("(")
    base = base.strip()
    made = _layout(base, args, dtype)
    if made is not None:
        made.base = base
    return made


def _layout(base: str, args: str, dtype: str) -> _Composite | None:
    if base == "RATE":
        return _Composite([("main", "f8"), ("duration", "f8")],
                          "main value / duration (0 where the duration is 0; CubeLib shows nan)", _rate)
    if base == "COMPLEX":
        return _Composite([("re", "f8"), ("im", "f8")], "its modulus sqrt(re^2 + im^2)",
                          lambda v: np.hypot(v["re"].astype(np.float64), v["im"].astype(np.float64)))
    if base == "TAU_ATOMIC":
        return _Composite([("n", "u4"), ("min", "f8"), ("max", "f8"), ("sum", "f8"), ("sum2", "f8")],
                          "its mean (sum / count)", _tau_mean)
    if base in ("HISTOGRAM", "NDOUBLES"):
        try:
            n = int(args.split(",")[0].rstrip(")").strip())
        except ValueError:
            raise _Corrupt(f"a {base} metric without its count, {dtype!r}: CUBE writes {base}(N)") from None
        if not 0 <= n <= 1 << 16:
            raise _Corrupt(f"a {base} metric of {n} numbers per value")
        head = [("min", "f8"), ("max", "f8")] if base == "HISTOGRAM" else []
        fields = head + [(f"v{k}", "f8") for k in range(n)]
        return _Composite(fields, f"the sum of its {n} {'bins' if head else 'numbers'}",
                          lambda v: sum((v[f"v{k}"].astype(np.float64) for k in range(n)), np.zeros(v.shape)))
    return None


def _metrics(exp: Experiment, metrics, layouts: dict[str, _Composite]) -> dict[int, int]:
    """The metric tree, walked without recursion (a tree may be deep);
    per metric with values its file id.  Metrics of several numbers per
    value are held as the number CubeLib shows for them, said once per
    metric on stderr; SCALE_FUNC as zeros, said as well."""
    if metrics is None:
        raise _Corrupt("anchor.xml has no <metrics>")
    file_ids: dict[int, int] = {}
    skipped: list[str] = []
    parted: list[tuple[Metric, _Composite, int]] = []  # TAU_ATOMIC and COMPLEX metrics, their layout and file id
    stack: list[tuple[object, int | None]] = [(m, None) for m in reversed(metrics.findall("metric"))]
    while stack:
        m, parent = stack.pop()
        name = _text(m, "uniq_name")
        if not name:
            raise _Corrupt("a metric has no <uniq_name>")
        kind = m.get("type", EXCLUSIVE).upper()
        dtype = _text(m, "dtype", "DOUBLE").strip().upper()
        attrs = _attributes(m)
        metric = Metric(name, _text(m, "disp_name"), _text(m, "uom", "occ"), dtype, kind, _text(m, "descr"), parent)
        # psuite's own markers are read into the model below, not kept as attributes
        metric.attributes = {k: v for k, v in attrs.items() if k not in OWN_METRIC_ATTRS}
        stored = True
        if CUBEPL_ATTR in attrs:  # psuite's derived metric, written with its values
            kept = attrs.get(KIND_ATTR)
            metric.kind = kept if kept in DERIVED_KINDS else "POSTDERIVED"
            metric.expression = attrs[CUBEPL_ATTR]
        elif kind in DERIVED_KINDS:
            metric.expression = _text(m, "cubepl").strip()
            metric.init = _text(m, "cubeplinit").strip()
            for a in m.iterchildren("cubeplaggr"):  # CubeLib: a type given twice keeps the last
                kind_of = (a.get("cubeplaggrtype") or "").lower()
                if kind_of in ("plus", "minus", "aggr") and (a.text or "").strip():
                    metric.aggregation[kind_of] = a.text.strip()
        elif kind not in (EXCLUSIVE, INCLUSIVE):
            raise _Corrupt(f"metric {name!r} has type {kind!r}")
        elif dtype not in INTEGER and dtype not in FLOATING:
            composite = _composite(dtype)
            base = dtype.partition("(")[0].strip()
            metric.dtype = "DOUBLE"
            if base in PARTED:
                parted.append((metric, composite, _int(m.get("id"), f"the id of metric {name!r}")))
                stored = False
            elif composite is not None:
                layouts[name] = composite
                _say(
                    f"metric {name!r} is {base}: shown as {composite.shown}, the one number CubeLib makes "
                    "of it (Value::getDouble)"
                )
            elif base == "SCALE_FUNC":
                stored = False
                _say(f"metric {name!r} is SCALE_FUNC: shown as 0 (psuite does not evaluate scaling functions)")
            else:  # CubeLib: "Unrecognized datatype ...; defaulting to 'double'"
                _say(f"metric {name!r} has the unknown data type {dtype!r}: read as DOUBLE, as CubeLib does")
        if any(x.name == name for x in exp.metrics):
            raise _Corrupt(f"two metrics are named {name!r}")
        i = exp.add_metric(metric)
        if not metric.derived:
            fid = _int(m.get("id"), f"the id of metric {name!r}")
            if stored:
                file_ids[i] = fid
        stack.extend((c, i) for c in reversed(m.findall("metric")))
    for metric, composite, fid in parted:
        _parted(exp, metric, composite, fid, file_ids, layouts)
    # metrics come out depth first, parents first: the order of the file.  In a cube older psuite wrote,
    # names CubePL cannot name (perf's task-clock) are renamed first, with the expressions naming them, so
    # those expressions are evaluable; other writers' names stay as CubeLib shows them
    if exp.attributes.get("Creator") == "psuite":
        renamed = with_cubepl_names(exp)
        exp.metrics, exp.attributes = renamed.metrics, renamed.attributes
    file_ids = _drop_unevaluable(exp, file_ids, skipped)
    if skipped:
        exp.attributes["psuite::skipped_metrics"] = ",".join(skipped)
        _say(f"derived metrics psuite cannot evaluate are left out: {', '.join(skipped)}")
    return file_ids


# metrics whose values CubeLib aggregates part by part before making one number of them (Value::getDouble):
# per type, the parts held as metrics of their own (suffix, field, unit or None for the metric's, what it is)
# and the CubePL of the one number over them ({} the metrics' names), and what is dropped
PARTED = {
    "TAU_ATOMIC": ([("count", "n", "occ", "count"), ("sum", "sum", None, "sum")],
                   "metric::{1}() / metric::{0}()", "its mean", "; its least and greatest values and sums of "
                   "squares are left out"),
    "COMPLEX": ([("re", "re", None, "real part"), ("im", "im", None, "imaginary part")],
                "sqrt(metric::{0}() * metric::{0}() + metric::{1}() * metric::{1}())", "its modulus", ""),
}


def _parted(exp: Experiment, metric: Metric, composite: _Composite, fid: int, file_ids: dict[int, int],
            layouts: dict[str, _Composite]) -> None:
    """A TAU_ATOMIC metric (per value a count, least, greatest, sum and
    sum of squares) or a COMPLEX one (real and imaginary parts) as CubeLib
    shows it: Value::getDouble of the values aggregated part by part (the
    mean sum / count; the modulus), over callees and locations alike.  Held
    as its parts, stored metrics of their own (added at the end of the
    metric tree), and the metric itself as POSTDERIVED over them, which
    CUBE's derived metrics evaluate on the aggregates as CubeLib does."""
    taken = {m.name for m in exp.metrics}

    def free(name: str) -> str:
        out, k = name, 2
        while out in taken:
            out, k = f"{name}_{k}", k + 1
        taken.add(out)
        return out

    parts, expression, shown, dropped = PARTED[composite.base]
    names = []
    display = metric.display or metric.name
    for suffix, field, unit, what in parts:
        name = free(f"{metric.name}_{suffix}")
        names.append(name)
        i = exp.add_metric(Metric(name, f"{display} ({what})", unit or metric.unit, "DOUBLE", metric.kind,
                                  f"{metric.description} ({what})".strip()))
        file_ids[i] = fid
        layouts[name] = _Composite(composite.fields, what, lambda v, f=field: v[f].astype(np.float64),
                                   composite.base)
    metric.kind, metric.dtype = "POSTDERIVED", "DOUBLE"
    metric.expression = expression.format(*names)
    _say(f"metric {metric.name!r} is {composite.base}: shown as {shown}, the one number CubeLib makes of it "
         f"(Value::getDouble), from its parts (metrics {', '.join(names)}){dropped}")


def _say(message: str) -> None:
    """A line on stderr about what the file holds, once the command has not
    failed (held as psprocess holds its warnings)."""
    from psuite.cli_common import hold_warning, one_line

    hold_warning(f"psprocess: warning: {one_line(message)}")


def _drop_unevaluable(exp: Experiment, file_ids: dict[int, int], skipped: list[str]) -> dict[int, int]:
    """Derived metrics whose CubePL (or <cubeplinit>) psuite cannot
    evaluate, and those naming them, are left out and named with the
    skipped ones; their children hang on their parent.  A metric the file
    lacks is 0, as in CubeLib.  Returns file_ids on the new metric
    indices."""

    def evaluable(m: Metric) -> bool:
        # decided by parsing, not by a trial evaluation: a trial on made-up values misjudges what depends on
        # the values (a while loop over a metric's value, metric::fixed::, a variable the <cubeplinit> sets);
        # what psuite cannot evaluate (metric::call::, env(), arg1) is refused by the parser itself
        try:
            compiled(m.expression)
            if m.init:
                compiled(m.init)
            for operator in m.aggregation.values():
                aggregation(operator)
        except ExpressionError:
            return False
        return True

    bad = {i for i, m in enumerate(exp.metrics) if m.derived and not evaluable(m)}
    while True:  # and those naming a metric left out, to the end of the chain
        gone = {exp.metrics[i].name for i in bad}
        more = {i for i, m in enumerate(exp.metrics)
                if m.derived and i not in bad and set(metric_names(m.expression)) & gone}
        if not more:
            break
        bad |= more
    if not bad:
        return file_ids
    skipped += [exp.metrics[i].name for i in sorted(bad)]
    new_index: dict[int, int] = {}
    kept: list[Metric] = []
    for i, m in enumerate(exp.metrics):
        if i not in bad:
            new_index[i] = len(kept)
            kept.append(m)
    for m in kept:
        p = m.parent
        while p is not None and p in bad:  # up to the nearest kept ancestor
            p = exp.metrics[p].parent
        m.parent = None if p is None else new_index[p]
    exp.metrics = kept
    return {new_index[i]: fid for i, fid in file_ids.items()}


def _program(exp: Experiment, program) -> None:
    region_of: dict[int, int] = {}
    for r in program.iter("region"):
        rid = _int(r.get("id"), "a region's id")
        region_of[rid] = exp.add_region(
            Region(
                _text(r, "name"),
                r.get("mod", ""),
                _int(r.get("begin"), "begin", -1),
                _int(r.get("end"), "end", -1),
                _text(r, "descr"),
                _text(r, "role", "function"),
                _text(r, "paradigm", "unknown"),
                _attributes(r),
            )
        )
    index: dict = {}  # cnode element -> its index; document order is depth first, parents first
    for c in program.iter("cnode"):
        callee = _int(c.get("calleeId"), "a cnode's calleeId")
        if callee not in region_of:
            raise _Corrupt(f"cnode {c.get('id')} calls region {callee}, which is not defined")
        up = c.getparent()
        index[c] = exp.add_cnode(
            region_of[callee],
            index.get(up) if up is not None and up.tag == "cnode" else None,
            _int(c.get("line"), "line", -1),
        )
        attrs = _attributes(c)
        if attrs:
            exp.cnodes[-1].attributes = attrs
    if not exp.cnodes:
        raise _Corrupt("anchor.xml has no call tree (<cnode>)")


def _system(exp: Experiment, system) -> None:
    """Locations (CUBE 4's systemtreenode/locationgroup/location, or CUBE
    4.0's machine/node/process/thread), walked without recursion, then the
    Cartesian topologies over them."""
    found: list[tuple[int, Location]] = []
    groups = {"locationgroup", "process"}
    nodes = {"systemtreenode", "machine", "node"}
    # path: the names of the system-tree nodes above, with their attributes
    stack: list[tuple[object, list[tuple[str, dict[str, str]]]]] = [
        (c, []) for c in reversed(list(system)) if c.tag in nodes
    ]
    while stack:
        el, path = stack.pop()
        if el.tag in nodes:
            here = [*path, (_text(el, "name"), _attributes(el))]
            stack.extend((c, here) for c in reversed(list(el)) if c.tag in nodes or c.tag in groups)
            continue
        process, rank = _text(el, "name"), _int(_text(el, "rank"), "rank", 0)
        process_attrs = _attributes(el)
        machine, node = (path[0], path[-1]) if path else (("machine", {}), ("node", {}))
        for loc in el:
            if loc.tag in ("location", "thread"):
                found.append(
                    (
                        _int(loc.get("Id"), "a location's Id"),
                        Location(
                            machine[0],
                            node[0],
                            process,
                            rank,
                            _text(loc, "name"),
                            _int(_text(loc, "rank"), "rank", 0),
                            _attributes(loc),
                            process_attrs,
                            # a machine with no node below it: its attributes are the machine's only
                            node[1] if len(path) > 1 else {},
                            machine[1],
                        ),
                    )
                )
        stack.extend((c, path) for c in reversed(list(el)) if c.tag in groups)
    if not found:
        raise _Corrupt("anchor.xml has no locations")
    ids = [i for i, _ in found]
    if sorted(ids) != list(range(len(ids))):
        raise _Corrupt("the location ids are not 0, 1, 2 ...")
    exp.locations = [loc for _, loc in sorted(found, key=lambda x: x[0])]
    topologies = system.find("topologies")
    if topologies is not None:
        exp.topologies = [_cart(c, len(exp.locations)) for c in topologies.findall("cart")]


def _cart(cart, nloc: int) -> Topology:
    """A <cart>: its dimensions, and the coordinates of its locations
    (locId, or CUBE 3's thrdId); coordinates of a process, node or
    machine have no place in psuite's model and are left out, said."""
    dims = [
        (d.get("name", ""), _int(d.get("size"), "a topology dimension's size"), d.get("periodic", "") == "true")
        for d in cart.findall("dim")
    ]
    name = cart.get("name", "")
    if any(size < 0 for _, size, _ in dims):
        raise _Corrupt(f"topology {name!r} has a dimension of negative size")
    topo = Topology(name, dims)
    dropped = 0
    for c in cart.findall("coord"):
        where = c.get("locId", c.get("thrdId"))
        if where is None:
            dropped += 1
            continue
        loc = _int(where, "a topology coordinate's location")
        try:
            coords = tuple(int(x) for x in (c.text or "").split())
        except ValueError:
            raise _Corrupt(f"topology {name!r}: coordinates {c.text!r} are not whole numbers") from None
        if not 0 <= loc < nloc:
            raise _Corrupt(f"topology {name!r} places location {loc}, which is not defined")
        if len(coords) != len(dims) or any(not 0 <= x < size for x, (_, size, _) in zip(coords, dims, strict=True)):
            raise _Corrupt(f"topology {name!r}: coordinates {c.text!r} do not fit its dimensions")
        topo.coordinates[loc] = coords
    if dropped:
        _say(f"topology {name!r}: {dropped} coordinates of processes, nodes or machines left out "
             "(psuite places locations only)")
    return topo


# -- index and data ------------------------------------------------------------
def _index(data: bytes, ncnodes: int) -> tuple[str, np.ndarray | None]:
    """The byte order ("<" or ">") and the tree indices of the rows (None:
    every call path, in order)."""
    head = b"CUBEX.INDEX"
    if not data.startswith(head) or len(data) < len(head) + 7:
        raise _Corrupt("an index file does not start with CUBEX.INDEX")
    order = "<" if struct.unpack_from("<i", data, len(head))[0] == 1 else ">"
    if struct.unpack_from(order + "i", data, len(head))[0] != 1:
        raise _Corrupt("an index file's byte-order mark is not 1")
    fmt = data[len(head) + 6]
    at = len(head) + 7
    if fmt == 3 and len(data) == at:  # dense: every row
        return order, None
    if fmt == 1 and len(data) == at:  # CubeLib's index of an all-zero metric: sparse, without even a count
        return order, np.zeros(0, dtype=np.int64)
    if len(data) < at + 4:
        raise _Corrupt("an index file ends before its length")
    n = struct.unpack_from(order + "i", data, at)[0]
    if not 0 <= n <= ncnodes or len(data) != at + 4 + 4 * n:
        raise _Corrupt(f"an index file says {n} rows but holds {(len(data) - at - 4) // 4} of {ncnodes} call paths")
    rows = np.frombuffer(data, dtype=np.dtype(order + "i4"), count=n, offset=at + 4).astype(np.int64)
    if n and (rows.min() < 0 or rows.max() >= ncnodes or np.any(np.diff(rows) <= 0)):
        raise _Corrupt("an index file lists call paths out of range or out of order")
    if n == ncnodes:
        return order, None
    return order, rows


def _data(
    raw,
    member: _Member,
    m: Metric,
    order: str,
    cnodes: np.ndarray | None,
    ncnodes: int,
    nloc: int,
    composite: _Composite | None = None,
) -> np.ndarray:
    """(ncnodes, nloc) values of a metric: rows in file order go to call
    paths `cnodes` (None: 0, 1, 2 ... all of them)."""
    if composite is not None:
        src = composite.dtype(order)
        target = np.dtype(np.float64)
    else:
        code = INTEGER.get(m.dtype) or FLOATING.get(m.dtype, "f8")
        src = np.dtype(order + code)
        target = np.dtype(np.int64 if code[0] in "iu" else np.float64)
    nrows = ncnodes if cnodes is None else len(cnodes)
    raw.seek(member.offset_data)
    # before allocating; rows beyond the index's are not read (CubeLib reads CUBE 4.0 files that hold them)
    if raw.read(10) == b"CUBEX.DATA" and member.size - 10 < nrows * nloc * src.itemsize:
        raise _Corrupt(
            f"{member.name} holds {member.size - 10:,} bytes of values, not {nrows:,} rows of {nloc:,} "
            f"{composite.base if composite else src.name} values"
        )
    out = np.zeros((ncnodes, nloc), dtype=target)
    convert = composite.to_double if composite is not None else None
    try:
        _fill(raw, member, src, out, cnodes, nrows, convert, m.name, order)
    except _Overflow:  # a UINT64 beyond int64: the metric becomes DOUBLE
        m.dtype = "DOUBLE"
        out = np.zeros((ncnodes, nloc), dtype=np.float64)
        _fill(raw, member, src, out, cnodes, nrows, None, m.name, order)
    return out


class _Overflow(Exception):
    pass


def _fill(
    raw,
    member: _Member,
    src: np.dtype,
    out: np.ndarray,
    cnodes: np.ndarray | None,
    nrows: int,
    convert=None,
    name: str = "",
    order: str = "<",
) -> None:
    nloc = out.shape[1]
    row_bytes = nloc * src.itemsize
    raw.seek(member.offset_data)
    head = raw.read(min(member.size, 11))
    if head.startswith(b"CUBEX.DATA"):
        raw.seek(member.offset_data + 10)
        if member.size - 10 < nrows * row_bytes:
            raise _Corrupt(
                f"{member.name} holds {member.size - 10:,} bytes of values, not {nrows:,} rows of "
                f"{nloc:,} {src.name} values"
            )
        pieces = _plain(raw, nrows * row_bytes, row_bytes)
    elif head == b"ZCUBEX.DATA":
        pieces = _compressed(raw, member, order, nrows * row_bytes)
    else:
        raise _Corrupt(f"{member.name} does not start with CUBEX.DATA or ZCUBEX.DATA")
    # the file's bytes are the array's (same width and kind, native order): read them in place
    direct = (
        convert is None
        and cnodes is None
        and src.isnative
        and src.itemsize == out.itemsize
        and (src.kind == out.dtype.kind or (src.kind == "u" and out.dtype.kind == "i"))
    )
    flat = out.reshape(-1).view(np.uint8) if direct else None
    row = 0
    pending = b""
    for piece in pieces:
        if direct and not pending and len(piece) % row_bytes == 0 and isinstance(piece, _Span):
            k = len(piece) // row_bytes
            piece.read_into(flat[row * row_bytes : (row + k) * row_bytes])
            if src.kind == "u" and out.dtype.kind == "i" and out[row : row + k].min(initial=0) < 0:
                raise _Overflow
            if out.dtype.kind == "f":
                _finite(out[row : row + k], name)
            row += k
            continue
        buf = pending + (piece.read() if isinstance(piece, _Span) else piece)
        k = min(len(buf) // row_bytes, nrows - row)
        if k:
            chunk = np.frombuffer(buf, dtype=src, count=k * nloc).reshape(k, nloc)
            if convert is not None:
                chunk = convert(chunk)
            if chunk.dtype.kind == "f":
                _finite(chunk, name)
            if (
                src.kind == "u"
                and src.itemsize == 8
                and out.dtype.kind == "i"
                and chunk.size
                and int(chunk.max()) > INT64_MAX
            ):
                raise _Overflow
            where = slice(row, row + k) if cnodes is None else cnodes[row : row + k]
            out[where] = chunk
            row += k
        pending = buf[k * row_bytes :]
    if row != nrows or pending:
        raise _Corrupt(
            f"{member.name} holds {row:,} rows{' and a partial one' if pending else ''}, its index {nrows:,}"
        )


def _finite(values: np.ndarray, name: str) -> None:
    """CUBE values psuite takes are finite numbers: NaN and infinities are
    refused, by metric."""
    if not np.isfinite(values).all():
        bad = values[~np.isfinite(values)][0]
        raise _Corrupt(f"metric {name!r} holds a non-finite value ({bad}); psuite takes finite numbers only")


class _Span:
    """A stretch of the file, read when wanted (straight into an array
    when it can be)."""

    def __init__(self, raw, at: int, size: int) -> None:
        self.raw, self.at, self.size = raw, at, size

    def __len__(self) -> int:
        return self.size

    def read(self) -> bytes:
        self.raw.seek(self.at)
        data = self.raw.read(self.size)
        if len(data) != self.size:
            raise _Corrupt("the file ends inside its values")
        return data

    def read_into(self, view: np.ndarray) -> None:
        self.raw.seek(self.at)
        if self.raw.readinto(memoryview(view)) != self.size:
            raise _Corrupt("the file ends inside its values")


def _plain(raw, size: int, row_bytes: int):
    at = raw.tell()
    step = max(row_bytes, CHUNK_BYTES // max(row_bytes, 1) * row_bytes) if row_bytes else size or 1
    for start in range(0, size, step):
        yield _Span(raw, at + start, min(step, size - start))


def _compressed(raw, member: _Member, order: str, expected: int):
    """The uncompressed bytes of a ZCUBEX.DATA, in pieces.  Never more
    than `expected` (what the anchor and index declare): a block that
    inflates beyond it is refused at once, so a small file cannot make
    the reader inflate gigabytes (a decompression bomb)."""
    at = member.offset_data + 11
    end = member.offset_data + member.size
    raw.seek(at)
    head = raw.read(8)
    if len(head) != 8:
        raise _Corrupt(f"{member.name} ends in its header")
    n = struct.unpack(order + "q", head)[0]
    if not 0 <= n <= (end - at) // 24:
        raise _Corrupt(f"{member.name} says {n} compressed blocks")
    table = raw.read(24 * n)
    if len(table) != 24 * n:
        raise _Corrupt(f"{member.name} ends in its block table")
    entries = struct.unpack(f"{order}{3 * n}q", table)
    pos = at + 8 + 24 * n
    given = 0
    for k in range(n):
        size = entries[3 * k + 2]
        if size == 0:
            continue
        if size < 0 or pos + size > end:
            raise _Corrupt(f"{member.name}: block {k} runs past the end of the file")
        raw.seek(pos)
        block = raw.read(size)
        pos += size
        d = zlib.decompressobj()
        tail = block
        while True:
            # one byte beyond what is still due tells an oversized block at once
            out = d.decompress(tail, min(CHUNK_BYTES, expected - given + 1))
            given += len(out)
            if given > expected:
                raise _Corrupt(
                    f"{member.name}: block {k} inflates beyond the {expected:,} bytes of values the file "
                    "declares (a damaged or hostile file)"
                )
            if out:
                yield out
            tail = d.unconsumed_tail
            if not tail:
                break
        if not d.eof:
            raise _Corrupt(f"{member.name}: block {k} is truncated")
