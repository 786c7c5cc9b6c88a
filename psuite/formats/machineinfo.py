"""<machineinfo>: write the -0.3 generation, read both generations.

machineinfo.dtd has <family>/<model> in <cpuinfo>; machineinfo-0.3.dtd has
<cpuidinfo> instead.  Readers must tolerate either, and elements neither
DTD names.
"""

from __future__ import annotations

import re

from lxml import etree

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
        _sub(el, "size", c.size_kb, units="KB")
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
    _sub(root, "memoryinfo", info.memory_mb, units="MB")
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
    clock = _text(cpu.find("clockspeed"))
    mhz = values.real(clock, "<clockspeed>", source, hi=1e6) if clock else 0.0
    caches = []
    for c in cpu.iterfind("cacheinfo/cache"):
        size_el = c.find("size")
        size = _int(_text(size_el))
        assoc = c.find("associativity")
        caches.append(
            Cache(
                type=c.get("type", "unified"),
                level=_int(c.get("level", "0")),
                size_kb=size,
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
        memory_mb=_count(root, "memoryinfo", source, 0),
        page_size=_count(root, "syspagesize", source, 4) * 1024,
    )
