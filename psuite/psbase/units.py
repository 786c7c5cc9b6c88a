"""Units as perfbase composes them: base units with a scaling (Mega, milli,
Kibi, ...), multiplied in a dividend and divided by a divisor, e.g. MB/s.

A unit is kept as its printed form ("MB/s", "s", "B*s/op") on a Variable;
this module parses that form, prints it back, and maps it to and from the
<unit> element of an experiment definition."""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from psuite.errors import InputError

# scaling name -> (symbol, factor)
SCALINGS = {
    "Exa": ("E", 1e18), "Peta": ("P", 1e15), "Tera": ("T", 1e12), "Giga": ("G", 1e9), "Mega": ("M", 1e6),
    "Kilo": ("k", 1e3), "milli": ("m", 1e-3), "micro": ("u", 1e-6), "nano": ("n", 1e-9), "pico": ("p", 1e-12),
    "Kibi": ("Ki", 2.0**10), "Mebi": ("Mi", 2.0**20), "Gibi": ("Gi", 2.0**30), "Tebi": ("Ti", 2.0**40),
}
_BY_SYMBOL = {sym: name for name, (sym, _) in SCALINGS.items()} | {"K": "Kilo"}
# base unit name -> symbol; any other word is a base unit of its own (process, iteration, ...)
BASE_SYMBOLS = {"byte": "B", "bit": "bit", "s": "s", "Hz": "Hz", "flop": "flop", "op": "op", "cycle": "cycle"}
_BASE_BY_SYMBOL = {sym: name for name, sym in BASE_SYMBOLS.items()}
# perfbase's base units that are symbols, not words; "none" is perfbase's "no unit"
SYMBOL_UNITS = ("%", "$")
NO_UNIT = "none"


@dataclass(frozen=True)
class Factor:
    base: str  # "byte", "s", "process"
    scaling: str = ""  # a key of SCALINGS or ""

    def __str__(self) -> str:
        if self.scaling and self.base not in BASE_SYMBOLS:
            # "kprocess" would read back as a base unit of its own: spell the scaling out
            return f"{self.scaling} {self.base}"
        prefix = SCALINGS[self.scaling][0] if self.scaling else ""
        return prefix + BASE_SYMBOLS.get(self.base, self.base)

    @property
    def factor(self) -> float:
        return SCALINGS[self.scaling][1] if self.scaling else 1.0


