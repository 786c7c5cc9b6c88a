"""Reader of <hwpcreport mode="count">, both DTD generations and documents
written by the original PerfSuite (ticks wallclock, <cpuidinfo>, elements
the DTDs omit)."""

from __future__ import annotations

import re

from psuite.errors import InputError
from psuite.formats import machineinfo, values
from psuite.formats.readers.document import Document
from psuite.model.report import CountReport, RunInfo

ROOT = "hwpcreport"


def _text(root, tag: str) -> str:
    el = root.find(tag)
    return (el.text or "").strip() if el is not None else ""


def accepts(root) -> bool:
    return root.tag == ROOT and root.get("mode", "count") == "count"


def read(root, doc: Document) -> CountReport:
    r = CountReport()
    read_run_info(root, r, doc.source)
    return _counts(r, root.find("hwpceventdata"), doc)


# psrun's clause of the sampled shared modules' build-ids, last in <annotation>:
# module build-ids: "PATH" HEX, "PATH" HEX (in PATH, '"' and '\\' escaped with '\\')
MODULE_IDS = re.compile(r"(?:^|; )module build-ids: ")
MODULE_ID = re.compile(r'"((?:[^"\\]|\\.)*)" ([0-9a-f]{2,128})(?:, |$)')


def module_buildids(annotation: str) -> dict[str, str]:
    """The module build-ids an annotation records: file -> hex."""
    parts = MODULE_IDS.split(annotation, 1)
    if len(parts) < 2:
        return {}
    return {re.sub(r"\\(.)", r"\1", m.group(1)): m.group(2) for m in MODULE_ID.finditer(parts[1])}


def read_run_info(root, r: RunInfo, source: str) -> None:
    """The execution facts every report carries (root: <hwpcreport> or
    <executioninfo>), tolerant of the original PerfSuite's variants."""
    r.source = source
    r.version = r.version or root.get("version", "")
    r.generator = r.generator or root.get("generator", "")
    r.date = _text(root, "date")
    r.hostname = _text(root, "hostname")
    domain = _text(root, "domainname")
    r.domainname = "" if domain == "(none)" else domain  # getdomainname()'s word for "no domain"
    pid = _text(root, "pid")
    r.pid = values.integer(pid, "<pid>", source, hi=2**31 - 1) if pid else None
    r.thread = values.thread_number(_text(root, "thread"))
    r.username = _text(root, "username")
    cmd = root.find("command")
    if cmd is not None:
        r.command = (cmd.text or "").strip()
        r.md5sum = cmd.get("md5sum", "")
    r.annotation = _text(root, "annotation")
    # psrun names the executable's GNU build-id last in <annotation> (the
    # DTD declares no attribute for it on <command>).
    # (hwpcprofile reads the sampled modules' clause after it)
    buildid = re.search(r"\bbuild-id ([0-9a-f]{2,128})\b", MODULE_IDS.split(r.annotation, 1)[0])
    r.buildid = buildid.group(1) if buildid else ""
    rank = re.match(r"MPI rank (\d{1,9})\b", r.annotation)
    r.rank = int(rank.group(1)) if rank else None
    mi = root.find("machineinfo")
    if mi is not None:
        r.machine = machineinfo.from_element(mi, source)
    # cputime sits in <hwpcreport> (0.3) or inside older layouts' children.
    cpu = root.find("cputime")
    if cpu is None:
        cpu = root.find(".//cputime")
    if cpu is not None:
        scale = _seconds_per_unit(cpu, "cputime", source)
        r.usertime = _seconds(_text(cpu, "usertime"), "<usertime>", scale, source)
        r.systemtime = _seconds(_text(cpu, "systemtime"), "<systemtime>", scale, source)
    wall = root.find("wallclock")
    if wall is not None:
        r.wallclock = _wallclock(wall, r, source)


# The DTDs name seconds (and ticks for <wallclock>); a document naming
# another unit of time is read in it rather than taken for seconds.
TIME_UNITS = {"seconds": 1.0, "second": 1.0, "secs": 1.0, "sec": 1.0, "s": 1.0, "milliseconds": 1e-3, "ms": 1e-3,
              "microseconds": 1e-6, "usec": 1e-6, "us": 1e-6, "nanoseconds": 1e-9, "nsec": 1e-9, "ns": 1e-9}


def _seconds_per_unit(el, tag: str, source: str) -> float:
    units = (el.get("units") or "seconds").strip().lower() or "seconds"
    scale = TIME_UNITS.get(units)
    if scale is None:
        raise InputError(f"{source}: <{tag} units={el.get('units')!r}> is not a unit of time psprocess reads "
                         f"(seconds, ms, us, ns{', ticks' if tag == 'wallclock' else ''}); fix or regenerate the "
                         "document")
    return scale


def _seconds(text: str | None, what: str, scale: float, source: str) -> float | None:
    """A time in seconds from a value in units of scale seconds; None when empty."""
    value = values.optional_real(text, what, source, hi=values.MAX_SECONDS / scale)
    return None if value is None else value * scale


def _wallclock(wall, r: RunInfo, source: str) -> float | None:
    if (wall.get("units") or "").strip().lower() != "ticks":
        return _seconds(wall.text, "<wallclock>", _seconds_per_unit(wall, "wallclock", source), source)
    # The original PerfSuite wrote cycle-counter ticks, and psuite does too
    # for TAU's and PTP's sake: seconds = ticks / (clockspeed MHz * 1e6).
    ticks = values.optional_real(wall.text, "<wallclock units=\"ticks\">", source,
                                 hi=values.MAX_SECONDS * 1e13)
    mhz = r.machine.mhz if r.machine else 0.0
    if ticks is None or not mhz:
        return None
    seconds = ticks / (mhz * 1e6)
    if seconds > values.MAX_SECONDS:  # a clock of a few hertz, say
        raise InputError(f"{source}: <wallclock units=\"ticks\"> is {wall.text.strip()} ticks of the "
                         f"<clockspeed> {mhz:g} MHz, {seconds:.3g} s, more than a century; fix or regenerate the "
                         "document")
    return seconds


def _counts(r: CountReport, data, doc: Document) -> CountReport:
    if data is None:
        raise InputError(f"{doc.source}: counting report without <hwpceventdata>")
    r.counter_class = data.get("class", "")
    r.counter_version = data.get("version", "")
    r.domain = data.get("domain", "user")
    r.multiplexed = data.get("multiplexed", "no") == "yes"
    r.events = doc.events(data)
    return r
