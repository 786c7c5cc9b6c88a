"""Reader of <hwpcreport mode="count">, both DTD generations and documents
written by the original PerfSuite (ticks wallclock, <cpuidinfo>, elements
the DTDs omit)."""

from __future__ import annotations

import re

from psuite.errors import InputError
from psuite.formats import machineinfo
from psuite.report import CountReport, Event, RunInfo

ROOT = "hwpcreport"


def _text(root, tag: str) -> str:
    el = root.find(tag)
    return (el.text or "").strip() if el is not None else ""


def _float(text: str, what: str, source: str) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{source}: <{what}> is not a number: {text!r}") from None


def accepts(root) -> bool:
    return root.tag == ROOT and root.get("mode", "count") == "count"


def read(root, source: str) -> CountReport:
    r = CountReport()
    read_run_info(root, r, source)
    return _counts(r, root.find("hwpceventdata"), source)


def read_run_info(root, r: RunInfo, source: str) -> None:
    """The execution facts every report carries (root: <hwpcreport> or
    <executioninfo>), tolerant of the original PerfSuite's variants."""
    r.source = source
    r.version = r.version or root.get("version", "")
    r.generator = r.generator or root.get("generator", "")
    r.date = _text(root, "date")
    r.hostname = _text(root, "hostname")
    r.domainname = _text(root, "domainname")
    pid = _text(root, "pid")
    r.pid = int(pid) if pid.isdigit() else None
    r.thread = _text(root, "thread")
    r.username = _text(root, "username")
    cmd = root.find("command")
    if cmd is not None:
        r.command = (cmd.text or "").strip()
        r.md5sum = cmd.get("md5sum", "")
    r.annotation = _text(root, "annotation")
    rank = re.match(r"MPI rank (\d+)", r.annotation)
    r.rank = int(rank.group(1)) if rank else None
    mi = root.find("machineinfo")
    if mi is not None:
        r.machine = machineinfo.from_element(mi)
    # cputime sits in <hwpcreport> (0.3) or inside older layouts' children.
    cpu = root.find("cputime")
    if cpu is None:
        cpu = root.find(".//cputime")
    if cpu is not None:
        r.usertime = _float(_text(cpu, "usertime"), "usertime", source)
        r.systemtime = _float(_text(cpu, "systemtime"), "systemtime", source)
    wall = root.find("wallclock")
    if wall is not None:
        value = _float((wall.text or "").strip(), "wallclock", source)
        if value is not None and wall.get("units", "seconds") == "ticks":
            # PerfSuite wrote cycle-counter ticks: seconds = ticks / (MHz * 1e6).
            mhz = r.machine.mhz if r.machine else 0.0
            value = value / (mhz * 1e6) if mhz else None
        r.wallclock = value


def _counts(r: CountReport, data, source: str) -> CountReport:
    if data is None:
        raise InputError(f"{source}: counting report without <hwpceventdata>")
    r.counter_class = data.get("class", "")
    r.counter_version = data.get("version", "")
    r.domain = data.get("domain", "user")
    r.multiplexed = data.get("multiplexed", "no") == "yes"
    for ev in data.iterfind("hwpcevent"):
        name = ev.get("name", "")
        text = (ev.text or "").strip()
        try:
            count = float(text) if any(c in text for c in ".eE") else int(text)
        except ValueError:
            raise InputError(f"{source}: count of {name or 'an event'} is not a number: {text!r}") from None
        r.events.append(Event(name=name, count=count, type=ev.get("type", "native"),
                              derived=ev.get("derived", "no") == "yes"))
    return r