@dataclass(frozen=True)
class Unit:
    dividend: tuple[Factor, ...] = field(default_factory=tuple)
    divisor: tuple[Factor, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        top = "*".join(str(f) for f in self.dividend) or ("1" if self.divisor else "")
        return top + "".join("/" + str(f) for f in self.divisor)

    @property
    def factor(self) -> float:
        """The scaling relative to the unscaled base units (MB/ms: 1e9)."""
        f = 1.0
        for d in self.dividend:
            f *= d.factor
        for d in self.divisor:
            f /= d.factor
        return f


# base units that are a multiple of another one (to the power given): what
# conversion needs beyond the scalings; any other base unit is a quantity of its own
EQUIVALENT: dict[str, tuple[str, float, int]] = {
    "bit": ("byte", 0.125, 1),
    "min": ("s", 60.0, 1),
    "h": ("s", 3600.0, 1),
    "Hz": ("s", 1.0, -1),
}


def _measure(unit: Unit) -> tuple[float, dict[str, int]]:
    """The unit's size in canonical base units and its dimension (canonical
    base unit -> power): MB/s is (1e6, {byte: 1, s: -1}), kHz (1e3, {s: -1})."""
    scale = 1.0
    dim: dict[str, int] = {}
    for factors, sign in ((unit.dividend, 1), (unit.divisor, -1)):
        for f in factors:
            base, size, power = EQUIVALENT.get(f.base, (f.base, 1.0, 1))
            scale *= (f.factor * size) ** sign
            dim[base] = dim.get(base, 0) + sign * power
    return scale, {b: p for b, p in dim.items() if p}


def conversion(source: str, target: str) -> float:
    """The factor that turns values in unit `source` into values in unit
    `target` (MB/s -> GB/s: 0.001; min -> s: 60).  Units of different
    quantities (MB/s and s) cannot be converted: InputError."""
    s_scale, s_dim = _measure(parse(source))
    t_scale, t_dim = _measure(parse(target))
    if s_dim != t_dim:
        raise InputError(
            f"cannot convert {source or 'no unit'!r} to {target or 'no unit'!r}: they measure different quantities; "
            f"give a unit of the same kind as {source or 'no unit'!r}"
        )
    return s_scale / t_scale


def _factor(word: str, text: str) -> Factor:
    scaling, sep, base = word.partition(" ")
    if sep and scaling in SCALINGS:  # "Kilo process", as __str__ prints a scaled base unit of its own
        return Factor(_factor(base.strip(), text).base, scaling)
    if word in SYMBOL_UNITS:
        return Factor(word)
    if not word or not word.replace("_", "").replace("%", "").isalnum():
        raise InputError(f"unit {text!r}: {word!r} is not a unit; write base units with an optional scaling, "
                         "e.g. MB/s or Kibyte*s")
    if word in _BASE_BY_SYMBOL:
        return Factor(_BASE_BY_SYMBOL[word])
    if word in BASE_SYMBOLS:
        return Factor(word)
    for sym in sorted(_BY_SYMBOL, key=len, reverse=True):
        rest = word[len(sym):]
        if word.startswith(sym) and (rest in _BASE_BY_SYMBOL or rest in BASE_SYMBOLS):
            return Factor(_BASE_BY_SYMBOL.get(rest, rest), _BY_SYMBOL[sym])
    return Factor(word)


def parse(text: str) -> Unit:
    """'MB/s' -> Unit((Factor('byte', 'Mega'),), (Factor('s'),)); '' is no unit."""
    s = text.strip()
    if not s:
        return Unit()
    top, *bottom = s.split("/")
    dividend = () if top.strip() == "1" else tuple(_factor(w.strip(), text) for w in top.split("*"))
    divisor = tuple(_factor(w.strip(), text) for w in bottom)
    return Unit(dividend, divisor)


def normalize(text: str) -> str:
    return str(parse(text))


def from_xml(elem: etree._Element) -> Unit:
    """A <unit> element: <base_unit> and <scaling> pairs, or a <fraction> of
    <dividend> and <divisor> (each holding such pairs, or a <fraction> or
    <product> of <factor>s in turn, as perfbase nests them)."""
    top, bottom = _term(elem)
    return Unit(top, bottom)


def _term(parent: etree._Element) -> tuple[tuple[Factor, ...], tuple[Factor, ...]]:
    """The dividend and divisor factors of a <unit>, <dividend>, <divisor> or <factor>."""
    frac = parent.find("fraction")
    if frac is not None:
        for child in frac:
            if child.tag not in ("dividend", "divisor"):
                raise InputError(f"<{child.tag}> (line {child.sourceline}) is not allowed in <fraction>; "
                                 "use <dividend> and <divisor>")
        dividend, divisor = frac.find("dividend"), frac.find("divisor")
        if divisor is None:
            raise InputError("a <fraction> in a <unit> has no <divisor>; add one, e.g. "
                             "<divisor><base_unit>s</base_unit></divisor>")
        a_top, a_bottom = _term(dividend) if dividend is not None else ((), ())
        b_top, b_bottom = _term(divisor)
        return a_top + b_bottom, a_bottom + b_top  # (a/b) / (c/d) = (a*d) / (b*c)
    product = parent.find("product")
    if product is not None:
        top: tuple[Factor, ...] = ()
        bottom: tuple[Factor, ...] = ()
        for child in product:
            if child.tag != "factor":
                raise InputError(f"<{child.tag}> (line {child.sourceline}) is not allowed in <product>; use <factor>")
            f_top, f_bottom = _term(child)
            top, bottom = top + f_top, bottom + f_bottom
        return top, bottom
    return _factors(parent), ()


def _factors(parent: etree._Element) -> tuple[Factor, ...]:
    out: list[Factor] = []
    scaling = ""
    for child in parent:
        if child.tag not in ("scaling", "base_unit"):
            raise InputError(f"<{child.tag}> (line {child.sourceline}) is not allowed in <{parent.tag}>; "
                             "use <base_unit> and <scaling>, or a <fraction>")
        if child.tag == "scaling":
            name = (child.text or "").strip()
            if name not in SCALINGS:
                name = _BY_SYMBOL.get(name, name)
            if name not in SCALINGS:
                raise InputError(f"unit scaling {child.text!r} is unknown; use one of {', '.join(SCALINGS)}")
            if out and not out[-1].scaling:  # <base_unit>byte</base_unit><scaling>Mega</scaling>
                out[-1] = Factor(out[-1].base, name)
            else:
                scaling = name
        else:
            base = (child.text or "").strip()
            if not base:
                raise InputError("a <base_unit> element is empty; name the unit, e.g. <base_unit>s</base_unit>")
            if base == NO_UNIT:
                continue
            _factor(base, base)  # one word: "bytes per sec" is refused here, naming the element
            out.append(Factor(_BASE_BY_SYMBOL.get(base, base), scaling))
            scaling = ""
    if scaling and not any(child.tag == "base_unit" and (child.text or "").strip() != NO_UNIT for child in parent):
        raise InputError(f"unit scaling {scaling!r} has no base unit; give one beside it, e.g. "
                         "<base_unit>Hz</base_unit>")
    return tuple(out)


def to_xml(unit: Unit) -> etree._Element:
    elem = etree.Element("unit")

    def put(parent: etree._Element, factors: tuple[Factor, ...]) -> None:
        for f in factors:
            etree.SubElement(parent, "base_unit").text = f.base
            if f.scaling:
                etree.SubElement(parent, "scaling").text = f.scaling

    if unit.divisor:
        frac = etree.SubElement(elem, "fraction")
        put(etree.SubElement(frac, "dividend"), unit.dividend)
        put(etree.SubElement(frac, "divisor"), unit.divisor)
    else:
        put(elem, unit.dividend)
    return elem
