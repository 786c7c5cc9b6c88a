"""CUBE's statistics file (CUBE 4.3 user guide, appendix 3.1): per
performance pattern, its name, the id of its metric in the CUBE file and
its count of instances, optionally mean, median, minimum, maximum and sum
(all or none), then the variance, then both quartiles; under it, lines
"- cnode: ID enter: T exit: T duration: T" naming its most severe
instances; a blank line before the next pattern.  The first line is a
heading, ignored.  CUBE reads the file named as the cube with .stat in
its directory (psuite's CUBE writer writes one beside every cube)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from psuite.errors import InputError

FIGURES = ("mean", "median", "minimum", "maximum", "sum", "variance", "q1", "q3")


@dataclass
class Instance:
    """One of a pattern's most severe instances."""

    cnode: int  # the call node's id in the CUBE file
    enter: float
    exit: float
    duration: float


@dataclass
class Pattern:
    name: str
    metric_id: int  # the metric's id in the CUBE file
    count: int
    figures: dict[str, float] = field(default_factory=dict)  # FIGURES given, by name
    instances: list[Instance] = field(default_factory=list)


def beside(cube_path: str) -> str | None:
    """The statistics file CUBE reads for a cube: its name with .stat, in
    its directory; None when there is none."""
    base = cube_path[: -len(".cubex")] if cube_path.endswith(".cubex") else os.path.splitext(cube_path)[0]
    path = base + ".stat"
    return path if os.path.isfile(path) else None


def read(path: str) -> list[Pattern]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read the statistics file ({e.strerror})") from e
    return parse(text, path)


def parse(text: str, source: str = "the statistics file") -> list[Pattern]:
    """The patterns of a statistics file's text, in order."""
    patterns: list[Pattern] = []
    lines = text.splitlines()[1:]  # the heading
    for number, line in enumerate(lines, start=2):
        words = line.split()
        if not words:
            continue
        if words[0] == "-":
            if not patterns:
                raise InputError(f"{source}, line {number}: an instance before any pattern")
            patterns[-1].instances.append(_instance(words, source, number))
            continue
        patterns.append(_pattern(words, source, number))
    return patterns


def _pattern(words: list[str], source: str, number: int) -> Pattern:
    # the name, the metric id and the count; then 0 or 5 figures, the variance, 0 or 2 quartiles
    if len(words) < 3 or len(words) - 3 not in (0, 5, 6, 8):
        raise InputError(f"{source}, line {number}: a pattern is its name, metric id, count and then none, 5, 6 "
                         f"or 8 figures (mean median minimum maximum sum [variance [q25 q75]]); "
                         f"{len(words)} words were given")
    try:
        metric_id, count = int(words[1]), int(words[2])
        values = [float(w) for w in words[3:]]
    except ValueError as e:
        raise InputError(f"{source}, line {number}: {e}") from e
    figures = {k: v for k, v in zip(FIGURES, values, strict=False) if math.isfinite(v)}
    return Pattern(words[0], metric_id, count, figures)


def _instance(words: list[str], source: str, number: int) -> Instance:
    keys = {"cnode:": None, "enter:": None, "exit:": None, "duration:": None}
    for key, value in zip(words[1::2], words[2::2], strict=False):
        if key in keys:
            keys[key] = value
    try:
        return Instance(int(keys["cnode:"]), *(float(keys[k]) for k in ("enter:", "exit:", "duration:")))
    except (TypeError, ValueError) as e:
        raise InputError(f"{source}, line {number}: an instance is "
                         "'- cnode: ID enter: T exit: T duration: T'") from e
