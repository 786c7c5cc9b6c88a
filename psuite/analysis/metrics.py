"""Derived metrics in PerfSuite's psmetrics format (psmetrics.dtd).

A definition is MathML-like: <apply> holding plus/minus/times/divide/abs
over <ci> (an event name or a keyword: cpusecs, wallsecs, lNcacheline, and
psuite's cpumhz) and <cn> (a constant).  Event names are compared in their
canonical spelling (psuite.hwpc.names.canonical), so a metric written with
PAPI presets also works on a report counted through perf_event under perf's
names (cycles, instructions, branch-misses, ...) and the other way round.

Alternative definitions (psuite extension)
-----------------------------------------
psmetrics.dtd gives a metric exactly one <definition>.  psuite also accepts
several, tried in document order: the metric is computed with the first
definition all of whose <ci> inputs are available in the report (every
event was measured, every keyword is known: cpumhz needs the clock,
lNcacheline the level-N line size, cpusecs/wallsecs the times)::

    <metric namespace="psuite" type="ratio">
      <name>Mispredicted branches per correctly predicted branch</name>
      <description>Mispredicted branches per correctly predicted branch</description>
      <definition><apply><divide><ci>PAPI_BR_MSP</ci><ci>PAPI_BR_PRC</ci></divide></apply></definition>
      <definition><apply><divide><ci>PAPI_BR_MSP</ci>
        <minus><ci>PAPI_BR_INS</ci><ci>PAPI_BR_MSP</ci></minus></divide></apply></definition>
    </metric>

In DTD terms the extension is only ``<!ELEMENT metric (name, description+,
definition+)>``: nothing else changes, so a file with one <definition> per
metric (every PerfSuite file) is valid against psmetrics.dtd and loads as it
always did.  Once a definition is chosen it is final: when its value is not
a finite number (a zero divisor, say) the metric is left out; the next
definition is not tried, so one metric never silently mixes meanings.

Which definition was used is recorded in the Metric's description, for a
metric that has more than one: ``... [definition 2 of 3: PAPI_BR_MSP /
(PAPI_BR_CN - PAPI_BR_MSP)]``.  A metric with a single definition keeps its
description unchanged.

Evaluation never raises.  Event counts may be Python ints of any size (a
count of 10**400 cannot be converted to a float): a definition is computed
in floating point, and when that overflows, divides by a rounded zero or
meets a non-finite intermediate, again exactly with fractions, so a finite
result is found whenever one exists (10**400 / (2 * 10**400) is 0.5).  An
input that is not a finite number (inf, nan, or not a number at all), a zero
divisor, or a result that does not fit in a float makes the value None: the
metric is left out, never shown as 0, inf or NaN.
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from itertools import compress
from operator import attrgetter

from psuite.errors import ConfigError
from psuite.hwpc.names import canonical, canonical_names, is_known
from psuite.model.report import CountReport, Metric

BINARY = {"plus", "minus", "times", "divide"}
KEYWORDS = {"cpusecs", "wallsecs", "cpumhz"}
_CACHELINE = re.compile(r"l(\d)cacheline$")

Number = int | float | Fraction


@dataclass
class MetricDefinition:
    name: str
    description: str
    unit: str
    alternatives: tuple  # expressions, tried in order; each ("ci", name) | ("cn", value) | (op, child[, child])
    source: str

    @property
    def expr(self) -> tuple:
        """The first (preferred) definition."""
        return self.alternatives[0]

    def inputs(self, which: int = 0) -> set[str]:
        """The <ci> names of one definition (the first by default)."""
        return set(self._needs[which])

    def formula(self, which: int = 0) -> str:
        """One definition written out, e.g. 'PAPI_BR_MSP / (PAPI_BR_INS - PAPI_BR_MSP)'."""
        return self._formulas[which]

    @functools.cached_property
    def _formulas(self) -> tuple[str, ...]:
        return tuple(_infix(e) for e in self.alternatives)

    @functools.cached_property
    def _needs(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(sorted(_inputs(e))) for e in self.alternatives)

    @functools.cached_property
    def _canonical_needs(self) -> frozenset[str]:
        """The canonical names of every input of every alternative: what a
        report's events are filtered by (once per definition, not per report)."""
        return frozenset(canonical(n) for needs in self._needs for n in needs)


def _inputs(expr: tuple) -> set[str]:
    out: set[str] = set()

    def walk(e: tuple) -> None:
        if e[0] == "ci":
            out.add(e[1])
        elif e[0] != "cn":
            for c in e[1:]:
                walk(c)

    walk(expr)
    return out


