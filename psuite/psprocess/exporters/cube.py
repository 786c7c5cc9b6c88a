"""CUBE 4 (.cubex), as the CUBE 4.3 user guide, cubelib and pycubexr read
it: a tar of anchor.xml (metric tree, program, system tree) and per metric
<id>.index and <id>.data, plus the guide's statistics file (<name>.stat)
beside it.  Written from a psuite.experiment.Experiment; a report goes
through psuite.psprocess.experiments.from_report first.

- Metrics: the experiment's tree, nested, ids in tree order.  A stored
  metric is written as it is held (EXCLUSIVE or INCLUSIVE, UINT64 when its
  integers are none negative, else INT64; DOUBLE).  A derived metric is by
  default written with its values (DOUBLE, INCLUSIVE: the expression over
  the operands' inclusive values, what CUBE shows of a collapsed call
  path) and its CubePL expression kept as <attr key="psuite::cubepl">:
  pycubexr, which knows only stored metrics, reads every file, and psuite
  reads the metric back as derived.  derived="cubepl" writes CUBE's own
  POSTDERIVED (or PREDERIVED_*) metric with <cubepl> and no data instead
  (CUBE recomputes it; pycubexr cannot read such a file).
- Program: one <region> per region, the call tree nested, cnode ids in
  depth-first order, call-site lines where known.
- System: machine -> node -> process (rank) -> thread, location ids in
  tree order.
- Data: per metric a dense index (every call path listed) and
  uncompressed CUBEX.DATA in native byte order (the index's leading 1
  tells readers which), rows in the order CUBE enumerates call paths for
  the metric's kind (depth first for EXCLUSIVE, cubelib's "wide search"
  for INCLUSIVE), columns by location id.  The arrays are streamed into
  the tar as they are, without copies when the experiment's call paths
  and locations are already in the file's order.

pycubexr (2.1) asserts a call tree of one root and a system tree of one
machine: several roots are written under one artificial root, "[roots]"
(one_root), and psuite's system trees have one machine."""

from __future__ import annotations

import math
import re
import struct
import tarfile
import time
from array import array
from collections.abc import Sequence
from xml.sax import saxutils

import numpy as np

from psuite.errors import UsageError
from psuite.experiment import DERIVED_KINDS, INCLUSIVE, Cnode, Experiment, Location, Metric, Region, evaluate
from psuite.psprocess import combine
from psuite.psprocess.exporters.calltree_common import text

EXTENSION = ".cubex"
CUBEPL_ATTR = "psuite::cubepl"  # a derived metric written with values: its expression
KIND_ATTR = "psuite::kind"  # ... and its kind
FLOAT_TYPES = ("DOUBLE", "MINDOUBLE", "MAXDOUBLE")

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML 1.0 cannot hold


def escape(s: str, entities: dict[str, str] | None = None) -> str:
    """s as XML character data: escaped, undecodable bytes as U+FFFD, and
    characters XML cannot hold (control characters a symbol may have) as
    spaces."""
    return saxutils.escape(_NOT_XML.sub(" ", text(s)), entities or {})


def _attr(s: str) -> str:
    return escape(s, {'"': "&quot;", "\n": "&#10;", "\t": "&#9;", "\r": "&#13;"})


def targets(path: str) -> list[str]:
    """The files write(..., path) creates: the cube and its statistics."""
    if not path.endswith(EXTENSION):
        raise UsageError(f"--cube {path}: the file name must end in {EXTENSION}")
    return [path, path[: -len(EXTENSION)] + ".stat"]


def write(obj, path: str, module: str | bool | None = None, force: bool = False, derived: str = "values") -> str:
    """Write the .cubex and, beside it, the .stat; obj is an Experiment or a
    report (counting report, profile, combination).  module: unused (for the
    single-module formats).  Says what was written."""
    if isinstance(module, bool):  # write(obj, path, True): force given where the exporters' convention has module
        module, force = None, module
    if derived not in ("values", "cubepl"):
        raise ValueError(f"derived={derived!r}: 'values' or 'cubepl'")
    if isinstance(obj, Experiment):
        exp = obj
    else:
        from psuite.psprocess.experiments import from_report

        exp = from_report(obj)
    exp.check()
    stat = write_experiment(one_root(exp) if len(exp.roots) > 1 else exp, path, force, derived)
    below = len(exp.cnodes) - len(exp.roots)
    flat = all(c.parent is None or exp.cnodes[c.parent].parent is None for c in exp.cnodes)
    if below and not flat:
        shape = f"call tree of {below} calling contexts"
    else:
        shape = "flat"
    return f"CUBE 4 ({shape}), statistics in {stat}"


