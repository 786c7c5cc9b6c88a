"""Folded stacks ("collapsed" stacks), the input of Brendan Gregg's
flamegraph.pl, inferno-flamegraph and speedscope, and gprof2dot's
`-f collapse` (FlameGraph's README, "2. Fold stacks"):

    main;b;c;work 20

Rendered from the analysis model (psuite.model.experiment.Experiment):
one line per call path with a value of its own, its regions from the
outermost to the innermost joined by ';', a space, and the path's
exclusive value summed over every location (every thread and rank) as an
integer.  The program root psuite adds above a profile's call trees is
left out: stacks start at the program's own outermost frames.

The weight is a profile's samples, as stackcollapse-perf.pl writes them
(a mean of a combination is rounded; paths rounding to 0 are left out);
for a cube without samples (a Score-P profile) its time in microseconds;
else its first measured metric.

Names: an inlined region carries the "_[i]" suffix flamegraph.pl and
inferno colour as inlined; an unresolved frame is its module in brackets;
';' in a name becomes ',' and line breaks and other control characters
become spaces, since the format has no quoting."""

from __future__ import annotations

import re

import numpy as np

from psuite.formats.exporters.calltree_common import (
    added_root,
    as_int,
    check_call_paths,
    region_names,
    weight_metric,
)
from psuite.model.experiment import Experiment

EXTENSION = ".folded"
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def folded_name(name: str, inlined: bool = False) -> str:
    """A region's name as one element of a folded line."""
    name = _UNSAFE.sub(" ", name.replace(";", ",")).strip() or "[unknown]"
    return name + "_[i]" if inlined else name


def folded_lines(exp: Experiment) -> dict[str, int]:
    """Stack text -> the call paths' exclusive weights (weight_metric)
    summed over every location, in call-tree order (a parent before its
    children); paths whose weight rounds to 0 left out.  Two call paths
    with one text (functions of one name in two modules) are one line."""
    check_call_paths(exp, "--folded")
    metric, scale = weight_metric(exp)
    totals = exp.exclusive(metric.name).sum(axis=1) * scale
    names = [folded_name(n, inlined) for n, inlined in region_names(exp)]
    stacks: list[str] = []
    summed: dict[str, float] = {}
    for c, node in enumerate(exp.cnodes):
        root = node.parent is None and added_root(exp, c)
        own = names[node.region]
        if node.parent is None:
            stack = "" if root else own
        else:
            above = stacks[node.parent]
            stack = f"{above};{own}" if above else own
        stacks.append(stack)
        if totals[c] and stack:  # the added root's own value (none in psuite's profiles) has no frame to show
            summed[stack] = summed.get(stack, 0.0) + float(totals[c])
    weights = as_int(np.fromiter(summed.values(), dtype=np.float64, count=len(summed)))
    return {s: int(w) for s, w in zip(summed, weights, strict=True) if w > 0}


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(exp: Experiment, path: str, module: str | None = None, force: bool = False) -> str:
    """Write the folded stacks of the experiment's call tree (module:
    unused, every module is in the stacks); says what was written."""
    from psuite.cli_common import atomic_output

    lines = folded_lines(exp)
    with atomic_output(path, force) as f:
        for stack, weight in lines.items():
            f.write(f"{stack} {weight}\n")
    return f"folded stacks ({len(lines)} call paths) {path}"
