"""The human-readable call-tree reports of profiles with call paths
(psprocess --calltree VIEW):

- top-down: the calling contexts as an indented tree from the outermost
  frames, inclusive and exclusive samples (and % of the recorded samples)
  per call path; for combined profiles also the spread of each path's
  inclusive samples across the threads combined (mean, std dev, max);
- bottom-up: the functions by exclusive samples, each with its callers
  expanded beneath (the samples of the function that came through them);
- callers: gprof's call-graph view per function, its callers above, the
  function with its inclusive and self samples, its callees below.

Inlined frames are frames of their own, marked "[inlined]".  A threshold
(% of the recorded samples) leaves out the smaller paths and functions; a
depth limit leaves out the deeper frames (top-down, bottom-up)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from psuite.model.calltree import CallNode, CallTree, Frame, merged, thread_trees
from psuite.model.report import MultiReport, ProfileReport

VIEWS = ("top-down", "bottom-up", "callers")
RULE = "=" * 78
SPONTANEOUS = "<spontaneous>"  # gprof's name for the caller of outermost frames


def label(frame: Frame) -> str:
    """A frame as shown: the function, marked when inlined; an unknown
    function with the object it lies in."""
    name = frame.function
    if name.startswith("??") and frame.module and frame.module != "??":
        name = f"{name} ({os.path.basename(frame.module)})"
    return f"{name} [inlined]" if frame.inlined else name


def _n(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.2f}"


def _pct(v: float, total: float) -> str:
    return f"{100.0 * v / total:6.2f}%" if total else "   -   "


def has_calltree(report) -> bool:
    return bool(thread_trees(report))


def trees_of(report, per_thread: bool) -> list[tuple[str, CallTree]]:
    """(title, tree) to show: every thread's own, or one for all threads."""
    trees = thread_trees(report)
    if not trees:
        return []
    if per_thread:
        return [(f"Thread {t.thread} (tid {t.tid})" if not isinstance(report, MultiReport) else t.label.capitalize(),
                 t.tree) for t in trees]
    if len(trees) == 1:
        return [(f"Thread {trees[0].thread} (tid {trees[0].tid})" if not isinstance(report, MultiReport)
                 else trees[0].label.capitalize(), trees[0].tree)]
    return [(f"All {len(trees)} threads merged", merged([t.tree for t in trees]))]


# --- top-down -----------------------------------------------------------

def top_down(tree: CallTree, threshold: float = 0.0, depth: int | None = None) -> list[str]:
    def row(value: float, node: CallNode, total: float) -> str:
        return f"{_n(value):>10} {_pct(value, total)} {_n(node.exclusive):>10} {_pct(node.exclusive, total)}  "

    return _indented(tree, f"{'Inclusive':>10} {'%':>7} {'Exclusive':>10} {'%':>7}  Call path", row, threshold,
                     depth)


def _indented(tree: CallTree, header: str, row, threshold: float, depth: int | None) -> list[str]:
    """The tree indented by depth, the largest inclusive value first; each
    line is row(inclusive, node, total) then the frame."""
    incl = tree.inclusive_values()
    total = incl[id(tree.root)]
    cut = total * threshold / 100.0
    lines = [header]
    hidden = deep = 0
    stack = [(c, 1) for c in _sorted(tree.root, incl, reverse=True)]
    while stack:
        node, d = stack.pop()
        value = incl[id(node)]
        if value < cut:
            hidden += 1
            continue
        lines.append(f"{row(value, node, total)}{'  ' * (d - 1)}{label(node.frame)}")
        if depth is not None and d >= depth:
            deep += bool(node.children)
            continue
        stack.extend((c, d + 1) for c in _sorted(node, incl, reverse=True))
    _footer(lines, hidden, deep, threshold, depth)
    return lines


def _sorted(node: CallNode, values: dict[int, float], reverse: bool = False) -> list[CallNode]:
    """Children by value, most first (reversed: for a stack)."""
    out = sorted(node.children.values(), key=lambda c: (-values[id(c)], c.frame.function))
    return out[::-1] if reverse else out


def _footer(lines: list[str], hidden: int, deep: int, threshold: float, depth: int | None) -> None:
    if hidden:
        lines.append(f"({hidden:,} call path{'s' if hidden != 1 else ''} below {threshold:g}% left out)")
    if deep:
        lines.append(f"(call paths deeper than --depth {depth} left out)")