SEVERAL_ROOTS = "[roots]"


def one_root(exp: Experiment) -> Experiment:
    """The experiment with its several roots (a cut at a pattern naming
    several regions, a Score-P cube with more than one) under one artificial
    root region, SEVERAL_ROOTS, of no value of its own: CUBE holds several
    roots, but readers such as pycubexr take one only.  The inclusive
    values at the new root are the roots' together."""
    import numpy as np

    out = Experiment(metrics=list(exp.metrics), regions=[*exp.regions, Region(
        SEVERAL_ROOTS, "", -1, -1, "the call tree's roots, under one root for readers that take one only",
        "artificial", "user")], locations=list(exp.locations), attributes=dict(exp.attributes))
    out.cnodes = [Cnode(len(exp.regions), None)] + [
        Cnode(c.region, 0 if c.parent is None else c.parent + 1, c.line) for c in exp.cnodes]
    roots = exp.roots
    for name, a in exp.values.items():
        m = exp.metric(name)
        top = np.zeros((1, a.shape[1]), dtype=a.dtype)
        if m.kind == INCLUSIVE or m.combine is not np.add:  # the roots' values together
            top[0] = m.combine.reduce(a[roots], axis=0)
        out.values[name] = np.concatenate([top, a])
    return out


# -- orders --------------------------------------------------------------------
def depth_first(exp: Experiment) -> np.ndarray:
    """Cnode indices in depth-first order (children in index order): the
    file's cnode ids and the rows of an EXCLUSIVE metric."""
    kids = exp.children()
    out: list[int] = []
    for root in exp.roots:
        stack = [root]
        while stack:
            c = stack.pop()
            out.append(c)
            stack.extend(reversed(kids[c]))
    return np.asarray(out, dtype=np.int64)


def wide_first(exp: Experiment) -> np.ndarray:
    """cubelib's "wide search" enumeration (WideSearchEnumerator): each
    root, then a call path's children together before any grandchild, the
    children's subtrees in order.  The rows of an INCLUSIVE metric."""
    kids = exp.children()
    out: list[int] = []
    for root in exp.roots:
        out.append(root)
        stack = [root]
        while stack:
            c = stack.pop()
            out.extend(kids[c])
            stack.extend(reversed(kids[c]))
    return np.asarray(out, dtype=np.int64)


def metric_order(exp: Experiment) -> list[int]:
    """Metric indices in tree order (parents before children): file ids."""
    out: list[int] = []

    def walk(parent: int | None) -> None:
        for i in exp.metric_children(parent):
            out.append(i)
            walk(i)

    walk(None)
    if len(out) != len(exp.metrics):
        raise ValueError("the metric tree has a cycle or a parent that is not a metric")
    return out


def location_order(exp: Experiment) -> tuple[np.ndarray, list]:
    """Location indices in system-tree order, and the tree: [(machine,
    [(node, [((rank, process), [location indices])])])]."""
    from psuite.experiment import system_tree

    tree = [(machine, [(node, list(groups.items())) for node, groups in nodes.items()])
            for machine, nodes in system_tree(exp.locations).items()]
    order = [i for _, nodes in tree for _, groups in nodes for _, members in groups for i in members]
    return np.asarray(order, dtype=np.int64), tree


def _identity(order: np.ndarray) -> bool:
    return bool(np.array_equal(order, np.arange(len(order))))


# -- the file ------------------------------------------------------------------
class _Stream:
    """A file object over byte buffers, read in pieces without copying
    (tarfile's copy loop takes memoryview slices)."""

    def __init__(self, parts: Sequence) -> None:
        self.parts = [memoryview(p).cast("B") for p in parts]
        self.at = 0

    def read(self, n: int = -1):
        while self.parts and self.at >= len(self.parts[0]):
            self.parts.pop(0)
            self.at = 0
        if not self.parts:
            return b""
        part = self.parts[0]
        end = len(part) if n < 0 else min(len(part), self.at + n)
        chunk = part[self.at:end]
        self.at = end
        if n >= 0 and len(chunk) < n and len(self.parts) > 1:  # tarfile wants whole pieces
            rest = self.read(n - len(chunk))
            return bytes(chunk) + bytes(rest)
        return chunk


