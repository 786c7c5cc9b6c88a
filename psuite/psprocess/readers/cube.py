"""Reading a CUBE 4 file (.cubex) into a psuite.experiment.Experiment:
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

Values go straight from the file into one (call paths, locations) array
per metric, in pieces, so a cube needs little more memory than its
values.  Integer metrics become int64 (a UINT64 metric with a value beyond
int64 becomes DOUBLE), DOUBLE, MINDOUBLE and MAXDOUBLE float64.  Derived
metrics (POSTDERIVED, PREDERIVED_*) keep their CubePL text and hold no
values; a metric psuite wrote with values and an <attr key=
"psuite::cubepl"> is read back as the derived metric it was.  Metrics of
other value types (TAU_ATOMIC, RATE, COMPLEX, HISTOGRAM, NDOUBLES ...) are
left out and named in attributes["psuite::skipped_metrics"]."""

from __future__ import annotations

import gzip
import struct
import zlib

import numpy as np

from psuite.errors import InputError
from psuite.experiment import (
    DERIVED_KINDS,
    EXCLUSIVE,
    INCLUSIVE,
    Cnode,
    Experiment,
    ExpressionError,
    Location,
    Metric,
    Region,
    evaluate,
    metric_names,
)

CUBEPL_ATTR, KIND_ATTR = "psuite::cubepl", "psuite::kind"
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
            return _read(path, raw, _members(raw))
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
    data = _member_bytes(raw, anchor)
    if not data.lstrip().startswith(b"<"):
        data = gzip.decompress(data)
    exp, file_ids = _anchor(data)
    wide = None
    for i, file_id in file_ids.items():
        m = exp.metrics[i]
        if m.derived:
            continue
        index, values = members.get(f"{file_id}.index"), members.get(f"{file_id}.data")
        if values is None:  # Score-P writes no files for an all-zero metric; CubeLib reads zeros
            exp.zeros(m)
            continue
        if index is None:
            raise _Corrupt(f"metric {m.name!r} has {file_id}.data but no {file_id}.index (the file is cut short?)")
        order, rows = _index(_member_bytes(raw, index), len(exp.cnodes))
        if m.kind == INCLUSIVE:
            if wide is None:
                from psuite.psprocess.exporters.cube import wide_first

                wide = wide_first(exp)
            cnodes = wide if rows is None else wide[rows]
        else:
            cnodes = None if rows is None else rows
        exp.values[m.name] = _data(raw, values, m, order, cnodes, len(exp.cnodes), len(exp.locations))
    exp.check()
    exp.attributes.setdefault("source", path)
    _stored_ratios(exp)
    return _several_roots(exp)


NO_FORMULA = "psuite::no_formula"  # experiments.NO_FORMULA


def _stored_ratios(exp: Experiment) -> None:
    """Older psuite wrote derived metrics over perf's event names
    (CPUs utilized, page faults per second) as plain values, without
    saying so: such a metric of a psuite cube, named as a standard derived
    metric, is named in attributes[NO_FORMULA], so that the algebra leaves
    it out instead of subtracting ratios."""
    if exp.attributes.get("Creator") != "psuite" or NO_FORMULA in exp.attributes:
        return
    from psuite.psprocess.experiments import standard_definitions

    derived = {d.name for d in standard_definitions()}
    stored = [m.name for m in exp.metrics if not m.derived and m.display in derived]
    if stored:
        exp.attributes[NO_FORMULA] = "\n".join(stored)


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


def _members(raw) -> dict[str, _Member]:
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
    while at + 512 <= end:
        raw.seek(at)
        header = raw.read(512)
        if len(header) < 512:
            break
        if header.count(0) == 512:  # padding or the end-of-archive blocks: skip the run in large steps
            at = _after_zeros(raw, at, end)
            continue
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


def _member_bytes(raw, member: _Member) -> bytes:
    raw.seek(member.offset_data)
    data = raw.read(member.size)
    if len(data) != member.size:
        raise _Corrupt(f"{member.name} ends after {len(data):,} of its {member.size:,} bytes")
    return data


# -- anchor.xml ----------------------------------------------------------------
def _parse_xml(data: bytes):
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
    try:
        return etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise _Corrupt(f"anchor.xml is not well-formed XML: {exc}") from None


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


