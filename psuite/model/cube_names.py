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


_NOT_PLAIN = re.compile(r"[^A-Za-z0-9_:=\n]")
_PLAIN = re.compile(r"(?!fixed::|context::|call::)[A-Za-z0-9:=](?:[A-Za-z0-9_:=]*[A-Za-z0-9:=])?")


def cubepl_names(names: list[str], taken: set[str], distinct: bool = False) -> list[str]:
    """cubepl_name of each name in turn, each then taken (added to
    `taken`; a name repeated is named again, with a suffix).  A report can
    hold a million events: when none of the names needs changing (one
    regular expression over them all says so), none is taken and none
    repeats, they are their own; else the names it keeps are found first,
    and a name it changes, one taken or a repetition, is then given its
    own in order.  distinct: the caller knows that no name repeats and
    wants `taken` only read when they are their own (no set of a million
    names is built to find repetitions), and gets `names` itself back when
    they are their own."""
    text = "\n".join(names)
    plain = bool(names) and "" not in names and text.count("\n") == len(names) - 1 and \
        not _NOT_PLAIN.search(text) and "\n_" not in text and "_\n" not in text and text[0] != "_" and \
        text[-1] != "_" and not text.startswith(_CUBEPL_PREFIXES) and \
        not any("\n" + p in text for p in _CUBEPL_PREFIXES)  # (else the names one by one)
    del text
    if plain and taken.isdisjoint(names):
        if distinct:  # the list itself: a million names are not copied
            return names
        size = len(taken)
        taken.update(names)
        if len(taken) == size + len(names):
            return list(names)
        taken.difference_update(names)  # a name repeats: as it was (none of them was taken)
    out = [n if p is not None and n not in taken else "" for n, p in zip(names, map(_PLAIN.fullmatch, names),
                                                                           strict=True)]
    kept: set[str] = set()
    for i, n in enumerate(out):
        if n in kept:  # a repetition is named in turn below
            out[i] = ""
        elif n:
            kept.add(n)
    taken.update(kept)
    for i, n in enumerate(out):
        if not n:
            out[i] = cubepl_name(names[i], taken)
            taken.add(out[i])
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