def _stored_kind(m: Metric, derived: str) -> str:
    if m.derived:
        return m.kind if derived == "cubepl" else INCLUSIVE
    return m.kind


def _dtype(m: Metric, a: np.ndarray | None) -> str:
    """The file's dtype for the metric's values."""
    if a is not None and a.dtype.kind == "f":
        return m.dtype.upper() if m.dtype.upper() in FLOAT_TYPES else "DOUBLE"
    if a is None:
        return m.dtype
    if m.dtype.upper().startswith("U") and (a.size == 0 or int(a.min()) >= 0):
        return "UINT64"
    return "INT64"


def _values(exp: Experiment, m: Metric, derived: str) -> np.ndarray | None:
    """What is written for a metric: stored values, a derived metric's
    inclusive values (derived="values"), or None (no data)."""
    if not m.derived:
        return exp.stored(m.name)
    if derived == "cubepl":
        return None
    try:
        a = exp.derived_values(m.name, inclusive=True)
    except (KeyError, ValueError) as exc:
        raise UsageError(f"derived metric {m.name!r}: {exc}; its expression cannot be evaluated here") from None
    return np.broadcast_to(np.asarray(a, dtype=np.float64), (len(exp.cnodes), len(exp.locations)))


def write_experiment(exp: Experiment, path: str, force: bool = False, derived: str = "values") -> str:
    """The cube and its statistics file; returns the .stat path."""
    from psuite.cli_common import atomic_outputs

    path, stat_path = targets(path)
    if not exp.cnodes or not exp.locations:
        raise UsageError(f"{path}: the experiment has no {'call paths' if not exp.cnodes else 'locations'}; a CUBE "
                         "file needs at least one of each")
    deep = depth_first(exp)
    if len(deep) != len(exp.cnodes):
        raise UsageError("the call tree has a cnode no root reaches; it cannot be written")
    wide = None
    locs, tree = location_order(exp)
    same_locs = _identity(locs)
    order = metric_order(exp)
    arrays = {i: _values(exp, exp.metrics[i], derived) for i in order}
    dtypes = {i: _dtype(exp.metrics[i], arrays[i]) for i in order}
    kinds = {i: _stored_kind(exp.metrics[i], derived) for i in order}
    anchor = _anchor(exp, order, dtypes, kinds, deep, tree, derived)
    with atomic_outputs([path, stat_path], force, binary=[True, False]) as (f, stat), \
            tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT, copybufsize=1 << 22) as tar:
        def add(name: str, *parts) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = sum(memoryview(p).nbytes for p in parts), int(time.time())
            tar.addfile(info, _Stream(parts))

        add("anchor.xml", anchor)
        for file_id, i in enumerate(order):
            a = arrays[i]
            if a is None:
                continue
            if kinds[i] == INCLUSIVE:
                wide = wide_first(exp) if wide is None else wide
                rows = wide
            else:
                rows = deep
            out = a if _identity(rows) else a[rows]
            if not same_locs:
                out = out[:, locs]
            out = np.ascontiguousarray(out, dtype=np.float64 if a.dtype.kind == "f" else np.int64)
            add(f"{file_id}.index", _index(len(exp.cnodes)))
            add(f"{file_id}.data", b"CUBEX.DATA", out)
            del out
        stat.write(statistics_text([exp.metrics[i].name for i in order],
                                   _location_totals(exp, order, arrays, locs)))
    return stat_path


def _index(ncnodes: int) -> bytes:
    """A sparse index (format 1) listing every call path: what cubew and
    pycubexr read.  Native byte order; readers learn it from the 1."""
    return b"CUBEX.INDEX" + struct.pack("=ihbi", 1, 0, 1, ncnodes) + np.arange(ncnodes, dtype=np.int32).tobytes()


