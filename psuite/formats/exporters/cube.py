"""CUBE 4 (.cubex), as the CUBE 4.3 user guide, cubelib and pycubexr read
it: a tar of anchor.xml (metric tree, program, system tree) and per metric
<id>.index and <id>.data, plus the guide's statistics file (<name>.stat)
beside it.  Written from a psuite.model.experiment.Experiment; a report goes
through psuite.analysis.experiments.from_report first.

- Metrics: the experiment's tree, nested, ids in tree order, each named
  so that CubePL can refer to it (cube_names.with_cubepl_names).  A stored
  metric is written as it is held (EXCLUSIVE or INCLUSIVE, UINT64 when its
  integers are none negative, else INT64; DOUBLE).  A derived metric is
  written as CUBE's own derived metric (POSTDERIVED or PREDERIVED_*, DOUBLE,
  its <cubepl> expression, no data), so that CubeLib evaluates it as psuite
  does: a ratio over four ranks is the ratio of the sums, not the sum of
  four ratios (pycubexr, which knows stored metrics only, cannot read a
  cube with one).  A profile sampled on a timer also gets "visits" (its
  samples again), a counting run "time" and "visits" (its wall clock, one
  run per location), marked STAND_IN: CubeLib's cube_stat -t asks for
  time and visits by those names and lists nothing without them
  (for_cube_stat).
- Program: one <region> per region, the call tree nested, cnode ids in
  depth-first order, call-site lines where known.
- System: machine -> node -> process (rank) -> thread, location ids in
  tree order; the experiment's Cartesian topologies as <cart>, with the
  coordinates of the locations placed in them.
- Data: per metric a dense index (every call path listed) and
  uncompressed CUBEX.DATA in native byte order (the index's leading 1
  tells readers which), rows in the order CUBE enumerates call paths for
  the metric's kind (depth first for EXCLUSIVE, cubelib's "wide search"
  for INCLUSIVE), columns by location id.  The arrays are streamed into
  the tar as they are, without copies when the experiment's call paths
  and locations are already in the file's order.

Several call-tree roots are written as several roots, as CubeLib and
Score-P write them (pycubexr 2.1, which asserts one root, reads such a
cube no more).

A combination (psprocess -c) is each document's experiment merged keeping
every process (from_report), so -c --cube writes what --cube of each
followed by psprocess merge -c writes."""

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
from psuite.formats.exporters.calltree_common import text
from psuite.model import statistics
from psuite.model.experiment import DERIVED_KINDS, INCLUSIVE, Experiment, Location, Metric, Region, evaluate

EXTENSION = ".cubex"
# the metric is written only for CubeLib's tools, repeating another: said by a metric attribute, and by an
# experiment attribute STAND_IN::name, which psuite drops on reading (experiments.as_written)
STAND_IN = "psuite::stand_in"
SAMPLED_ON = "psuite::event"  # experiments.SAMPLED_ON: a psuite profile, whose regions' lines are sampled lines
# a profile's regions' lines, "region begin end" a line: they are the lines samples fell on, which differ from
# run to run, and CubeLib unifies regions only of equal name, file, begin and end line (Region's ==): written
# as unknown (-1) and kept here, psuite's reading restores them (experiments.as_written)
SAMPLED_LINES = "psuite::sampled_lines"
# a profile's call paths' lines ("cnode line" a line, cnodes numbered as in the file): where samples fell in a
# leaf, the call site in a caller, as they fell in this run; CubeLib unifies call paths only of equal call-site
# line (Cnode's ==), so they are written as unknown and kept here, restored by experiments.as_written
SAMPLED_CALL_LINES = "psuite::sampled_call_lines"
FLOAT_TYPES = ("DOUBLE", "MINDOUBLE", "MAXDOUBLE")

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML 1.0 cannot hold


def escape(s: str, entities: dict[str, str] | None = None) -> str:
    """s as XML character data: escaped, undecodable bytes as U+FFFD, and
    characters XML cannot hold (control characters a symbol may have) as
    spaces."""
    return saxutils.escape(_NOT_XML.sub(" ", text(s)), entities or {})


def _attr(s: str) -> str:
    return escape(s, {'"': "&quot;", "\n": "&#10;", "\t": "&#9;", "\r": "&#13;"})


