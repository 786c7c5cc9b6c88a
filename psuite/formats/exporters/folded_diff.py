"""Differential folded stacks: the input of a differential flame graph
(FlameGraph's difffolded.pl output, read by `flamegraph.pl` and by
`flamegraph.pl --negate`; inferno-diff-folded's output, read by
inferno-flamegraph):

    main;b;c;work 180 240

One line per call path with a value of its own in either experiment: its
regions from the outermost to the innermost joined by ';', then the
path's exclusive value BEFORE (the subtrahend) and AFTER (the minuend),
summed over every location, as integers.  The two experiments' call
trees are unified as diff's (analysis/flame_diff.py), but their systems need
not match: only sums over locations are written.

The values are the metric's: samples, counts, occurrences, rounded to
integers; a metric in seconds is written in microseconds, since a flame
graph's weights are integers and most paths take less than a second.
Weights are counts, so an experiment with negative values (a difference
itself) is refused.  Names: ';' in a region name becomes ',', control characters become
spaces, as in folded.py."""

from __future__ import annotations

import re

import numpy as np

from psuite.model.paired import Paired

EXTENSION = ".folded"
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def render(paired: Paired) -> str:
    """The folded lines "stack BEFORE AFTER" of every call path with a
    weight in either experiment."""
    lines = []
    for i in np.flatnonzero((paired.before != 0) | (paired.after != 0)).tolist():
        stack = ";".join(_UNSAFE.sub(" ", name.replace(";", ",")).strip() or "[unknown]" for name in paired.paths[i])
        lines.append(f"{stack} {paired.before[i]} {paired.after[i]}\n")
    return "".join(lines)


def write(paired: Paired, path: str, force: bool = False) -> str:
    """Write render(paired) to path (a new file unless force); says what was written."""
    from psuite.cli_common import atomic_output

    text = render(paired)
    with atomic_output(path, force) as f:
        f.write(text)
    return f"differential folded stacks ({text.count(chr(10))} call paths) {path}"