def _anchor(data: bytes) -> tuple[Experiment, dict[int, int]]:
    """The experiment's dimensions, and per metric index with data its file id."""
    root = _parse_xml(data)
    if root.tag != "cube":
        raise _Corrupt(f"anchor.xml holds <{root.tag}>, not <cube>")
    version = root.get("version", "")
    if not version.startswith("4"):
        raise _Corrupt(f"anchor.xml is CUBE version {version or '?'}; psuite reads CUBE 4")
    exp = Experiment()
    exp.attributes.update({a.get("key", ""): a.get("value", "") for a in root.findall("attr")})
    file_ids = _metrics(exp, root.find("metrics"))
    program = root.find("program")
    if program is None:
        raise _Corrupt("anchor.xml has no <program>")
    _program(exp, program)
    system = root.find("system")
    if system is None:
        raise _Corrupt("anchor.xml has no <system>")
    _system(exp, system)
    return exp, file_ids


def _metrics(exp: Experiment, metrics) -> dict[int, int]:
    if metrics is None:
        raise _Corrupt("anchor.xml has no <metrics>")
    file_ids: dict[int, int] = {}
    skipped: list[str] = []

    def walk(el, parent: int | None) -> None:
        for m in el.findall("metric"):
            name = _text(m, "uniq_name")
            kind = m.get("type", EXCLUSIVE).upper()
            dtype = _text(m, "dtype", "DOUBLE").strip().upper()
            attrs = {a.get("key"): a.get("value", "") for a in m.findall("attr")}
            metric = Metric(name, _text(m, "disp_name"), _text(m, "uom", "occ"), dtype, kind, _text(m, "descr"), parent)
            if CUBEPL_ATTR in attrs:  # psuite's derived metric, written with its values
                metric.kind = (
                    attrs.get(KIND_ATTR, "POSTDERIVED") if attrs.get(KIND_ATTR) in DERIVED_KINDS else "POSTDERIVED"
                )
                metric.expression = attrs[CUBEPL_ATTR]
            elif kind in DERIVED_KINDS:
                metric.expression = _text(m, "cubepl").strip()
            elif kind not in (EXCLUSIVE, INCLUSIVE):
                raise _Corrupt(f"metric {name!r} has type {kind!r}")
            elif dtype not in INTEGER and dtype not in FLOATING:
                skipped.append(name)  # values psuite's model cannot hold; its children hang on its parent
                walk(m, parent)
                continue
            if not name:
                raise _Corrupt("a metric has no <uniq_name>")
            if any(x.name == name for x in exp.metrics):
                raise _Corrupt(f"two metrics are named {name!r}")
            i = exp.add_metric(metric)
            if not metric.derived:
                file_ids[i] = _int(m.get("id"), f"the id of metric {name!r}")
            walk(m, i)

    walk(metrics, None)
    file_ids = _drop_unevaluable(exp, file_ids, skipped)
    if skipped:
        exp.attributes["psuite::skipped_metrics"] = ",".join(skipped)
    return file_ids


def _drop_unevaluable(exp: Experiment, file_ids: dict[int, int], skipped: list[str]) -> dict[int, int]:
    """Derived metrics whose CubePL goes beyond the arithmetic psuite
    evaluates (variables, if/return, functions such as max() or sqrt()),
    or names a metric the file lacks, are left out and named with the
    skipped ones, as CUBE's own tools would need the full language for
    them; their children hang on their parent.  Returns file_ids on the
    new metric indices."""
    names = {m.name for m in exp.metrics}

    def evaluable(m: Metric) -> bool:
        try:
            evaluate(m.expression, lambda n: 1.0, lambda n, v: 1.0)
        except ExpressionError:
            return False
        return set(metric_names(m.expression)) <= names

    bad = {i for i, m in enumerate(exp.metrics) if m.derived and not evaluable(m)}
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
    if not exp.cnodes:
        raise _Corrupt("anchor.xml has no call tree (<cnode>)")


