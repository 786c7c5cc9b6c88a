"""psprocess's counterparts of CubeLib's single-purpose tools: clean
(cube_clean), commoncalltree (cube_commoncalltree), derive (cube_derive),
inclusify and exclusify (cube_inclusify, cube_exclusify), remap
(cube_remap2; the work is in remap.py) and topoassist (cube_topoassist,
without its questions: options say what it asked).

Each is an operation on psuite.model.experiment.Experiment (the functions below,
usable without the command line) and a subcommand whose parser and runner
live here; subcommands.py only lists them.  Like every psprocess
subcommand: -o OUT.cubex, --force to replace a file, one line on standard
error and exit status 2 on bad input, nothing written then.

Only argparse-level work happens at import, as in subcommands.py."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from psuite.cli_parser import ArgumentParser
from psuite.errors import UsageError

if TYPE_CHECKING:
    from psuite.model.experiment import Experiment

NAMES = ("clean", "commoncalltree", "derive", "inclusify", "exclusify", "remap", "topoassist")

SUMMARY = """\
  clean IN                  drop the regions no call path uses (cube_clean)
  commoncalltree A B ...    cut each input to the call paths all have
  derive NAME IN -e EXPR    add a metric from a CubePL expression
  inclusify IN              store every metric's values inclusive
  exclusify IN              store every metric's values exclusive
  remap IN [-r SPEC]        Score-P's metric tree from a remapping spec
  topoassist IN             add a Cartesian topology, or name one"""

COMMON_SUFFIX = "_commoncalltree"
REMAP_OUTPUT = "remap.cubex"  # cube_remap2's default output

_STATUS = "exit status: 0 on success, 2 on bad input (one line on standard error)."
_INPUTS = """\
inputs: anything psuite reads - CUBE 4 files (.cubex: Score-P's, CubeLib's,
psuite's) and psrun's XML documents."""
_REMAP_INPUTS = """\
inputs: a CUBE 4 file (.cubex: Score-P's, CubeLib's, psuite's), as
cube_remap2 takes; a remapping specification (-r SPEC) as CubeLib reads it."""
_OUTPUT = """\
result: a CUBE 4 file (-o OUT.cubex) and its statistics file (OUT.stat beside
it).  An existing file is kept unless --force is given; an input never is."""

HELP: dict[str, tuple[str, str, str]] = {
    "clean": ("psprocess clean IN [-C] -o OUT.cubex [--force]",
              """\
A copy of the experiment without the definitions nothing refers to (CUBE's
cube_clean): the regions no call path enters.  Score-P defines every
region it instrumented, called or not; a cleaned cube lists only the ones
that ran.  Metrics, call paths, locations, topologies and values are kept
as they are.""",
              """\
examples:
  psprocess clean profile.cubex -o clean.cubex"""),
    "commoncalltree": ("psprocess commoncalltree A B ... [-o OUT.cubex ...] [--force]",
                       """\
Cut every input to the call tree they have in common (CUBE's
cube_commoncalltree), so runs of different versions or inputs of a
program can be compared call path by call path.  A call path is common
when every input has it: the same regions (name, module, first and last
line) from the root down.  Each input gives one output: with every metric,
location and topology, and only the common call paths.  What a dropped
call path measured is not lost: its inclusive value moves into its
parent's exclusive value, so every kept call path's inclusive value is the
input's.  Minimum and maximum metrics (min_time, max_time) keep the kept
call paths' values.

outputs: -o once per input, in the inputs' order; without -o, each input's
name less .cubex with _commoncalltree.cubex, in the current directory
(CubeLib's names).""",
                       """\
examples:
  psprocess commoncalltree v1.cubex v2.cubex
      (writes v1_commoncalltree.cubex and v2_commoncalltree.cubex)
  psprocess commoncalltree old.cubex new.cubex -o a.cubex -o b.cubex
  psprocess diff b.cubex a.cubex -o change.cubex"""),
    "derive": ("psprocess derive NAME IN (-e EXPRESSION | -E FILE) [-t prederived|postderived]\n"
               "                        [-r inclusive|exclusive] [-p PARENT] -o OUT.cubex [--force]",
               """\
Add a metric NAME computed from a CubePL expression (CUBE's cube_derive),
e.g. metric::time(i) / metric::visits(e).  Without -t the metric holds
values: the expression evaluated per call path and location, inclusive
along the call tree (-r inclusive, the default: the value a call path has
with its callees) or exclusive (-r exclusive), and stored so.  With -t the
metric is a derived metric: its expression is stored and evaluated by
whoever shows it - prederived (evaluated per call path and location, then
aggregated; -r says whether along the call tree it is inclusive or
exclusive) or postderived (evaluated on aggregated values: the right kind
for ratios).  The metric's values are DOUBLE with no unit; -p places it
below a metric (by unique or display name), else it is a new root.
Stored values must be numbers: where the expression gives none (CubePL's
x/0 is NaN, which CubeLib stores), derive refuses and names the first
such call path; a derived metric (-t) has no such limit.""",
               """\
examples:
  psprocess derive avg_time run.cubex -e 'metric::time(i)/metric::visits(e)' \\
      -t postderived -o avg.cubex
  psprocess derive comm run.cubex -E comm.cubepl -r exclusive -p time -o comm.cubex"""),
    "inclusify": ("psprocess inclusify IN [-C] -o OUT.cubex [--force]",
                  """\
Store every metric's values inclusive along the call tree (CUBE's
cube_inclusify): a call path's value then includes its callees'.  What
every view shows is unchanged; only the file's representation is.  Minimum
and maximum metrics (min_time, max_time) cannot be inclusive in CUBE and
keep their values as stored, with a note; derived metrics stay derived.
Regions no call path enters are dropped (as by clean), as CubeLib does.""",
                  """\
examples:
  psprocess inclusify profile.cubex -o incl.cubex"""),
    "exclusify": ("psprocess exclusify IN [-C] -o OUT.cubex [--force]",
                  """\
Store every metric's values exclusive along the call tree (CUBE's
cube_exclusify): a call path's value then excludes its callees'.  What
every view shows is unchanged; only the file's representation is.  Minimum
and maximum metrics keep their values; derived metrics stay derived.
Regions no call path enters are dropped (as by clean), as CubeLib does.""",
                  """\
examples:
  psprocess exclusify profile.cubex -o excl.cubex"""),
    "remap": ("psprocess remap IN [-r SPEC] [-d] [-o OUT.cubex] [--force]",
              """\
Apply a remapping specification to a profile (CUBE's cube_remap2): the
specification's metric tree replaces the profile's.  Score-P's
share/scorep/scorep.spec turns a Score-P profile's few stored metrics
(time, visits, bytes, ...) into the tree CUBE shows (Time: Execution:
Computation, MPI: Synchronization, Communication, ...; OpenMP; bytes
transferred; file operations), its derived metrics with their CubePL so
that CubeLib evaluates them.  Without -r the specification the profile
holds is used (Score-P stores it in every profile).

A metric the profile has keeps its values (in the call-tree view the
specification's type asks); one the specification names and the profile
lacks is zero, or evaluated when derived; the profile's metrics the
specification does not name are kept under their parents.  Metrics the
specification's <cubeplinit> programs set VOID (MPI's in a profile
without MPI) are left out, as CubeLib leaves them out.  Call tree,
locations and topologies are the profile's; regions no call path enters
are dropped.  psuite's model holds no metric url nor GHOST visibility
(Score-P's bytes_sent, bytes_received are written as visible metrics).
Not offered: cube_remap2's -s (Scalasca's
idle-thread and load-imbalance heuristics, computed into stored metrics)
and -c (the input's own metric tree, a copy; CubeLib 4.8.2's crashes on
Score-P profiles).""",
              """\
examples:
  psprocess remap profile.cubex -o remapped.cubex
  psprocess remap -r $SCOREP/share/scorep/scorep.spec profile.cubex -o remapped.cubex
  psprocess dump remapped.cubex -m comp

output: -o OUT.cubex; without it remap.cubex in the current directory
(cube_remap2's name)."""),
    "topoassist": ("psprocess topoassist IN [--list] | -o OUT.cubex [--force]\n"
                   "        (--create NAME --dim SIZE[:NAME][:periodic] ... [--coords FILE]\n"
                   "         | --rename INDEX=NAME | --name-dims INDEX=NAME,NAME,...)",
                   """\
Cartesian topologies of an experiment (CUBE's cube_topoassist, which asks
its questions one by one; here options give the answers).  --list shows
the topologies (index, name, dimensions).  --create adds one: a --dim per
dimension (its size, a name, and ':periodic' when it wraps around), every
thread placed at coordinates - by default in order, rank by rank and
thread by thread, the last dimension varying fastest; with --coords FILE,
a line per thread in that order, its coordinates separated by spaces
(from 0).  The topology needs a place for every thread; places may stay
empty.  --rename names topology INDEX, --name-dims names its dimensions.""",
                   """\
examples:
  psprocess topoassist run.cubex --list
  psprocess topoassist run.cubex --create grid --dim 2:x --dim 4:y:periodic -o grid.cubex
  psprocess topoassist run.cubex --create ring --dim 8 --coords ring.txt -o ring.cubex
  psprocess topoassist grid.cubex --rename 0='MPI grid' -o named.cubex"""),
}


def parser(name: str) -> ArgumentParser:
    """The argparse parser of one of these subcommands."""
    usage, what, examples = HELP[name]
    epilog = [examples, _OUTPUT, _REMAP_INPUTS if name == "remap" else _INPUTS, _STATUS]
    p = ArgumentParser(prog=f"psprocess {name}", usage=usage.replace("%", "%%"), description=what,
                       epilog="\n\n".join(epilog))
    _BUILD[name](p)
    return p


def _force(p: ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="replace an output file that exists (without --force an existing file is never touched; "
                   "files are written whole or not at all)")


def _output(p: ArgumentParser, required: bool = True) -> None:
    p.add_output_argument("-o", "--output", metavar="OUT.cubex", required=required,
                          help="the CUBE 4 file to write (and its statistics, OUT.stat)")
    _force(p)


def _build_single(p: ArgumentParser) -> None:
    p.add_argument("input", metavar="IN", help="the experiment")
    p.add_argument("-C", "--collapse", action="store_true",
                   help="put every process under one virtual machine and node (CubeLib's -C); processes and "
                   "threads stay as they are")
    _output(p)


def _build_common(p: ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="two or more experiments")
    p.add_output_argument("-o", "--output", action="append", default=[], metavar="OUT.cubex",
                          help="an output per input, in the inputs' order (default: NAME_commoncalltree.cubex "
                          "in the current directory)")
    _force(p)


def _build_derive(p: ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the new metric's name (unique and display name)")
    p.add_argument("input", metavar="IN", help="the experiment")
    p.add_argument("-e", "--expression", metavar="EXPRESSION", help="the CubePL expression")
    p.add_argument("-E", "--expression-file", metavar="FILE", help="read the CubePL expression from FILE")
    p.add_argument("-t", "--type", choices=("prederived", "postderived"),
                   help="store a derived metric (its expression) instead of values")
    p.add_argument("-r", "--calltree", choices=("inclusive", "exclusive"), default="inclusive",
                   help="values inclusive (default) or exclusive along the call tree; no meaning for postderived")
    p.add_argument("-p", "--parent", metavar="PARENT", help="the metric to place it below (default: a new root)")
    _output(p)


def _build_topoassist(p: ArgumentParser) -> None:
    p.add_argument("input", metavar="IN", help="the experiment")
    p.add_argument("--list", action="store_true", help="show the topologies, write nothing")
    p.add_argument("--create", metavar="NAME", help="add a Cartesian topology NAME")
    p.add_argument("--dim", action="append", default=[], metavar="SIZE[:NAME][:periodic]",
                   help="with --create: a dimension (repeatable, in order)")
    p.add_argument("--coords", metavar="FILE",
                   help="with --create: each thread's coordinates, a line per thread in rank and thread order")
    p.add_argument("--rename", metavar="INDEX=NAME", help="name topology INDEX (see --list)")
    p.add_argument("--name-dims", metavar="INDEX=NAME,...", help="name the dimensions of topology INDEX")
    _output(p, required=False)


def _build_remap(p: ArgumentParser) -> None:
    p.add_argument("input", metavar="IN", help="the profile (a CUBE 4 file)")
    p.add_argument("-r", "--spec", metavar="SPEC",
                   help="the remapping specification (default: the one the profile holds, as Score-P stores it)")
    p.add_argument("-d", "--convert", action="store_true",
                   help="store every metric's values, derived ones computed (cube_remap2 -d): for readers that "
                   "cannot evaluate CubePL; a ratio then adds up over locations like any stored value")
    p.add_output_argument("-o", "--output", metavar="OUT.cubex", default=REMAP_OUTPUT,
                          help=f"the CUBE 4 file to write (and its statistics, OUT.stat; default {REMAP_OUTPUT})")
    _force(p)


_BUILD: dict[str, Callable[[ArgumentParser], None]] = {
    "clean": _build_single, "commoncalltree": _build_common, "derive": _build_derive,
    "inclusify": _build_single, "exclusify": _build_single, "topoassist": _build_topoassist,
    "remap": _build_remap,
}


# ---------------------------------------------------------------- operations
# (numpy and the model are imported when they run)


def _copy(exp: Experiment) -> Experiment:
    """A shallow copy: lists and dicts new, value arrays shared (never changed in place here)."""
    import copy

    from psuite.model.experiment import Experiment

    return Experiment(metrics=[copy.copy(m) for m in exp.metrics], regions=list(exp.regions),
                      cnodes=list(exp.cnodes), locations=list(exp.locations), values=dict(exp.values),
                      attributes=dict(exp.attributes), topologies=[copy.deepcopy(t) for t in exp.topologies])


def clean(exp: Experiment) -> Experiment:
    """The experiment without the regions no call path enters (cube_clean):
    regions renumbered in their order, everything else as it was."""
    from psuite.model.experiment import Cnode

    used = sorted({c.region for c in exp.cnodes})
    new_index = {old: new for new, old in enumerate(used)}
    out = _copy(exp)
    out.regions = [exp.regions[i] for i in used]
    out.cnodes = [Cnode(new_index[c.region], c.parent, c.line) for c in exp.cnodes]
    return out


VIRTUAL_MACHINE, VIRTUAL_NODE = "Virtual machine", "Virtual node"


def collapse(exp: Experiment) -> Experiment:
    """Every location under one machine and node, CubeLib's names for them
    (its -C on one input): processes and threads unchanged."""
    import dataclasses

    out = _copy(exp)
    out.locations = [dataclasses.replace(loc, machine=VIRTUAL_MACHINE, node=VIRTUAL_NODE) for loc in exp.locations]
    return out


def convert(exp: Experiment, inclusive: bool) -> tuple[Experiment, list[str]]:
    """Every stored metric's values stored inclusive (inclusify) or
    exclusive (exclusify) along the call tree; the views are unchanged.
    Minimum and maximum metrics keep their values (CUBE has no inclusive
    MINDOUBLE or MAXDOUBLE metric: cube_inclusify says so, then crashes),
    derived metrics their expressions; regions no call path enters are
    dropped, as CubeLib does.  Returns the experiment and the
    metrics left as they were (for a note)."""
    import numpy as np

    from psuite.model.experiment import EXCLUSIVE, INCLUSIVE

    out = clean(exp)  # cube_inclusify and cube_exclusify copy only the regions call paths enter
    kept: list[str] = []
    for m in out.metrics:
        if m.derived:
            continue
        if m.combine is not np.add:  # a least or greatest value is the same either way
            if inclusive:
                kept.append(m.name)
            continue
        if m.name in exp.values:
            out.values[m.name] = exp.inclusive(m.name) if inclusive else exp.exclusive(m.name)
        m.kind = INCLUSIVE if inclusive else EXCLUSIVE
    return out, kept


def derive(exp: Experiment, name: str, expression: str, kind: str | None = None, inclusive: bool = True,
           parent: str | None = None) -> Experiment:
    """The experiment with a new metric `name` from a CubePL expression
    (cube_derive): kind None stores values (the expression evaluated per
    call path and location as a prederived metric, inclusive or exclusive
    along the call tree, and stored so); "prederived" or "postderived"
    stores the derived metric itself.  Raises UsageError for a name taken,
    an unknown parent or metric, or an expression that does not evaluate."""
    from psuite.model.experiment import EXCLUSIVE, INCLUSIVE, Metric, metric_names

    if any(m.name == name for m in exp.metrics):
        raise UsageError(f"a metric {name!r} exists already; give the new metric another name")
    if not name.strip() or any(ch.isspace() for ch in name):
        raise UsageError(f"metric name {name!r}: give a name without spaces (CubePL names it metric::NAME())")
    parent_index = None
    if parent is not None:
        found = [i for i, m in enumerate(exp.metrics) if m.name == parent] or \
                [i for i, m in enumerate(exp.metrics) if m.display == parent]
        if not found:
            raise UsageError(f"-p {parent}: no such metric; the metrics are "
                             f"{', '.join(m.name for m in exp.metrics)}")
        parent_index = found[0]
    try:
        refs = metric_names(expression)
    except ValueError as exc:
        raise UsageError(f"the expression does not parse: {exc}; check its CubePL syntax") from None
    known = {m.name for m in exp.metrics}
    unknown = [r for r in dict.fromkeys(refs) if r not in known]
    if unknown:
        raise UsageError(f"the expression names no metric of {', '.join(unknown)}; the metrics are "
                         f"{', '.join(m.name for m in exp.metrics)}")
    if kind == "postderived":
        mkind = "POSTDERIVED"
    else:
        mkind = "PREDERIVED_INCLUSIVE" if inclusive else "PREDERIVED_EXCLUSIVE"
    out = _copy(exp)
    metric = Metric(name=name, display=name, unit="", dtype="DOUBLE", kind=mkind, parent=parent_index,
                    expression=expression,
                    description=f'Created with psprocess derive from the CubePL expression "{expression}"')
    out.add_metric(metric)
    import numpy as np

    try:  # evaluated now, whatever is stored: an expression that cannot be evaluated is refused here
        with np.errstate(all="ignore"):  # an overflow is said below, not as numpy's warning
            values = out.inclusive(name) if inclusive or kind == "postderived" else out.exclusive(name)
    except RecursionError:
        raise UsageError("the expression is nested too deeply to evaluate; simplify it") from None
    except (ValueError, KeyError, ArithmeticError) as exc:
        raise UsageError(f"the expression cannot be evaluated: {str(exc).strip(chr(34))}; check its CubePL "
                         "syntax and metric names") from None
    if kind is None:  # a metric holding values: cube_derive's default
        bad = ~np.isfinite(values)
        if bad.any():  # CubeLib stores NaN (x/0) as a value; a cube holds numbers
            c, j = (int(x[0]) for x in np.nonzero(bad))
            raise UsageError(f"the expression gives no number at {int(bad.sum())} of {bad.size} call paths x "
                             f"locations (first: {'/'.join(exp.path(c))} on {exp.locations[j].label}: "
                             f"{values[c, j]}, e.g. a division by zero); store it as a derived metric "
                             "(-t postderived or -t prederived) or guard the division")
        metric.kind = INCLUSIVE if inclusive else EXCLUSIVE
        metric.expression = ""
        out.values[name] = values.astype("float64", copy=True)
    return out


def common_calltree(exps: Sequence[Experiment]) -> list[Experiment]:
    """Each experiment cut to the call paths every one has (cube_commoncalltree):
    call paths match by their regions (name, module, first and last line)
    from the root down; siblings with the same region pair up in order.
    A dropped call path's inclusive value moves into its kept parent's
    exclusive value for summed metrics, so kept call paths keep their
    inclusive values; minimum and maximum metrics keep their values."""
    keys = [_cnode_keys(e) for e in exps]
    kept = _common(exps, keys)
    return [_keep_cnodes(e, k) for e, k in zip(exps, kept, strict=True)]


def _cnode_keys(exp: Experiment) -> list[tuple]:
    out = []
    for c in exp.cnodes:
        r = exp.regions[c.region]
        out.append((r.name, r.module, r.begin, r.end))
    return out


def _common(exps: Sequence[Experiment], keys: list[list[tuple]]) -> list[list[int]]:
    """Per experiment, the indices of its common call paths, in its order."""
    kids = [e.children() for e in exps]

    def grouped(i: int, nodes: list[int]) -> dict[tuple, list[int]]:
        g: dict[tuple, list[int]] = {}
        for n in nodes:
            g.setdefault(keys[i][n], []).append(n)
        return g

    kept: list[list[int]] = [[] for _ in exps]
    # breadth-first over tuples of matched call paths, one per experiment (no recursion: deep trees are fine)
    level = [tuple(e.roots for e in exps)]
    while level:
        nxt = []
        for siblings in level:
            groups = [grouped(i, s) for i, s in enumerate(siblings)]
            for key in groups[0]:
                matches = [g.get(key, []) for g in groups]
                for pair in zip(*matches, strict=False):  # the k-th such sibling with the k-th
                    for i, c in enumerate(pair):
                        kept[i].append(c)
                    nxt.append(tuple(kids[i][c] for i, c in enumerate(pair)))
        level = nxt
    return [sorted(k) for k in kept]


def _keep_cnodes(exp: Experiment, keep: list[int]) -> Experiment:
    import numpy as np

    from psuite.model.experiment import INCLUSIVE, Cnode

    new_index = {old: new for new, old in enumerate(keep)}
    out = _copy(exp)
    out.cnodes = [Cnode(exp.cnodes[c].region, None if exp.cnodes[c].parent is None else new_index[exp.cnodes[c].parent],
                        exp.cnodes[c].line) for c in keep]
    rows = np.asarray(keep, dtype=np.int64)
    parents = out.parents()
    for m in exp.metrics:
        if m.derived or m.name not in exp.values:
            continue
        if m.combine is not np.add:
            out.values[m.name] = exp.values[m.name][rows]
            continue
        incl = exp.inclusive(m.name)[rows]
        if m.kind == INCLUSIVE:
            out.values[m.name] = incl
        else:  # own value plus what dropped callees measured: inclusive less the kept children's
            from psuite.model.experiment import to_exclusive

            out.values[m.name] = to_exclusive(incl, parents)
    return out


class _Topo:
    """Parsed --dim options."""

    def __init__(self, specs: Sequence[str]):
        self.dimensions: list[tuple[str, int, bool]] = []
        for spec in specs:
            parts = spec.split(":")
            try:
                size = int(parts[0])
            except ValueError:
                size = 0
            if size < 1:
                raise UsageError(f"--dim {spec}: give the dimension's size first, a whole number of at least 1 "
                                 "(e.g. --dim 4:x:periodic)")
            periodic = len(parts) > 1 and parts[-1] == "periodic"
            names = parts[1:-1] if periodic else parts[1:]
            if len(names) > 1:
                raise UsageError(f"--dim {spec}: SIZE[:NAME][:periodic], one name at most")
            self.dimensions.append((names[0] if names else "", size, periodic))


def location_order(exp: Experiment) -> list[int]:
    """Locations in rank order, thread by thread: the order cube_topoassist asks for coordinates."""
    return sorted(range(len(exp.locations)), key=lambda i: (exp.locations[i].rank, exp.locations[i].thread_rank))


def add_topology(exp: Experiment, name: str, dimensions: list[tuple[str, int, bool]],
                 coordinates: list[tuple[int, ...]] | None = None) -> Experiment:
    """The experiment with a new Cartesian topology: coordinates per thread
    in location_order (default: in order, the last dimension fastest)."""
    import math

    from psuite.model.experiment import Topology

    if not dimensions:
        raise UsageError("--create needs a --dim per dimension (e.g. --dim 2 --dim 4)")
    sizes = [d[1] for d in dimensions]
    places = math.prod(sizes)
    order = location_order(exp)
    if places < len(order):
        raise UsageError(f"the topology has {places} places for {len(order)} threads; give larger dimensions")
    if coordinates is None:
        coordinates = []
        for k in range(len(order)):
            coords = []
            for size in reversed(sizes):
                coords.append(k % size)
                k //= size
            coordinates.append(tuple(reversed(coords)))
    if len(coordinates) != len(order):
        raise UsageError(f"--coords: {len(coordinates)} lines for {len(order)} threads; give one line per thread")
    seen: dict[tuple[int, ...], int] = {}
    for n, c in enumerate(coordinates, 1):
        if len(c) != len(sizes) or any(not 0 <= x < s for x, s in zip(c, sizes, strict=False)):
            raise UsageError(f"--coords line {n}: {' '.join(map(str, c))} is not a place in "
                             f"{' x '.join(map(str, sizes))} (coordinates from 0, one per dimension)")
        if c in seen:
            raise UsageError(f"--coords line {n}: {' '.join(map(str, c))} is line {seen[c]}'s place too; "
                             "give each thread its own place")
        seen[c] = n
    out = _copy(exp)
    out.topologies.append(Topology(name=name, dimensions=list(dimensions),
                                   coordinates={loc: tuple(c) for loc, c in zip(order, coordinates, strict=True)}))
    return out


def _topology_index(exp: Experiment, text: str, option: str) -> int:
    try:
        i = int(text)
    except ValueError:
        i = -1
    if not 0 <= i < len(exp.topologies):
        have = f"0 to {len(exp.topologies) - 1}" if exp.topologies else "none: it has no topology"
        raise UsageError(f"{option}: no topology {text!r} (indices {have}; see --list)")
    return i


def describe_topologies(exp: Experiment) -> str:
    """cube_topoassist's listing: index, name, dimensions and places."""
    import math

    lines = [f"{len(exp.topologies)} topologies"]
    for i, t in enumerate(exp.topologies):
        dims = " x ".join(f"{n + ': ' if n else ''}{s}{' (periodic)' if p else ''}" for n, s, p in t.dimensions)
        lines.append(f"{i}. {t.name or 'unnamed topology'}, {len(t.dimensions)} dimensions: {dims}; "
                     f"{math.prod(s for _, s, _ in t.dimensions)} places, {len(t.coordinates)} threads placed")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- running


def run(args) -> int:
    """Run one of these subcommands (args from parser(name), with .command)."""
    return _RUN[args.command](args)


def _warn(command: str, message: str) -> None:
    from psuite.cli_common import hold_warning, one_line

    hold_warning(f"psprocess {command}: warning: {one_line(message)}")


def _note(command: str, message: str) -> None:
    from psuite.cli_common import hold_warning, one_line

    hold_warning(f"psprocess {command}: note: {one_line(message)}")


def _load(source: str, command: str) -> Experiment:
    from psuite.analysis import experiments

    return experiments.load(source, warn=functools.partial(_warn, command))


def _targets(path: str) -> list[str]:
    ext = ".cubex"
    if not path.endswith(ext) or path == ext:
        raise UsageError(f"-o {path}: the result is written as CUBE 4; give a name ending in {ext}")
    return [path, path[: -len(ext)] + ".stat"]


def _check(outputs: Sequence[str], force: bool, inputs: Sequence[str]) -> None:
    from psuite.analysis.inputs import files_read_with
    from psuite.cli_common import check_outputs

    check_outputs([t for o in outputs for t in _targets(o)], force, files_read_with(inputs))


def _write(command: str, exp: Experiment, path: str, force: bool) -> None:
    from psuite.cli_common import say_warnings
    from psuite.formats.exporters import cube

    done = cube.write(exp, path, force=force)
    say_warnings()
    import sys

    print(f"psprocess {command}: wrote {path}" + (f" ({done})" if done else ""), file=sys.stderr)


def _run_clean(args) -> int:
    _check([args.output], args.force, [args.input])
    exp = _load(args.input, args.command)
    out = clean(collapse(exp) if args.collapse else exp)
    dropped = len(exp.regions) - len(out.regions)
    _note(args.command, f"{dropped} of {len(exp.regions)} regions dropped (no call path enters them)")
    _write(args.command, out, args.output, args.force)
    return 0


def _run_convert(args) -> int:
    _check([args.output], args.force, [args.input])
    inclusive = args.command == "inclusify"
    exp = _load(args.input, args.command)
    out, kept = convert(collapse(exp) if args.collapse else exp, inclusive)
    if kept:
        _note(args.command, f"{', '.join(kept)} kept as stored: a minimum or maximum metric cannot be "
              "inclusive in CUBE (its values are the same in both views)")
    _write(args.command, out, args.output, args.force)
    return 0


def common_output_name(source: str) -> str:
    """CubeLib's name for an input's common-call-tree cube: its base name
    less .cubex, with _commoncalltree.cubex, in the current directory."""
    import os

    base = os.path.basename(source)
    if base.endswith(".cubex"):
        base = base[: -len(".cubex")]
    return base + COMMON_SUFFIX + ".cubex"


def _run_common(args) -> int:
    if len(args.inputs) < 2:
        raise UsageError("commoncalltree takes two or more experiments; give another input")
    outputs = list(args.output) or [common_output_name(s) for s in args.inputs]
    if len(outputs) != len(args.inputs):
        raise UsageError(f"{len(args.inputs)} inputs and {len(outputs)} -o: give one -o per input, in order, "
                         "or none")
    _check(outputs, args.force, args.inputs)
    exps = [_load(s, args.command) for s in args.inputs]
    results = common_calltree(exps)
    if not results[0].cnodes:
        raise UsageError("the inputs have no call path in common (not even the root); give runs of one program")
    for exp, path in zip(results, outputs, strict=True):
        _write(args.command, exp, path, args.force)
    return 0


def _expression(args) -> str:
    if (args.expression is None) == (args.expression_file is None):
        raise UsageError("give the expression: -e EXPRESSION or -E FILE (one of them)")
    if args.expression is not None:
        text = args.expression
    else:
        from psuite.cli_common import read_input

        data = read_input(args.expression_file, "expression file", limit=1 << 20)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"expression file {args.expression_file} is not UTF-8 text; give a text file") from None
    if not text.strip():
        raise UsageError("the expression is empty; give a CubePL expression such as metric::time(i)")
    return text.strip()


def _run_derive(args) -> int:
    expression = _expression(args)
    _check([args.output], args.force, [args.input, *([args.expression_file] if args.expression_file else [])])
    exp = _load(args.input, args.command)
    out = derive(exp, args.name, expression, kind=args.type, inclusive=args.calltree == "inclusive",
                 parent=args.parent)
    _write(args.command, out, args.output, args.force)
    return 0


def _coords_file(path: str) -> list[tuple[int, ...]]:
    from psuite.cli_common import read_input

    data = read_input(path, "coordinates file", limit=64 << 20)
    out = []
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            out.append(tuple(int(x) for x in line.split()))
        except ValueError:
            raise UsageError(f"--coords {path} line {n}: {line.strip()[:40]!r} is not whole numbers separated "
                             "by spaces; give a thread's coordinates per line") from None
    return out


def _run_topoassist(args) -> int:
    actions = [a for a in ("create", "rename", "name_dims") if getattr(args, a)]
    if args.list and (actions or args.output):
        raise UsageError("--list only shows the topologies; give it alone")
    if not args.list and len(actions) != 1:
        raise UsageError("give one of --list, --create NAME, --rename INDEX=NAME or --name-dims INDEX=NAME,...")
    if not args.create and (args.dim or args.coords):
        raise UsageError("--dim and --coords go with --create")
    if actions and not args.output:
        raise UsageError("give -o OUT.cubex: the file to write the changed experiment to")
    if args.output:
        _check([args.output], args.force, [args.input, *([args.coords] if args.coords else [])])
    exp = _load(args.input, args.command)
    if args.list:
        from psuite.cli_common import write_output

        write_output(None, describe_topologies(exp))
        return 0
    if args.create:
        dims = _Topo(args.dim).dimensions
        out = add_topology(exp, args.create, dims, _coords_file(args.coords) if args.coords else None)
    else:
        option = "--rename" if args.rename else "--name-dims"
        index_text, sep, value = (args.rename or args.name_dims).partition("=")
        if not sep:
            raise UsageError(f"{option}: give INDEX=NAME{',...' if option == '--name-dims' else ''} (see --list)")
        out = _copy(exp)
        topo = out.topologies[_topology_index(exp, index_text.strip(), option)]
        if args.rename:
            topo.name = value
        else:
            names = value.split(",")
            if len(names) != len(topo.dimensions):
                raise UsageError(f"--name-dims: {len(names)} names for {len(topo.dimensions)} dimensions; give one "
                                 "name per dimension, separated by commas")
            topo.dimensions = [(n, s, p) for n, (_, s, p) in zip(names, topo.dimensions, strict=True)]
    _write(args.command, out, args.output, args.force)
    return 0


def _run_remap(args) -> int:
    from psuite.analysis import remap
    from psuite.cli_common import read_input

    _check([args.output], args.force, [args.input, *([args.spec] if args.spec else [])])
    source = f"remapping specification {args.spec}"
    if args.spec is not None:
        spec = remap.parse_spec(read_input(args.spec, "remapping specification", UsageError,
                                           limit=remap.MAX_SPEC_BYTES), source)
    exp = _load_cube(args.input, args.command)
    if args.spec is None:
        text = remap.embedded_spec(args.input)
        if text is None:
            raise UsageError(f"{args.input} holds no remapping specification; give one with -r SPEC (Score-P "
                             "installs share/scorep/scorep.spec)")
        source = f"the remapping specification in {args.input}"
        spec = remap.parse_spec(text, source)
    out, left_out = remap.remap(exp, spec, convert=args.convert, source=source)
    if left_out:
        named = ", ".join(left_out[:12]) + (f" and {len(left_out) - 12} more" if len(left_out) > 12 else "")
        _note(args.command, f"{len(left_out)} metrics left out, void by the specification (as cube_remap2 "
              f"leaves them out): {named}")
    _write(args.command, out, args.output, args.force)
    return 0


def _load_cube(source: str, command: str) -> Experiment:
    """A CUBE 4 file, which cube_remap2 takes; anything else is refused."""
    import tarfile

    try:
        is_cube = tarfile.is_tarfile(source)
    except OSError:
        is_cube = True  # a missing or unreadable file: reading it says so
    if not is_cube:
        raise UsageError(f"{source} is not a CUBE 4 file (.cubex); remap applies to CUBE profiles, such as "
                         "Score-P's profile.cubex")
    return _load(source, command)


_RUN: dict[str, Callable] = {
    "clean": _run_clean, "commoncalltree": _run_common, "derive": _run_derive,
    "inclusify": _run_convert, "exclusify": _run_convert, "topoassist": _run_topoassist,
    "remap": _run_remap,
}
