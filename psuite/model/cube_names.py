"""Metric unique names CubePL can name.

CubePL's scanner (CubeLib, syntax/cubepl/CubePL1Scanner.ll) reads the name
after metric:: as [a-zA-Z0-9_:=]+: a unique name with any other character
(perf's task-clock, "CPU utilization (%)") cannot be named in a derived
metric's expression, so CubeLib could not evaluate one over it.  psuite's
experiments (psuite.analysis.experiments) name their metrics with
cubepl_name, the display name keeping the original spelling; the CUBE
writer and psuite's reading of its older cubes rename what is not such a
name (with_cubepl_names).  A module of its own, light to import, for the
writer."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection

from psuite.model.experiment import Experiment

NO_FORMULA = "psuite::no_formula"  # experiments.NO_FORMULA: metric names, one a line
_NOT_CUBEPL = re.compile(r"[^A-Za-z0-9_:=]+")
_CUBEPL_PREFIXES = ("fixed::", "context::", "call::")  # read by the scanner as metric::fixed:: ... keywords
_REFERENCE = r"(metric::(?:context::|fixed::|call::)?){}(\s*\()"


def cubepl_name(name: str, taken: Collection[str] = ()) -> str:
    """The unique name psuite gives a metric called `name` (an event's or a
    psmetrics definition's name, which stays its display name): what
    CubePL's scanner reads after metric::, other characters as "_" ("%"
    as "percent"), and not one of `taken` (a suffix _2, _3 ... otherwise)."""
    base = _NOT_CUBEPL.sub("_", name.replace("%", "percent")).strip("_") or "metric"
    if base.startswith(_CUBEPL_PREFIXES):
        base = "_" + base
    out, n = base, 1
    while out in taken:
        n += 1
        out = f"{base}_{n}"
    return out


def with_cubepl_names(exp: Experiment) -> Experiment:
    """The experiment with every metric a unique name CubePL can name
    (cubepl_name), expressions and NO_FORMULA following; the experiment
    itself when all are.  Older psuite named metrics as perf does
    (task-clock), and an experiment built in Python may too: CubeLib could
    not evaluate a derived metric naming one.  Values are not copied."""
    bad = [m.name for m in exp.metrics
           if not m.name or _NOT_CUBEPL.search(m.name) or m.name.startswith(_CUBEPL_PREFIXES)]
    if not bad:
        return exp
    taken = {m.name for m in exp.metrics if m.name not in bad}
    new: dict[str, str] = {}
    for name in bad:
        new[name] = cubepl_name(name, taken)
        taken.add(new[name])
    metrics = []
    for m in exp.metrics:
        expression = m.expression
        for old in sorted(new, key=len, reverse=True):  # longest first: task-clock before task
            expression = re.sub(_REFERENCE.format(re.escape(old)), lambda x, n=new[old]: x.group(1) + n + x.group(2),
                                expression)
        metrics.append(dataclasses.replace(m, name=new.get(m.name, m.name), display=m.display or m.name,
                                           expression=expression))
    attributes = dict(exp.attributes)
    if attributes.get(NO_FORMULA):
        attributes[NO_FORMULA] = "\n".join(new.get(n, n) for n in attributes[NO_FORMULA].split("\n"))
    return Experiment(metrics=metrics, regions=exp.regions, cnodes=exp.cnodes, locations=exp.locations,
                      values={new.get(k, k): v for k, v in exp.values.items()}, attributes=attributes,
                      topologies=exp.topologies)