def _attrs(attributes: dict[str, str], skip: tuple[str, ...] = ()) -> str:
    """CUBE's <attr key value/> elements of an element's attributes."""
    return "".join(f'<attr key="{_attr(k)}" value="{_attr(v)}"/>' for k, v in attributes.items() if k not in skip)


def targets(path: str) -> list[str]:
    """The files write(..., path) creates: the cube and its statistics."""
    if not path.endswith(EXTENSION):
        raise UsageError(f"--cube {path}: the file name must end in {EXTENSION}")
    return [path, path[: -len(EXTENSION)] + ".stat"]


def write(obj, path: str, module: str | bool | None = None, force: bool = False) -> str:
    """Write the .cubex and, beside it, the .stat, of an Experiment (a
    document becomes one through analysis.experiments.from_report).  module:
    unused (for the single-module formats).  Says what was written."""
    if isinstance(module, bool):  # write(obj, path, True): force given where the exporters' convention has module
        module, force = None, module
    if not isinstance(obj, Experiment):
        raise TypeError(f"the CUBE writer writes an Experiment, not {type(obj).__name__}")
    exp = obj
    exp.check()
    stat = write_experiment(exp, path, force)
    below = len(exp.cnodes) - len(exp.roots)
    flat = all(c.parent is None or exp.cnodes[c.parent].parent is None for c in exp.cnodes)
    if below and not flat:
        shape = f"call tree of {below} calling contexts"
    else:
        shape = "flat"
    return f"CUBE 4 ({shape}), statistics in {stat}"


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
    from psuite.model.experiment import system_tree

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


def _dtype(m: Metric, a: np.ndarray | None) -> str:
    """The file's dtype for the metric's values (a derived metric's: DOUBLE,
    what CubeLib computes CubePL in)."""
    if a is None:
        return "DOUBLE" if m.derived else m.dtype
    if a.dtype.kind == "f":
        return m.dtype.upper() if m.dtype.upper() in FLOAT_TYPES else "DOUBLE"
    if m.dtype.upper().startswith("U") and (a.size == 0 or int(a.min()) >= 0):
        return "UINT64"
    return "INT64"


def for_cube_stat(exp: Experiment) -> Experiment:
    """The experiment with what CubeLib's cube_stat -t needs where psuite
    measured time: it lists regions by "time" and "visits" (or metrics
    whose unique names end in Time and Visits) and refuses a cube without
    both.  Each added metric is stored (so that pycubexr still reads the
    cube), says what it is in its display name and description, and is
    marked STAND_IN (psuite's reading leaves it out):

    - a profile sampled on a timer (time and samples, no visits): "visits",
      its samples again; a sampling profile does not count calls;
    - a counting run (one call path, wall_seconds, neither time nor
      visits): "time", its wall-clock seconds again, and "visits", 1 per
      location (each report is one run of the program in its process or
      thread).

    Otherwise the experiment itself (cube_stat -t then says which of
    "Time" and "Visits" it cannot find)."""
    names = {m.name for m in exp.metrics}
    timed = "time" in names or any(n.endswith("Time") for n in names)
    visits = "visits" in names or any(n.endswith("Visits") for n in names)
    if visits:
        return exp
    added: list[tuple[Metric, np.ndarray, str]] = []
    if timed and "samples" in names and not exp.metric("samples").derived:
        samples = exp.metric("samples")
        added.append((Metric("visits", "Samples (as visits)", "occ", samples.dtype, samples.kind,
                             "Not a count of calls, which a sampling profile does not take: the samples in the "
                             "call path again, under the name CubeLib's cube_stat -t lists as the number of calls"),
                      exp.stored("samples"), "samples"))
    elif not timed and len(exp.cnodes) == 1 and "wall_seconds" in names and not exp.metric("wall_seconds").derived:
        wall = exp.metric("wall_seconds")
        added.append((Metric("time", "Time (wall clock)", "sec", "DOUBLE", wall.kind,
                             "The run's wall-clock seconds again, under the name CubeLib's cube_stat -t lists"),
                      exp.stored("wall_seconds").astype(np.float64), "wall_seconds"))
        added.append((Metric("visits", "Runs (as visits)", "occ", "UINT64", "EXCLUSIVE",
                             "1 per location: each counting report is one run of the program in its process or "
                             "thread, under the name CubeLib's cube_stat -t lists as the number of calls"),
                      np.ones((1, len(exp.locations)), dtype=np.int64), "one run per location"))
    if not added:
        return exp
    out = Experiment(metrics=list(exp.metrics), regions=exp.regions, cnodes=exp.cnodes, locations=exp.locations,
                     values=dict(exp.values), attributes=dict(exp.attributes), topologies=exp.topologies)
    for m, values, of in added:
        out.add_metric(m)
        out.values[m.name] = values
        out.attributes[f"{STAND_IN}::{m.name}"] = of
    return out


