"""Folded stacks ("collapsed" stacks), the input of Brendan Gregg's
flamegraph.pl, inferno-flamegraph and speedscope, and gprof2dot's
`-f collapse` (FlameGraph's README, "2. Fold stacks"):

    main;b;c;work 20

One line per call path with samples of its own: its frames from the
outermost to the innermost joined by ';', a space, and the path's
exclusive samples as an integer.  Every thread's (and, for a combination,
every rank's) tree is merged: a path's weight is its sum over them.
Weights are samples, not time, as stackcollapse-perf.pl writes them (a
mean of a combination is rounded; paths rounding to 0 are left out).

Names: an inlined frame carries the "_[i]" suffix flamegraph.pl and
inferno colour as inlined; an unresolved frame is its module in brackets;
';' in a name becomes ',' and line breaks and other control characters
become spaces, since the format has no quoting."""

from __future__ import annotations

import re

from psuite.formats.exporters.calltree_common import frame_name, source_trees
from psuite.model.calltree import Frame
from psuite.model.report import MultiReport, ProfileReport

EXTENSION = ".folded"
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def folded_name(frame: Frame) -> str:
    """The frame as one element of a folded line."""
    name = _UNSAFE.sub(" ", frame_name(frame).replace(";", ",")).strip() or "[unknown]"
    return name + "_[i]" if frame.inlined else name


def folded_lines(obj: ProfileReport | MultiReport) -> dict[str, float]:
    """Stack text -> summed exclusive samples over every thread, in the
    order the paths are first met (parents before children)."""
    out: dict[str, float] = {}
    names: dict[Frame, str] = {}  # most frames recur in many paths
    for st in source_trees(obj, "--folded"):
        for path, value in st.thread.tree.paths():
            parts = []
            for f in path:
                n = names.get(f)
                if n is None:
                    n = names[f] = folded_name(f)
                parts.append(n)
            stack = ";".join(parts)
            out[stack] = out.get(stack, 0.0) + value
    return out


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(report: ProfileReport | MultiReport, path: str, module: str | None = None, force: bool = False) -> str:
    """Write the folded stacks of every thread's call tree (module: unused,
    every module is in the stacks); says what was written."""
    from psuite.cli_common import atomic_output

    lines = folded_lines(report)
    written = 0
    with atomic_output(path, force) as f:
        for stack, value in lines.items():
            weight = int(value + 0.5)
            if weight > 0:
                f.write(f"{stack} {weight}\n")
                written += 1
    return f"folded stacks ({written} call paths) {path}"