def _location_totals(exp: Experiment, order: list[int], arrays: dict, locs: np.ndarray) -> list[list[float]]:
    """Per metric (in file order), its per-location totals in tree order:
    the sum over call paths (EXCLUSIVE), over the roots (INCLUSIVE), or a
    derived metric's expression over its operands' totals."""
    roots = exp.roots
    cache: dict[str, np.ndarray] = {}

    def totals(name: str) -> np.ndarray:
        if name not in cache:
            m = exp.metric(name)
            if m.derived:
                cache[name] = np.broadcast_to(np.asarray(evaluate(m.expression, totals, roots_only),
                                                         dtype=np.float64), (len(exp.locations),))
            else:
                a = exp.stored(name)
                src = a if m.kind != INCLUSIVE else a[roots]
                cache[name] = m.combine.reduce(src, axis=0).astype(np.float64)
        return cache[name]

    def roots_only(name: str, variant: str) -> np.ndarray:
        """metric::x(i) or (e) of a whole location: the roots' inclusive or own values."""
        return (exp.inclusive(name) if variant == "i" else exp.exclusive(name))[roots].sum(axis=0, dtype=np.float64)

    out = []
    for i in order:
        m = exp.metrics[i]
        try:
            t = totals(m.name)
        except (KeyError, ValueError):
            t = np.full(len(exp.locations), math.nan)
        out.append([float(v) for v in t[locs]])
    return out


def _anchor(exp: Experiment, order: list[int], dtypes: dict, kinds: dict, deep: np.ndarray, tree: list,
            derived: str) -> bytes:
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<cube version="4.4">']
    attributes = {"CUBE_CT_AGGR": "SUM", "Creator": "psuite", **exp.attributes}
    out += [f'<attr key="{_attr(k)}" value="{_attr(v)}"/>' for k, v in attributes.items()]
    out.append("<metrics>")
    file_id = {i: k for k, i in enumerate(order)}

    def metric(i: int) -> None:
        m = exp.metrics[i]
        extra = ""
        if m.derived:
            if derived == "cubepl":
                extra = f"<cubepl>{escape(m.expression)}</cubepl>"
            else:
                extra = (f'<attr key="{CUBEPL_ATTR}" value="{_attr(m.expression)}"/>'
                         f'<attr key="{KIND_ATTR}" value="{m.kind}"/>')
        out.append(f'<metric id="{file_id[i]}" type="{kinds[i]}"><disp_name>{escape(m.display or m.name)}</disp_name>'
                   f"<uniq_name>{escape(m.name)}</uniq_name><dtype>{dtypes[i]}</dtype><uom>{escape(m.unit)}</uom>"
                   f"<url></url><descr>{escape(m.description)}</descr>{extra}")
        for c in exp.metric_children(i):
            metric(c)
        out.append("</metric>")

    for i in exp.metric_children(None):
        metric(i)
    out.append("</metrics><program>")
    for i, r in enumerate(exp.regions):
        out.append(f'<region id="{i}" mod="{_attr(r.module)}" begin="{r.begin}" end="{r.end}"><name>{escape(r.name)}'
                   f"</name><mangled_name>{escape(r.name)}</mangled_name><paradigm>{escape(r.paradigm)}</paradigm>"
                   f"<role>{escape(r.role)}</role><url></url><descr>{escape(r.description)}</descr></region>")
    depth = [0] * len(exp.cnodes)
    open_depth = -1  # depth of the innermost open <cnode>
    for file_cnode, c in enumerate(deep.tolist()):
        node = exp.cnodes[c]
        d = 0 if node.parent is None else depth[node.parent] + 1
        depth[c] = d
        out.append("</cnode>" * (open_depth - d + 1))
        line = f' line="{node.line}"' if node.line >= 0 else ""
        out.append(f'<cnode id="{file_cnode}" calleeId="{node.region}"{line}>')
        open_depth = d
    out.append("</cnode>" * (open_depth + 1))
    out.append("</program><system>")
    node_id = group_id = loc_id = 0
    for machine, nodes in tree:
        out.append(f'<systemtreenode Id="{node_id}"><name>{escape(machine)}</name><class>machine</class>')
        node_id += 1
        for node_name, groups in nodes:
            out.append(f'<systemtreenode Id="{node_id}"><name>{escape(node_name)}</name><class>node</class>')
            node_id += 1
            for (rank, process), members in groups:
                out.append(f'<locationgroup Id="{group_id}"><name>{escape(process)}</name><rank>{rank}</rank>'
                           "<type>process</type>")
                group_id += 1
                for i in members:
                    loc = exp.locations[i]
                    out.append(f'<location Id="{loc_id}"><name>{escape(loc.thread)}</name>'
                               f"<rank>{loc.thread_rank}</rank><type>thread</type></location>")
                    loc_id += 1
                out.append("</locationgroup>")
            out.append("</systemtreenode>")
        out.append("</systemtreenode>")
    out.append("</system></cube>\n")
    return "\n".join(out).encode()


