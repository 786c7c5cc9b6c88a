"""<resourcereport>: psrun -R's document, with the element names PerfSuite's
resource reports use (there is no DTD for it among PerfSuite's): pid,
starttime, exitcode (type exit|signal), samples (frequency), loadavgs (min,
max, resolution, outofrange; loadavg load=...), maxloads (maxload interval
unit), maxrss and maxvm in MB, cputime (usertime, systemtime), faults
(major, minor), swaps."""

from __future__ import annotations

from lxml import etree

from psuite.errors import InputError
from psuite.formats import values
from psuite.model.report import ResourceReport


def _sub(parent, tag: str, text: object = None, **attrs: str):
    el = etree.SubElement(parent, tag, **attrs)
    if text is not None:
        el.text = str(text)
    return el


def to_element(r: ResourceReport):
    root = etree.Element("resourcereport", version="0.1", generator="psuite psrun")
    if r.hostname:
        _sub(root, "hostname", r.hostname)
    if r.command:
        _sub(root, "command", r.command)
    _sub(root, "pid", r.pid)
    _sub(root, "starttime", r.starttime)
    _sub(root, "exitcode", r.exit_code, type=r.exit_type)
    _sub(root, "samples", r.samples, frequency=f"{r.frequency:g}")
    loads = _sub(root, "loadavgs", min=f"{r.load_min:g}", max=f"{r.load_max:g}",
                 resolution=f"{r.load_resolution:g}", outofrange=str(r.load_outofrange))
    for load, count in sorted(r.loads.items()):
        _sub(loads, "loadavg", count, load=f"{load:g}")
    maxloads = _sub(root, "maxloads")
    for interval, value in sorted(r.maxloads.items()):
        _sub(maxloads, "maxload", f"{value:.2f}", interval=str(interval), unit="minute")
    _sub(root, "maxrss", f"{r.maxrss_mb:.3f}", units="MB")
    _sub(root, "maxvm", f"{r.maxvm_mb:.3f}", units="MB")
    cpu = _sub(root, "cputime", units="seconds")
    _sub(cpu, "usertime", f"{r.usertime:.6f}")
    _sub(cpu, "systemtime", f"{r.systemtime:.6f}")
    faults = _sub(root, "faults")
    _sub(faults, "major", r.major_faults)
    _sub(faults, "minor", r.minor_faults)
    _sub(root, "swaps", r.swaps)
    return root


def from_element(root, source: str) -> ResourceReport:
    def text(path: str) -> str:
        return (root.findtext(path) or "").strip()

    def whole(path: str, default: int | None = 0, hi: int = 2**63 - 1) -> int | None:
        return values.integer(text(path), f"<{path}>", source, hi=hi) if text(path) else default

    def real(path: str) -> float:
        return values.real(text(path), f"<{path}>", source, hi=1e15) if text(path) else 0.0

    def attr(el, name: str, default: str, hi: float = 1e6, lo: float = 0.0) -> float:
        return values.real(el.get(name, default), f"<{el.tag} {name}>", source, lo=lo, hi=hi)

    r = ResourceReport(source=source, pid=whole("pid", None, 2**31 - 1), starttime=text("starttime"),
                       command=text("command"), hostname=text("hostname"))
    code = root.find("exitcode")
    if code is not None:
        r.exit_type = code.get("type", "exit")
        r.exit_code = whole("exitcode", 0, 255)
    samples = root.find("samples")
    if samples is not None:
        r.samples = whole("samples")
        r.frequency = attr(samples, "frequency", "1", hi=1e9)
        if r.frequency <= 0:
            raise InputError(f"{source}: <samples frequency> must be above 0, not {r.frequency:g}")
    loads = root.find("loadavgs")
    if loads is not None:
        r.load_min = attr(loads, "min", "0")
        r.load_max = attr(loads, "max", "0")
        r.load_resolution = attr(loads, "resolution", "0.5")
        r.load_outofrange = values.integer(loads.get("outofrange", "0"), "<loadavgs outofrange>", source)
        for el in loads.iterfind("loadavg"):
            r.loads[attr(el, "load", "0")] = values.integer(el.text, "<loadavg>", source)
    for el in root.iterfind("maxloads/maxload"):
        interval = values.integer(el.get("interval", "1"), "<maxload interval>", source, hi=10**6)
        r.maxloads[interval] = values.real(el.text, "<maxload>", source, hi=1e6)
    r.maxrss_mb, r.maxvm_mb = real("maxrss"), real("maxvm")
    r.usertime, r.systemtime = real("cputime/usertime"), real("cputime/systemtime")
    r.major_faults, r.minor_faults, r.swaps = whole("faults/major"), whole("faults/minor"), whole("swaps")
    return r