def write_experiment(exp: Experiment, path: str, force: bool = False) -> str:
    """The cube and its statistics file; returns the .stat path."""
    from psuite.cli_common import atomic_outputs

    path, stat_path = targets(path)
    if not exp.cnodes or not exp.locations:
        raise UsageError(f"{path}: the experiment has no {'call paths' if not exp.cnodes else 'locations'}; a CUBE "
                         "file needs at least one of each")
    from psuite.model.cube_names import with_cubepl_names

    exp = with_cubepl_names(exp)  # names CubeLib's CubePL can refer to (task-clock as task_clock)
    exp = for_cube_stat(exp)
    deep = depth_first(exp)
    if len(deep) != len(exp.cnodes):
        raise UsageError("the call tree has a cnode no root reaches; it cannot be written")
    wide = None
    locs, tree = location_order(exp)
    same_locs = _identity(locs)
    order = metric_order(exp)
    arrays = {i: None if exp.metrics[i].derived else exp.stored(exp.metrics[i].name) for i in order}
    dtypes = {i: _dtype(exp.metrics[i], arrays[i]) for i in order}
    anchor = _anchor(exp, order, dtypes, deep, locs, tree)
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
            if exp.metrics[i].kind == INCLUSIVE:
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


def _anchor(exp: Experiment, order: list[int], dtypes: dict, deep: np.ndarray, locs: np.ndarray, tree: list) -> bytes:
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<cube version="4.4">']
    prefix = f"{STAND_IN}::"
    stand_ins = {k[len(prefix):]: v for k, v in exp.attributes.items() if k.startswith(prefix)}
    attributes = {"CUBE_CT_AGGR": "SUM", "Creator": "psuite", **exp.attributes}
    attributes.pop(SAMPLED_LINES, None)
    attributes.pop(SAMPLED_CALL_LINES, None)
    sampled = SAMPLED_ON in exp.attributes
    if sampled:
        lines = [f"{i} {r.begin} {r.end}" for i, r in enumerate(exp.regions) if r.begin >= 0 or r.end >= 0]
        if lines:
            attributes[SAMPLED_LINES] = "\n".join(lines)
        cnodes = exp.cnodes
        lines = [f"{k} {line}" for k, c in enumerate(deep.tolist()) if (line := cnodes[c].line) >= 0]
        if lines:
            attributes[SAMPLED_CALL_LINES] = "\n".join(lines)
    out += [f'<attr key="{_attr(k)}" value="{_attr(v)}"/>' for k, v in attributes.items()]
    out.append("<metrics>")
    file_id = {i: k for k, i in enumerate(order)}

    def metric(i: int) -> None:
        m = exp.metrics[i]
        extra = f"<cubepl>{escape(m.expression)}</cubepl>" if m.derived else ""
        if m.derived and m.init:  # CubeLib runs it before evaluating any derived metric
            extra += f"<cubeplinit>{escape(m.init)}</cubeplinit>"
        for kind in ("plus", "minus", "aggr") if m.derived else ():
            if m.aggregation.get(kind):  # unquoted: the only form CubeLib's scanner reads (and writes)
                extra += f"<cubeplaggr cubeplaggrtype={kind}>{escape(m.aggregation[kind])}</cubeplaggr>"
        # a metric's own attributes, but not the markers this writer sets itself
        extra += _attrs(m.attributes, (STAND_IN, "psuite::cubepl", "psuite::kind"))
        if m.name in stand_ins:
            extra += f'<attr key="{STAND_IN}" value="{_attr(stand_ins[m.name])}"/>'
        out.append(f'<metric id="{file_id[i]}" type="{m.kind}"><disp_name>{escape(m.display or m.name)}</disp_name>'
                   f"<uniq_name>{escape(m.name)}</uniq_name><dtype>{dtypes[i]}</dtype><uom>{escape(m.unit)}</uom>"
                   f"<url></url><descr>{escape(m.description)}</descr>{extra}")
        for c in exp.metric_children(i):
            metric(c)
        out.append("</metric>")

    for i in exp.metric_children(None):
        metric(i)
    out.append("</metrics><program>")
    for i, r in enumerate(exp.regions):
        begin, end = (-1, -1) if sampled else (r.begin, r.end)
        out.append(f'<region id="{i}" mod="{_attr(r.module)}" begin="{begin}" end="{end}"><name>{escape(r.name)}'
                   f"</name><mangled_name>{escape(r.name)}</mangled_name><paradigm>{escape(r.paradigm)}</paradigm>"
                   f"<role>{escape(r.role)}</role><url></url><descr>{escape(r.description)}</descr>"
                   f"{_attrs(r.attributes)}</region>")
    depth = [0] * len(exp.cnodes)
    open_depth = -1  # depth of the innermost open <cnode>
    for file_cnode, c in enumerate(deep.tolist()):
        node = exp.cnodes[c]
        d = 0 if node.parent is None else depth[node.parent] + 1
        depth[c] = d
        out.append("</cnode>" * (open_depth - d + 1))
        line = f' line="{node.line}"' if node.line >= 0 and not sampled else ""
        out.append(f'<cnode id="{file_cnode}" calleeId="{node.region}"{line}>{_attrs(node.attributes)}')
        open_depth = d
    out.append("</cnode>" * (open_depth + 1))
    out.append("</program><system>")
    node_id = group_id = loc_id = 0
    for machine, nodes in tree:
        # a machine's, node's or process's attributes: those its first location carries
        first = exp.locations[nodes[0][1][0][1][0]]
        out.append(f'<systemtreenode Id="{node_id}"><name>{escape(machine)}</name><class>machine</class>'
                   f"{_attrs(first.machine_attributes)}")
        node_id += 1
        for node_name, groups in nodes:
            first = exp.locations[groups[0][1][0]]
            out.append(f'<systemtreenode Id="{node_id}"><name>{escape(node_name)}</name><class>node</class>'
                       f"{_attrs(first.node_attributes)}")
            node_id += 1
            for (rank, process), members in groups:
                first = exp.locations[members[0]]
                out.append(f'<locationgroup Id="{group_id}"><name>{escape(process)}</name><rank>{rank}</rank>'
                           f"<type>process</type>{_attrs(first.process_attributes)}")
                group_id += 1
                for i in members:
                    loc = exp.locations[i]
                    out.append(f'<location Id="{loc_id}"><name>{escape(loc.thread)}</name>'
                               f"<rank>{loc.thread_rank}</rank><type>thread</type>{_attrs(loc.attributes)}"
                               "</location>")
                    loc_id += 1
                out.append("</locationgroup>")
            out.append("</systemtreenode>")
        out.append("</systemtreenode>")
    out += _topologies(exp, locs)
    out.append("</system></cube>\n")
    return "\n".join(out).encode()