def _system(exp: Experiment, system) -> None:
    found: list[tuple[int, Location]] = []

    def groups(el, path: list[str]) -> None:
        for g in el.findall("locationgroup"):
            process, rank = _text(g, "name"), _int(_text(g, "rank"), "rank", 0)
            for loc in g.findall("location"):
                found.append(
                    (
                        _int(loc.get("Id"), "a location's Id"),
                        Location(
                            path[0] if path else "machine",
                            path[-1] if path else "node",
                            process,
                            rank,
                            _text(loc, "name"),
                            _int(_text(loc, "rank"), "rank", 0),
                        ),
                    )
                )
            groups(g, path)

    def nodes(el, path: list[str]) -> None:
        for n in el.findall("systemtreenode"):
            here = [*path, _text(n, "name")]
            groups(n, here)
            nodes(n, here)

    nodes(system, [])
    if not found:
        raise _Corrupt("anchor.xml has no locations")
    ids = [i for i, _ in found]
    if sorted(ids) != list(range(len(ids))):
        raise _Corrupt("the location ids are not 0, 1, 2 ...")
    exp.locations = [loc for _, loc in sorted(found, key=lambda x: x[0])]


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
    raw, member: _Member, m: Metric, order: str, cnodes: np.ndarray | None, ncnodes: int, nloc: int
) -> np.ndarray:
    """(ncnodes, nloc) values of a metric: rows in file order go to call
    paths `cnodes` (None: 0, 1, 2 ... all of them)."""
    code = INTEGER.get(m.dtype) or FLOATING[m.dtype]
    src = np.dtype(order + code)
    target = np.dtype(np.int64 if code[0] in "iu" else np.float64)
    nrows = ncnodes if cnodes is None else len(cnodes)
    raw.seek(member.offset_data)
    if raw.read(10) == b"CUBEX.DATA" and member.size - 10 != nrows * nloc * src.itemsize:  # before allocating
        raise _Corrupt(
            f"{member.name} holds {member.size - 10:,} bytes of values, not {nrows:,} rows of {nloc:,} "
            f"{src.name} values"
        )
    out = np.zeros((ncnodes, nloc), dtype=target)
    try:
        _fill(raw, member, src, out, cnodes, nrows)
    except _Overflow:  # a UINT64 beyond int64: the metric becomes DOUBLE
        m.dtype = "DOUBLE"
        out = np.zeros((ncnodes, nloc), dtype=np.float64)
        _fill(raw, member, src, out, cnodes, nrows)
    return out


class _Overflow(Exception):
    pass


def _fill(raw, member: _Member, src: np.dtype, out: np.ndarray, cnodes: np.ndarray | None, nrows: int) -> None:
    nloc = out.shape[1]
    row_bytes = nloc * src.itemsize
    raw.seek(member.offset_data)
    head = raw.read(min(member.size, 11))
    if head.startswith(b"CUBEX.DATA"):
        raw.seek(member.offset_data + 10)
        if member.size - 10 != nrows * row_bytes:
            raise _Corrupt(
                f"{member.name} holds {member.size - 10:,} bytes of values, not {nrows:,} rows of "
                f"{nloc:,} {src.name} values"
            )
        pieces = _plain(raw, member.size - 10, row_bytes)
    elif head == b"ZCUBEX.DATA":
        pieces = _compressed(raw, member, src.byteorder if src.byteorder in "<>" else "<", row_bytes)
    else:
        raise _Corrupt(f"{member.name} does not start with CUBEX.DATA or ZCUBEX.DATA")
    # the file's bytes are the array's (same width and kind, native order): read them in place
    direct = (
        cnodes is None
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
            row += k
            continue
        buf = pending + (piece.read() if isinstance(piece, _Span) else piece)
        k = min(len(buf) // row_bytes, nrows - row)
        if k:
            chunk = np.frombuffer(buf, dtype=src, count=k * nloc).reshape(k, nloc)
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


def _compressed(raw, member: _Member, order: str, row_bytes: int):
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
        out = d.decompress(block, CHUNK_BYTES)
        while True:
            yield out
            if not d.unconsumed_tail:
                break
            out = d.decompress(d.unconsumed_tail, CHUNK_BYTES)
        if not d.eof:
            raise _Corrupt(f"{member.name}: block {k} is truncated")
