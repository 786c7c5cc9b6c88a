"""<machineinfo>: write the -0.3 generation, read both generations.

machineinfo.dtd has <family>/<model> in <cpuinfo>; machineinfo-0.3.dtd has
<cpuidinfo> instead.  Readers must tolerate either, and elements neither
DTD names.

Every value is read in the form the original PerfSuite wrote it: decimals
where it wrote them (<memoryinfo units="MB">2904.20</memoryinfo>,
<clockspeed units="MHz">2793.000</clockspeed>), sizes in the units their
attribute names (a Pentium 4's trace cache is <size units="KuOps">12</size>:
twelve thousand micro-operations, not kilobytes, and is kept so), and empty
elements (the DTDs allow every one) as "not known".  A unit psuite cannot
convert is refused, naming the element: guessing would give wrong sizes.
"""

from __future__ import annotations

import re

from lxml import etree

from psuite.errors import InputError
from psuite.formats import values

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported where used: most documents read have no <machineinfo>
    from psuite.libperfsuite.machine import MachineInfo


def _sub(parent: etree._Element, tag: str, text: object = None, **attrs: str) -> etree._Element:
    el = etree.SubElement(parent, tag, **attrs)
    if text is not None:
        el.text = str(text)
    return el


def clockspeed_text(info: MachineInfo) -> str:
    """<clockspeed> as written: wallclock ticks are counted in this value."""
    return f"{info.mhz:.3f}"