def _topologies(exp: Experiment, locs: np.ndarray) -> list[str]:
    """<topologies> with one <cart> per topology: its dimensions and the
    coordinates of the locations placed in it, by file location id."""
    if not exp.topologies:
        return []
    file_loc = {int(i): k for k, i in enumerate(locs.tolist())}
    out = ["<topologies>"]
    for t in exp.topologies:
        name = f' name="{_attr(t.name)}"' if t.name else ""
        out.append(f'<cart{name} ndims="{len(t.dimensions)}">')
        out += [f'<dim name="{_attr(d)}" size="{size}" periodic="{"true" if periodic else "false"}"/>'
                for d, size, periodic in t.dimensions]
        for loc, coords in sorted(t.coordinates.items(), key=lambda kv: file_loc.get(kv[0], -1)):
            if len(coords) != len(t.dimensions) or loc not in file_loc:
                raise UsageError(f"topology {t.name!r}: location {loc} has coordinates {tuple(coords)} for "
                                 f"{len(t.dimensions)} dimensions; a CUBE file cannot hold them")
            out.append(f'<coord locId="{file_loc[loc]}">{" ".join(str(int(c)) for c in coords)}</coord>')
        out.append("</cart>")
    out.append("</topologies>")
    return out


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
            total, mean = _figure(statistics.total_and_mean, totals) or (math.nan, math.nan)
            q1, median, q3 = statistics.quartiles(totals)
            row += [f"{v:.9g}" for v in (mean, median, min(totals), max(totals), total)]
        if len(totals) >= 2:
            sd = _figure(statistics.pstdev, totals, mean)
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
