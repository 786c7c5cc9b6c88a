"""<hwpcreport mode="count"> in the -0.3 generation (hwpcreport-0.3.dtd):
normalises documents of either generation.  Several reports are written as
consecutive documents is not XML, so exactly one report is required."""

from __future__ import annotations

from lxml import etree

from psuite.errors import UsageError
from psuite.formats import machineinfo
from psuite.report import CountReport

EXTENSION = ".xml"


def _sub(parent, tag: str, text: object = None, **attrs: str):
    el = etree.SubElement(parent, tag, **attrs)
    if text is not None:
        el.text = str(text)
    return el


def to_element(r: CountReport):
    root = etree.Element("hwpcreport", version="0.3", generator=r.generator or "psuite", mode="count")
    _sub(root, "date", r.date)
    _sub(root, "hostname", r.hostname)
    _sub(root, "domainname", r.domainname)
    if r.pid is not None:
        _sub(root, "pid", r.pid)
    if r.thread:
        _sub(root, "thread", r.thread)
    if r.username:
        _sub(root, "username", r.username)
    if r.command:
        _sub(root, "command", r.command, **({"md5sum": r.md5sum} if r.md5sum else {}))
    if r.annotation:
        _sub(root, "annotation", r.annotation)
    _sub(root, "wallclock", repr(r.wallclock or 0.0), units="seconds")
    cpu = _sub(root, "cputime", units="seconds")
    _sub(cpu, "usertime", repr(r.usertime or 0.0))
    _sub(cpu, "systemtime", repr(r.systemtime or 0.0))
    if r.machine:
        root.append(machineinfo.to_element(r.machine))
    cls = r.counter_class if r.counter_class in ("null", "PAPI", "perfmon") else "null"
    data = _sub(root, "hwpceventdata", **{"class": cls}, domain=r.domain,
                multiplexed="yes" if r.multiplexed else "no")
    if r.counter_version:
        data.set("version", r.counter_version)
    for e in r.events:
        count = int(e.count) if float(e.count).is_integer() else e.count
        _sub(data, "hwpcevent", count, type=e.type if e.type in ("preset", "native") else "native",
             name=e.name, derived="yes" if e.derived else "no")
    return root


def render(reports: list[CountReport], **_options) -> str:
    if len(reports) != 1:
        raise UsageError("--format xml writes one report; give one input (combining comes with psprocess -c)")
    return etree.tostring(to_element(reports[0]), xml_declaration=True, encoding="UTF-8",
                          pretty_print=True).decode()