def number_text(value: float) -> str:
    """A number as written back: whole numbers as integers, others in the
    shortest form that reads back the same (2904.2 for the original's 2904.20)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    return str(value) if isinstance(value, int) else repr(value)


def _assoc(parent: etree._Element, ways: int) -> None:
    if ways:
        _sub(parent, "associativity", ways, type="set")
    else:
        _sub(parent, "associativity", 0, type="full")


def to_element(info: MachineInfo) -> etree._Element:
    """<machineinfo> valid against machineinfo-0.3.dtd.  TLBs appear for the
    base page size only: the DTD cannot say which page size a TLB maps."""
    root = etree.Element("machineinfo")
    _sub(root, "cpucount", info.cpu_count)
    cpu = _sub(root, "cpuinfo")
    _sub(cpu, "vendor", info.vendor)
    if info.brand:
        _sub(cpu, "brand", info.brand)
    _sub(cpu, "cpuidinfo", info.cpuidinfo)
    _sub(cpu, "revision", info.revision)
    _sub(cpu, "clockspeed", clockspeed_text(info), units="MHz")
    caches = _sub(cpu, "cacheinfo")
    _sub(caches, "levels", max((c.level for c in info.caches), default=0))
    for c in info.caches:
        el = _sub(caches, "cache", type=c.type, level=str(c.level))
        _sub(el, "size", number_text(c.size_kb), units=c.size_units)
        if c.line_size:
            _sub(el, "linesize", c.line_size, units="B")
        _assoc(el, c.associativity)
    tlbs = _sub(cpu, "tlbinfo")
    base_kb = info.page_size // 1024
    for t in info.tlbs:
        if t.page_kb == base_kb:
            el = _sub(tlbs, "tlb", type=t.type, level=str(t.level))
            _sub(el, "entries", t.entries)
            _assoc(el, t.associativity)
    _sub(root, "memoryinfo", number_text(info.memory_mb), units="MB")
    _sub(root, "syspagesize", info.page_size // 1024, units="KB")
    return root


def _text(el: etree._Element | None, default: str = "") -> str:
    return (el.text or "").strip() if el is not None else default


def _int(text: str, default: int = 0) -> int:
    """The first whole number in text (documents say "8-way", "512 KB"),
    ASCII digits only; a numeral too long to mean anything counts as absent."""
    m = re.search(r"-?[0-9]+", text or "")
    return int(m.group()) if m and len(m.group()) <= 18 else default


def _count(root: etree._Element, tag: str, source: str, default: int) -> int:
    text = _text(root.find(tag))
    return values.integer(text, f"<{tag}>", source, hi=2**40) if text else default


# Units an attribute may name, as multiples of the unit the model keeps
# (case and surrounding blanks ignored: "KB", "kB" and "KiB" are the same).
_KB = {"B": 1 / 1024, "KB": 1, "KiB": 1, "MB": 1024, "MiB": 1024, "GB": 1024**2, "GiB": 1024**2}
SIZE_UNITS = {k.lower(): v for k, v in _KB.items()}  # in KB
MEMORY_UNITS = {k.lower(): v / 1024 for k, v in _KB.items()}  # in MB
CLOCK_UNITS = {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3}  # in MHz
_UNIT_NAMES = {id(SIZE_UNITS): "B, KB, MB, GB", id(MEMORY_UNITS): "B, KB, MB, GB", id(CLOCK_UNITS): "Hz, kHz, MHz, GHz"}
_NUMBER_WITH_UNIT = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+) *([A-Za-z]+)\Z")


def _whole_if_whole(value: float) -> float:
    """2048.0 as 2048: amounts stay integers unless the document wrote a fraction."""
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def amount(el: etree._Element | None, tag: str, source: str, units: dict[str, float], default_unit: str,
           hi: float, keep: tuple[str, ...] = ()) -> tuple[float, str] | None:
    """The value of an element holding an amount, in the model's unit
    (default_unit), and the unit it is given in; None for an absent or
    empty element.  The unit is the units attribute, else a word after
    the number ("512 KB"), else default_unit.  A unit in keep (KuOps) is
    not converted: the value is returned in it.  Any other unit is refused."""
    text = _text(el)
    if not text:
        return None
    unit = (el.get("units") or "").strip()
    m = _NUMBER_WITH_UNIT.fullmatch(text)
    if m:  # "512 KB": the unit written with the number
        text, unit = m.group(1), unit or m.group(2)
    value = values.real(text, f"<{tag}>", source, hi=values.MAX_COUNT)
    unit = unit or default_unit
    factor = next((1.0 for kept in keep if unit.lower() == kept.lower()), units.get(unit.lower()))
    if factor is None:
        known = ", ".join((_UNIT_NAMES[id(units)], *keep))
        raise InputError(f"{source}: <{tag} units={unit!r}> is not a unit psprocess converts ({known}); "
                         "fix or regenerate the document")
    value *= factor
    if value > hi:
        raise InputError(f"{source}: <{tag}> is {text} {unit}, out of range (0 to {hi:g} {default_unit}); "
                         "fix or regenerate the document")
    kept = next((k for k in keep if unit.lower() == k.lower()), default_unit)
    return _whole_if_whole(value), kept


def from_element(root: etree._Element, source: str = "<machineinfo>") -> MachineInfo:
    """A MachineInfo from either generation of <machineinfo>."""
    from psuite.libperfsuite.machine import TLB, Cache, MachineInfo

    cpu = root.find("cpuinfo")
    if cpu is None:
        cpu = etree.Element("cpuinfo")
    family = model = stepping = 0
    cpuid = _text(cpu.find("cpuidinfo"))
    if cpuid:
        nums = dict(re.findall(r"(family|model|stepping)[^0-9]*?([0-9]{1,9})", cpuid, re.I))
        nums = {k.lower(): int(v) for k, v in nums.items()}
        family, model, stepping = nums.get("family", 0), nums.get("model", 0), nums.get("stepping", 0)
    if cpu.find("family") is not None:
        family = _int(_text(cpu.find("family")))
    if cpu.find("model") is not None:
        model = _int(_text(cpu.find("model")))
    revision = _text(cpu.find("revision"))
    if not stepping and revision:
        stepping = _int(revision)
    # at most a terahertz: beyond, a wrong number or unit, and wallclock ticks would convert to nonsense
    clock = amount(cpu.find("clockspeed"), "clockspeed", source, CLOCK_UNITS, "MHz", hi=1e6)
    mhz = float(clock[0]) if clock else 0.0
    caches = []
    for c in cpu.iterfind("cacheinfo/cache"):
        size = amount(c.find("size"), "size", source, SIZE_UNITS, "KB", hi=2**40, keep=("KuOps",))
        assoc = c.find("associativity")
        caches.append(
            Cache(
                type=c.get("type", "unified"),
                level=_int(c.get("level", "0")),
                size_kb=size[0] if size else 0,
                size_units=size[1] if size else "KB",
                line_size=_int(_text(c.find("linesize"))),
                associativity=0 if assoc is not None and assoc.get("type") == "full" else _int(_text(assoc)),
            )
        )
    tlbs = []
    for t in cpu.iterfind("tlbinfo/tlb"):
        assoc = t.find("associativity")
        tlbs.append(
            TLB(
                type=t.get("type", "unified"),
                level=_int(t.get("level", "0")),
                entries=_int(_text(t.find("entries"))),
                associativity=0 if assoc is not None and assoc.get("type") == "full" else _int(_text(assoc)),
            )
        )
    memory = amount(root.find("memoryinfo"), "memoryinfo", source, MEMORY_UNITS, "MB", hi=2**40)
    page = amount(root.find("syspagesize"), "syspagesize", source, SIZE_UNITS, "KB", hi=2**30)
    return MachineInfo(
        cpu_count=_count(root, "cpucount", source, 1),
        vendor=_text(cpu.find("vendor")),
        brand=_text(cpu.find("brand")),
        family=family,
        model=model,
        stepping=stepping,
        mhz=mhz,
        caches=caches,
        tlbs=tlbs,
        memory_mb=memory[0] if memory else 0,
        page_size=round(page[0] * 1024) if page else 4096,
    )