def top_down_spread(m: MultiReport, threshold: float = 0.0, depth: int | None = None) -> list[str]:
    """The merged tree of combined profiles, each path's inclusive samples
    with their spread across the threads combined."""
    stats = m.callpath_statistics
    total = sum(p.inclusive.sum for p in stats if p.depth == 1)
    cut = total * threshold / 100.0
    lines = [f"{'Inclusive':>10} {'%':>7} {'Exclusive':>10} {'Mean':>9} {'Std dev':>9} {'Max':>9}  Call path"]
    hidden = deep = 0
    skip_below: int | None = None  # depth of a path left out: its descendants follow it
    for p in stats:
        if skip_below is not None and p.depth > skip_below:
            continue
        skip_below = None
        s = p.inclusive
        if s.sum < cut:
            hidden += 1
            skip_below = p.depth
            continue
        if depth is not None and p.depth > depth:
            deep = 1
            skip_below = p.depth
            continue
        lines.append(f"{_n(s.sum):>10} {_pct(s.sum, total)} {_n(p.exclusive.sum):>10} {s.mean:>9,.1f} "
                     f"{s.stddev:>9,.1f} {_n(s.max):>9}  {'  ' * (p.depth - 1)}{p.path[-1]}")
    _footer(lines, hidden, deep, threshold, depth)
    lines.append("(Mean, Std dev, Max: the path's inclusive samples per thread combined)")
    return lines


# --- bottom-up ----------------------------------------------------------

def inverted(tree: CallTree) -> CallTree:
    """The tree of callers: under each function, the callers its exclusive
    samples came through, outermost last.  One pass over the tree, each
    sampled context added along its path: O(nodes x depth)."""
    out = CallTree()
    stack: list[tuple[CallNode, tuple[Frame, ...]]] = [(tree.root, ())]
    while stack:
        node, path = stack.pop()
        if node.exclusive:
            out.add(path[::-1], node.exclusive)
        stack.extend((c, (*path, c.frame)) for c in node.children.values())
    return out


def bottom_up(tree: CallTree, threshold: float = 0.0, depth: int | None = None) -> list[str]:
    def row(value: float, node: CallNode, total: float) -> str:
        return f"{_n(value):>10} {_pct(value, total)}  "

    return _indented(inverted(tree), f"{'Samples':>10} {'%':>7}  Function (self samples), callers beneath "
                     "(samples through them)", row, threshold, depth)


# --- callers (gprof call graph) -----------------------------------------

class CallGraph:
    """Per function (Frame.key): self samples, inclusive samples (each
    sample once, however often the function recurs in its path), and per
    caller and callee edge the inclusive samples through it (each sample
    once per edge)."""

    def __init__(self, tree: CallTree) -> None:
        incl = tree.inclusive_values()
        self.total = incl[id(tree.root)]
        self.frames: dict[tuple, Frame] = {}
        self.self: dict[tuple, float] = {}
        self.inclusive: dict[tuple, float] = {}
        self.callers: dict[tuple, dict[tuple | None, float]] = {}
        self.callees: dict[tuple, dict[tuple, float]] = {}
        active: dict[tuple, int] = {}
        active_edges: dict[tuple, int] = {}
        stack: list = [(c, None, False) for c in tree.root.children.values()]
        while stack:
            node, caller, leaving = stack.pop()
            f = node.frame.key
            edge = (caller, f)
            if leaving:
                active[f] -= 1
                active_edges[edge] -= 1
                continue
            value = incl[id(node)]
            self.frames.setdefault(f, node.frame)
            self.self[f] = self.self.get(f, 0.0) + node.exclusive
            if not active.get(f):
                self.inclusive[f] = self.inclusive.get(f, 0.0) + value
            if not active_edges.get(edge):
                ins = self.callers.setdefault(f, {})
                ins[caller] = ins.get(caller, 0.0) + value
                if caller is not None:
                    outs = self.callees.setdefault(caller, {})
                    outs[f] = outs.get(f, 0.0) + value
            active[f] = active.get(f, 0) + 1
            active_edges[edge] = active_edges.get(edge, 0) + 1
            stack.append((node, caller, True))
            stack.extend((c, f, False) for c in node.children.values())

    def name(self, key: tuple | None) -> str:
        return SPONTANEOUS if key is None else label(self.frames[key])


def callers(tree: CallTree, threshold: float = 0.0) -> list[str]:
    g = CallGraph(tree)
    cut = g.total * threshold / 100.0
    order = sorted(g.inclusive, key=lambda f: (-g.inclusive[f], g.name(f)))
    index = {f: i for i, f in enumerate(order, 1)}
    lines = [f"{'Index':>7} {'Total %':>8} {'Inclusive':>10} {'Self':>10}  Function (callers above, callees below)"]
    hidden = 0
    for f in order:
        if g.inclusive[f] < cut:
            hidden += 1
            continue
        lines.append("-" * 78)
        for caller, v in sorted(g.callers.get(f, {}).items(), key=lambda kv: (-kv[1], g.name(kv[0]))):
            if v >= cut:
                lines.append(f"{'':>7} {'':>8} {_n(v):>10} {'':>10}      {g.name(caller)}"
                             + (f" [{index[caller]}]" if caller is not None else ""))
        lines.append(f"{'[' + str(index[f]) + ']':>7} {_pct(g.inclusive[f], g.total):>8} {_n(g.inclusive[f]):>10} "
                     f"{_n(g.self[f]):>10}  {g.name(f)} [{index[f]}]")
        for callee, v in sorted(g.callees.get(f, {}).items(), key=lambda kv: (-kv[1], g.name(kv[0]))):
            if v >= cut:
                lines.append(f"{'':>7} {'':>8} {_n(v):>10} {'':>10}      {g.name(callee)} [{index[callee]}]")
    lines.append("-" * 78)
    if hidden:
        lines.append(f"({hidden:,} function{'s' if hidden != 1 else ''} below {threshold:g}% left out)")
    return lines


