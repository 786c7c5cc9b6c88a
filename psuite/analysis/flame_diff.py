"""Two experiments' call paths side by side: the per-call-path exclusive
values of one metric in each, summed over locations, over their call trees
unified as diff unifies them (algebra): the model.paired.Paired a
differential flame graph draws (formats/exporters/folded_diff.py writes it)."""

from __future__ import annotations

import numpy as np

from psuite.analysis import algebra
from psuite.model.experiment import EXCLUSIVE, Experiment, Metric
from psuite.model.paired import Paired

_SECONDS = ("sec", "s", "second", "seconds")


def _default_metric(metrics: list[Metric]) -> Metric:
    measured = [m for m in metrics if not m.derived]
    if not measured:
        raise algebra.AlgebraError("no measured metric to draw: the experiments hold only derived metrics")
    for m in measured:
        if m.name == "samples":  # a profile's own weight, what flame graphs of profiles show
            return m
    return measured[0]


def paired_exclusive(minuend: Experiment, subtrahend: Experiment, metric: str | None = None) -> Paired:
    """The metric's (default: "samples" when there is one, else the first
    measured metric) exclusive weights of every unified call path, before
    (subtrahend) and after (minuend).  AlgebraError for an unknown or derived
    metric, or negative values (a difference is no flame graph's weight)."""
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
    paths: list[tuple[str, ...]] = []
    for c in plan.cnodes:
        own = plan.regions[c.region].name
        paths.append((own,) if c.parent is None else paths[c.parent] + (own,))
    return Paired(m, paths, columns[0], columns[1])