# -- the statistics file --------------------------------------------------------
def statistics_text(names: list[str], totals_per_metric: list[list[float]]) -> str:
    """The guide's statistics file (appendix 3.1): per metric, its per-location
    totals' count, mean, median, minimum, maximum, sum, then variance and the
    quartiles when there are at least two values (the rules: a value may be
    left out only with all that follow it)."""
    lines = ["PatternName MetricID Count Mean Median Minimum Maximum Sum Variance Quartil25 Quartil75"]
    for k, (name, totals) in enumerate(zip(names, totals_per_metric, strict=True)):
        row = [name.replace(" ", "_"), str(k), str(len(totals))]
        if totals:
            total, mean = _figure(combine.total_and_mean, totals) or (math.nan, math.nan)
            q1, median, q3 = combine.quartiles(totals)
            row += [f"{v:.9g}" for v in (mean, median, min(totals), max(totals), total)]
        if len(totals) >= 2:
            sd = _figure(combine.pstdev, totals, mean)
            sd = math.nan if sd is None else sd
            row += [f"{v:.9g}" for v in (sd * sd, q1, q3)]
        lines += [" ".join(row), ""]
    return "\n".join(lines)


def _figure(function, *args):
    """A statistic of location totals, None where they are not all finite
    (a total beyond float's range, or of opposite infinities)."""
    try:
        return function(*args)
    except (ValueError, OverflowError):
        return None


# -- the former interface of bench/cube.py ----------------------------------------
class _Metric:
    """A metric as write_grids takes it (bench/cube.py)."""

    def __init__(self, name: str, display: str, dtype: str, unit: str, descr: str) -> None:
        self.name, self.display, self.dtype, self.descr = name, display, dtype, descr
        self.uom = "sec" if unit.lower() in ("sec", "s", "second", "seconds") else "occ"


def write_grids(path: str, metrics: list[_Metric], grids: list[array], names: list, regions: dict,
                program: str, tree: list, force: bool = False,
                cnodes: Sequence[tuple[int, int]] | None = None) -> str:
    """The cube from dense grids (one per metric, call path major, "Q" or
    "d" arrays, viewed without copies), regions[name] = {file, begin, end},
    flat under the program's root (cnodes None) or (region id, depth)
    cnodes; tree: [(host, [(process, rank, [(id, thread, rank)])])]."""
    exp = Experiment()
    exp.add_region(Region(program, "", -1, -1, "the whole program", "artificial", "user"))
    for n in names:
        r = regions[n]
        exp.add_region(Region(r.get("name", n), r["file"], r["begin"], r["end"]))
    root = exp.add_cnode(0, None)
    if cnodes is None:
        for i in range(1, len(names) + 1):
            exp.add_cnode(i, root)
    else:
        stack = [root]
        for region, d in cnodes:
            del stack[d:]
            stack.append(exp.add_cnode(region, stack[-1]))
    for host, groups in tree:
        for process, rank, locations in groups:
            exp.locations += [Location("machine", host, process, rank, thread, trank) for _, thread, trank in locations]
    for m, g in zip(metrics, grids, strict=True):
        exp.add_metric(Metric(m.name, m.display, m.uom, m.dtype, "EXCLUSIVE", m.descr))
        a = np.frombuffer(g, dtype=np.uint64 if g.typecode == "Q" else np.float64)
        exp.values[m.name] = a.view(np.int64).reshape(len(exp.cnodes), -1) if g.typecode == "Q" else \
            a.reshape(len(exp.cnodes), -1)
    return write_experiment(exp, path, force)


__all__ = ["write", "write_experiment", "targets", "statistics_text", "depth_first", "wide_first", "DERIVED_KINDS"]