_OPS = {"plus": ("+", 1), "minus": ("-", 1), "times": ("*", 2), "divide": ("/", 2)}


def _infix(e: tuple) -> str:
    """Infix text of an expression, with the parentheses it needs."""
    kind = e[0]
    if kind == "ci":
        return e[1]
    if kind == "cn":
        v = e[1]
        return str(int(v)) if v.is_integer() and abs(v) < 1e16 else repr(v)
    if kind == "abs":
        return f"|{_infix(e[1])}|"
    sym, prec = _OPS[kind]

    def side(child: tuple, right: bool) -> str:
        text = _infix(child)
        cprec = _OPS[child[0]][1] if child[0] in _OPS else 3
        # a - (b + c), a / (b * c): the right operand of - and / needs them at equal precedence
        if cprec < prec or (right and cprec == prec and kind in ("minus", "divide")):
            return f"({text})"
        return text

    return f"{side(e[1], False)} {sym} {side(e[2], True)}"


def standard_metrics_path() -> str:
    from psuite.hwpc.config import CONFIG_DIR

    return os.path.join(CONFIG_DIR, "metrics.xml")


_standard: list[MetricDefinition] | None = None


def standard_definitions() -> list[MetricDefinition]:
    """psuite's standard derived-metric definitions (configs/metrics.xml),
    read once."""
    global _standard
    if _standard is None:
        _standard = load(standard_metrics_path())
    return _standard


def derive_standard(report: CountReport) -> None:
    """Set a counting report's metrics to psuite's standard derived ones,
    as psprocess shows them without -m or --no-standard-metrics."""
    report.metrics = derive(report, standard_definitions())


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
            value = float((el.text or "").strip())
        except ValueError:
            raise ConfigError(f"{where}: <cn> must hold a number, not {el.text!r}") from None
        if not math.isfinite(value):
            raise ConfigError(f"{where}: <cn> must hold a finite number, not {el.text!r}")
        return ("cn", value)
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
        definitions = m.findall("definition")
        if not definitions:
            raise ConfigError(f"{where}: no <definition><apply>")
        alternatives = []
        for k, d in enumerate(definitions, 1):
            here = where if len(definitions) == 1 else f"{where}, definition {k}"
            apply = d.find("apply")
            if apply is None:
                raise ConfigError(f"{here}: no <definition><apply>")
            kids = [c for c in apply if isinstance(c.tag, str)]
            if len(kids) != 1:
                raise ConfigError(f"{here}: <apply> must hold exactly one expression")
            alternatives.append(_parse_expr(kids[0], here))
        desc = (m.findtext("description") or "").strip()
        out.append(MetricDefinition(name, desc, m.get("type", ""), tuple(alternatives), path))
    return out


def _number(x) -> Number | None:
    """x as an int, a Fraction or a finite float; None for anything else
    (nan, inf, None, not a number).  Never raises."""
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if isinstance(x, Fraction):
        return x  # exact and finite; compute() copes with any size
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return None
    return v if math.isfinite(v) else None