# --- the report ---------------------------------------------------------

def _header(r, view: str, threshold: float, depth: int | None) -> list[str]:
    lines = [f"PerfSuite Call Tree Report ({view})", ""]
    if isinstance(r, MultiReport):
        profiles = [p for p in r.reports if getattr(p, "callpaths", None) is not None]
        cps = [p.callpaths for p in profiles]
        pairs = [("Profiles combined", f"{len(r.reports):,} ({len(profiles):,} with call paths)"),
                 ("Threads combined", f"{len(thread_trees(r)):,}")]
    else:
        cps = [r.callpaths]
        pairs = [("XML Source", r.source),
                 ("Call paths", r.callpaths.source if r.callpaths.source != r.source else ""), ("Host", r.hostname),
                 ("Process ID", r.pid), ("Command", r.command)]
    samples = sum(cp.samples for cp in cps)
    truncated = sum(cp.truncated for cp in cps)
    lost = sum(cp.lost for cp in cps)
    events = sorted({cp.event for cp in cps if cp.event})
    unwinders = sorted({cp.unwinder for cp in cps if cp.unwinder})
    pairs += [("Event", ", ".join(events)), ("Samples", f"{samples:,}"),
              ("Truncated", f"{truncated:,}" + _why_truncated(cps, truncated)),
              ("Lost", f"{lost:,}" + (" (taken but not recorded in the call paths)" if lost else "")),
              ("Unwinder", ", ".join(unwinders)), ("Minimum inclusive %", f"{threshold:g}"),
              ("Depth limit", depth)]
    lines += [f"{k:<24}: {v}" for k, v in pairs if v not in (None, "")]
    return lines


def _why_truncated(cps, truncated: int) -> str:
    """Why samples have unknown outer frames: a stack deeper than psrun
    records, or an unwinder that could not go on (told apart by how many
    frames are known under the truncated node)."""
    if not truncated:
        return ""
    deep = sum(t.truncated_deeper_than(cp.maxdepth) for cp in cps for t in cp.threads)
    short = truncated - deep
    maxdepth = max((cp.maxdepth for cp in cps), default=0)
    parts = []
    if deep:
        parts.append(f"{deep:,} deeper than {maxdepth} frames")
    if short:
        parts.append(f"{short:,} where the unwinder could not go on")
    return f" ({'; '.join(parts)})"


def render_one(r, view: str = "top-down", threshold: float = 0.0, depth: int | None = None,
               per_thread: bool = False) -> str:
    source = getattr(r, "source", "") or "the combined profiles"
    if not has_calltree(r):
        return f"{source}: no call paths recorded (record them with psrun --callpath)\n"
    lines = _header(r, view, threshold, depth)
    if isinstance(r, MultiReport) and view == "top-down" and not per_thread and r.callpath_statistics:
        lines += ["", "Combined call tree", RULE]
        lines += top_down_spread(r, threshold, depth)
        return "\n".join(lines) + "\n"
    for title, tree in trees_of(r, per_thread):
        lines += ["", title, RULE]
        if view == "top-down":
            lines += top_down(tree, threshold, depth)
        elif view == "bottom-up":
            lines += bottom_up(tree, threshold, depth)
        else:
            lines += callers(tree, threshold)
    return "\n".join(lines) + "\n"


def render_chunks(reports: list, threshold: float = 0.0, view: str = "top-down", depth: int | None = None,
                  per_thread: bool = False, **_options) -> Iterator[str]:
    for k, r in enumerate(reports):
        if k:
            yield "\n"
        yield render_one(r, view, threshold, depth, per_thread)


def render(reports: list, threshold: float = 0.0, **options) -> str:
    return "".join(render_chunks(reports, threshold, **options))


def hint(reports: list) -> str:
    """The line added to the flat text report of profiles with call paths."""
    with_paths = [r for r in reports if isinstance(r, (ProfileReport, MultiReport)) and has_calltree(r)]
    if not with_paths:
        return ""
    return ("\nCall paths were recorded: see them with psprocess --calltree [top-down|bottom-up|callers] "
            "(and --per-thread, --depth N).\n")
