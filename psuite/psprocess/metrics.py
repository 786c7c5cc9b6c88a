"""Derived metrics in PerfSuite's psmetrics format (psmetrics.dtd).

A definition is MathML-like: <apply> holding plus/minus/times/divide/abs
over <ci> (an event name or a keyword: cpusecs, wallsecs, lNcacheline, and
psuite's cpumhz) and <cn> (a constant).  Evaluation gives None when an input
was not measured or a divisor is zero: such a metric is left out, never
shown as 0 or NaN.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from psuite.errors import ConfigError
from psuite.hwpc.names import canonical, is_known
from psuite.report import CountReport, Metric

BINARY = {"plus", "minus", "times", "divide"}
KEYWORDS = {"cpusecs", "wallsecs", "cpumhz"}
_CACHELINE = re.compile(r"l(\d)cacheline$")


@dataclass
class MetricDefinition:
    name: str
    description: str
    unit: str
    expr: tuple  # ("ci", name) | ("cn", value) | (op, child[, child])
    source: str

    def inputs(self) -> set[str]:
        out: set[str] = set()

        def walk(e: tuple) -> None:
            if e[0] == "ci":
                out.add(e[1])
            elif e[0] != "cn":
                for c in e[1:]:
                    walk(c)

        walk(self.expr)
        return out


def standard_metrics_path() -> str:
    from psuite.hwpc.config import CONFIG_DIR

    return os.path.join(CONFIG_DIR, "metrics.xml")


def _parse_expr(el, where: str) -> tuple:
    tag = el.tag
    children = [c for c in el if isinstance(c.tag, str)]
    if tag == "ci":
        name = (el.text or "").strip()
        if not name:
            raise ConfigError(f"{where}: empty <ci>")
        if name not in KEYWORDS and not _CACHELINE.match(name) and not is_known(name):
            raise ConfigError(f"{where}: unknown event {name!r} in <ci> (see psinv -e; keywords are "
                              "cpusecs, wallsecs, cpumhz, lNcacheline)")
        return ("ci", name)
    if tag == "cn":
        try:
            return ("cn", float((el.text or "").strip()))
        except ValueError:
            raise ConfigError(f"{where}: <cn> must hold a number, not {el.text!r}") from None
    if tag in BINARY:
        if len(children) != 2:
            raise ConfigError(f"{where}: <{tag}> needs exactly two operands, found {len(children)}")
        return (tag, _parse_expr(children[0], where), _parse_expr(children[1], where))
    if tag == "abs":
        if len(children) != 1:
            raise ConfigError(f"{where}: <abs> needs exactly one operand, found {len(children)}")
        return ("abs", _parse_expr(children[0], where))
    raise ConfigError(f"{where}: <{tag}> is not an operator (plus, minus, times, divide, abs) or data (ci, cn)")


def load(path: str) -> list[MetricDefinition]:
    """Metric definitions from a psmetrics file; ConfigError on any fault."""
    from psuite.hwpc.config import read_xml_file

    root = read_xml_file(path, "metric file")
    if root.tag != "psmetrics":
        raise ConfigError(f"{path}: root element is <{root.tag}>, expected <psmetrics class=\"PAPI\">")
    out = []
    for i, m in enumerate(root.iterfind("metric"), 1):
        name = (m.findtext("name") or "").strip()
        where = f"{path}: metric {name or f'#{i}'}"
        if not name:
            raise ConfigError(f"{where}: no <name>")
        apply = m.find("definition/apply")
        if apply is None:
            raise ConfigError(f"{where}: no <definition><apply>")
        kids = [c for c in apply if isinstance(c.tag, str)]
        if len(kids) != 1:
            raise ConfigError(f"{where}: <apply> must hold exactly one expression")
        desc = (m.findtext("description") or "").strip()
        out.append(MetricDefinition(name, desc, m.get("type", ""), _parse_expr(kids[0], where), path))
    return out


def _keyword(name: str, report: CountReport) -> float | None:
    if name == "cpusecs":
        return report.cputime
    if name == "wallsecs":
        return report.wallclock
    if name == "cpumhz":
        return report.machine.mhz if report.machine and report.machine.mhz else None
    m = _CACHELINE.match(name)
    if m and report.machine:
        level = int(m.group(1))
        sizes = [c.line_size for c in report.machine.caches
                 if c.level == level and c.type in ("data", "unified") and c.line_size]
        return float(sizes[0]) if sizes else None
    return None


def evaluate(defn: MetricDefinition, report: CountReport) -> float | None:
    counts = {canonical(e.name): float(e.count) for e in report.events}

    def ev(e: tuple) -> float | None:
        kind = e[0]
        if kind == "cn":
            return e[1]
        if kind == "ci":
            name = e[1]
            if name in KEYWORDS or _CACHELINE.match(name):
                return _keyword(name, report)
            return counts.get(canonical(name))
        args = [ev(c) for c in e[1:]]
        if any(a is None for a in args):
            return None
        if kind == "plus":
            return args[0] + args[1]
        if kind == "minus":
            return args[0] - args[1]
        if kind == "times":
            return args[0] * args[1]
        if kind == "divide":
            return args[0] / args[1] if args[1] else None
        return abs(args[0])

    value = ev(defn.expr)
    return value if value is not None and math.isfinite(value) else None


def derive(report: CountReport, definitions: list[MetricDefinition]) -> list[Metric]:
    """The metrics whose inputs this report has, in definition order."""
    out = []
    for d in definitions:
        v = evaluate(d, report)
        if v is not None:
            out.append(Metric(d.name, v, d.description, d.unit))
    return out