def _finite_float(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        return None
    return v if math.isfinite(v) else None


class _Inputs:
    """The values a report gives to <ci>: its counts under their canonical
    names, and the keywords.  Built once per report."""

    def __init__(self, report: CountReport, wanted: frozenset[str] | None = None,
                 names: list[str] | None = None) -> None:
        """wanted: the canonical names the definitions ask for; the other
        events (a report can hold a million) are not kept.  names: the
        events' canonical names, when the caller has them already."""
        self.report = report
        self.counts: dict[str, Number | None] = {}
        events = report.events
        if names is None:
            names = canonical_names(list(map(_NAME, events)))  # at C speed where it can be
        keep = range(len(names)) if wanted is None else compress(range(len(names)), map(wanted.__contains__, names))
        for i in keep:
            self.counts[names[i]] = _number(events[i].count)
        self._has: dict[str, bool] = {}
        self._value: dict[str, Number | None] = {}

    def has(self, name: str) -> bool:
        """Is name something this report measured or knows (finite or not)?"""
        got = self._has.get(name)
        if got is None:
            if is_keyword(name):
                got = keyword_value(name, self.report) is not None
            else:
                got = _canonical(name) in self.counts
            self._has[name] = got
        return got

    def value(self, name: str) -> Number | None:
        if name not in self._value:
            if is_keyword(name):
                self._value[name] = _number(keyword_value(name, self.report))
            else:
                self._value[name] = self.counts.get(_canonical(name))
        return self._value[name]


_canonical = functools.lru_cache(maxsize=4096)(canonical)
_NAME = attrgetter("name")


def is_keyword(name: str) -> bool:
    return name in KEYWORDS or _CACHELINE.match(name) is not None


def keyword_value(name: str, report: CountReport):
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
        return sizes[0] if sizes else None
    return None


class _NotFinite(Exception):
    """A float intermediate overflowed or became NaN: redo exactly."""


def _calc(e: tuple, values: dict[str, Number], exact: bool) -> Number | None:
    """Value of e over values (all floats, or all Fractions when exact);
    None for a zero divisor.  Floats raise _NotFinite on a non-finite step."""
    kind = e[0]
    if kind == "ci":
        return values[e[1]]
    if kind == "cn":
        return Fraction(e[1]) if exact else e[1]
    args = [_calc(c, values, exact) for c in e[1:]]
    if None in args:
        return None
    if kind == "plus":
        r = args[0] + args[1]
    elif kind == "minus":
        r = args[0] - args[1]
    elif kind == "times":
        r = args[0] * args[1]
    elif kind == "divide":
        if args[1] == 0:
            return None
        r = args[0] / args[1]
    else:
        r = abs(args[0])
    if not exact and not math.isfinite(r):
        raise _NotFinite
    return r


def compute(expr: tuple, values: dict[str, Number]) -> float | None:
    """A finite float, or None: never raises.  values maps every <ci> name
    of expr to an int, a Fraction or a finite float (see _number)."""
    try:
        fast = _calc(expr, {k: float(v) for k, v in values.items()}, exact=False)
        if fast is not None:
            return float(fast)
        # a zero divisor in floating point may be a rounded non-zero one
    except (_NotFinite, OverflowError):
        pass
    try:
        exact = _calc(expr, {k: Fraction(v) for k, v in values.items()}, exact=True)
        return _finite_float(exact) if exact is not None else None
    except (ArithmeticError, TypeError, ValueError):
        return None


def _choose(defn: MetricDefinition, inputs: _Inputs) -> int | None:
    """Index of the first definition whose inputs the report has."""
    for i, needs in enumerate(defn._needs):
        if all(inputs.has(n) for n in needs):
            return i
    return None


def _evaluate(defn: MetricDefinition, inputs: _Inputs) -> tuple[int, float] | None:
    which = _choose(defn, inputs)
    if which is None:
        return None
    expr = defn.alternatives[which]
    values = {n: inputs.value(n) for n in defn._needs[which]}
    if any(v is None for v in values.values()):  # measured, but not a finite number
        return None
    value = compute(expr, values)
    return None if value is None else (which, value)


def choice(defn: MetricDefinition, report: CountReport, names: list[str] | None = None,
           inputs: _Inputs | None = None) -> int | None:
    """Index of the definition that would be used for this report (None:
    no definition's inputs were all measured); names: the canonical names
    of its events, when the caller has them; inputs: the report's inputs
    (inputs_of) for definitions including this one, made once for all."""
    return _choose(defn, inputs if inputs is not None else _Inputs(report, defn._canonical_needs, names))


def inputs_of(report: CountReport, definitions: list[MetricDefinition], names: list[str] | None = None) -> _Inputs:
    """The values the definitions' inputs take in the report, for choice():
    the report's events read once for all of them (a report can hold a
    million)."""
    return _Inputs(report, frozenset().union(*(d._canonical_needs for d in definitions)), names)


def evaluate(defn: MetricDefinition, report: CountReport) -> float | None:
    """The metric's value for one report; None when it is not to be shown."""
    got = _evaluate(defn, _Inputs(report, defn._canonical_needs))
    return None if got is None else got[1]


def derive(report: CountReport, definitions: list[MetricDefinition]) -> list[Metric]:
    """The metrics whose inputs this report has, in definition order."""
    out = []
    wanted = frozenset().union(*(d._canonical_needs for d in definitions))
    inputs = _Inputs(report, wanted)
    for d in definitions:
        try:
            got = _evaluate(d, inputs)
        except (ArithmeticError, TypeError, ValueError):  # defensive: a metric never stops the report
            got = None
        if got is None:
            continue
        which, value = got
        desc = d.description
        if len(d.alternatives) > 1:
            used = f"definition {which + 1} of {len(d.alternatives)}: {d.formula(which)}"
            desc = f"{desc} [{used}]" if desc else f"[{used}]"
        out.append(Metric(d.name, value, desc, d.unit))
    return out
