"""Differential folded stacks: the input of a differential flame graph
(FlameGraph's difffolded.pl output, read by `flamegraph.pl` and by
`flamegraph.pl --negate`; inferno-diff-folded's output, read by
inferno-flamegraph):

    main;b;c;work 180 240

One line per call path with a value of its own in either experiment: its
regions from the outermost to the innermost joined by ';', then the
path's exclusive value BEFORE (the subtrahend) and AFTER (the minuend),
summed over every location, as integers.  The two experiments' call
trees are unified as diff's (algebra.unify), but their systems need not
match: only sums over locations are written.

The values are the metric's: samples, counts, occurrences, rounded to
integers; a metric in seconds is written in microseconds, since a flame
graph's weights are integers and most paths take less than a second.
Weights are counts, so an experiment with negative values (a difference
itself) is refused.  Names: ';' in a region name becomes ',', control characters become
spaces, as in folded.py."""

from __future__ import annotations

import re

import numpy as np

from psuite.experiment import EXCLUSIVE, Experiment, Metric
from psuite.psprocess import algebra

EXTENSION = ".folded"
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")
_SECONDS = ("sec", "s", "second", "seconds")


def _default_metric(metrics: list[Metric]) -> Metric:
    measured = [m for m in metrics if not m.derived]
    if not measured:
        raise algebra.AlgebraError("no measured metric to draw: the experiments hold only derived metrics")
    for m in measured:
        if m.name == "samples":  # a profile's own weight, what flame graphs of profiles show
            return m
    return measured[0]


def diff_folded(minuend: Experiment, subtrahend: Experiment, metric: str | None = None) -> str:
    """The folded lines "stack BEFORE AFTER" (before: the subtrahend, after:
    the minuend) for the metric (default: "samples" when there is one, else
    the first measured metric)."""
    plan = algebra._plan([subtrahend, minuend], collapse=True)
    if metric is None:
        m = _default_metric(plan.metrics)
    else:
        found = [x for x in plan.metrics if x.name == metric]
        if not found:
            names = ", ".join(x.name for x in plan.metrics if not x.derived)
            raise algebra.AlgebraError(f"no metric {metric!r} in the experiments: give one of {names}")
        m = found[0]
        if m.derived:
            raise algebra.AlgebraError(f"metric {metric!r} is derived: give a measured metric for the weights")
    scale = 1e6 if m.unit.lower() in _SECONDS else 1.0
    columns = []
    for i in (0, 1):
        a, _ = plan.aligned(i, m.name, EXCLUSIVE)
        v = np.zeros(len(plan.cnodes)) if a is None else a[:, 0].astype(np.float64)
        w = np.rint(v * scale).astype(np.int64)
        if (w < 0).any():  # flame-graph tools read counts; a difference has no place in either column
            raise algebra.AlgebraError(f"{plan.names[i]} has negative {m.name} values (is it a difference?): "
                                       "give the two runs themselves for a differential flame graph")
        columns.append(w)
    before, after = columns
    names = [_UNSAFE.sub(" ", r.name.replace(";", ",")).strip() or "[unknown]" for r in plan.regions]
    stacks: list[str] = []
    lines = []
    for c in plan.cnodes:
        own = names[c.region]
        stacks.append(own if c.parent is None else f"{stacks[c.parent]};{own}")
    for i in np.flatnonzero((before != 0) | (after != 0)).tolist():
        lines.append(f"{stacks[i]} {before[i]} {after[i]}\n")
    return "".join(lines)


def write(minuend: Experiment, subtrahend: Experiment, path: str, metric: str | None = None,
          force: bool = False) -> str:
    """Write diff_folded(...) to path (a new file unless force); says what was written."""
    from psuite.cli_common import atomic_output

    text = diff_folded(minuend, subtrahend, metric)
    with atomic_output(path, force) as f:
        f.write(text)
    return f"differential folded stacks ({text.count(chr(10))} call paths) {path}"
