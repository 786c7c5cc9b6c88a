"""<resourcereport>: psrun -R's document, with the element names PerfSuite's
resource reports use (there is no DTD for it among PerfSuite's): pid,
starttime, exitcode (type exit|signal), samples (frequency), loadavgs (min,
max, resolution, outofrange; loadavg load=...), maxloads (maxload interval
unit), maxrss and maxvm in MB, cputime (usertime, systemtime), faults
(major, minor), swaps."""

from __future__ import annotations

from lxml import etree

from psuite.report import ResourceReport


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
    def num(path: str, kind=float, default=0):
        text = root.findtext(path)
        try:
            return kind(text) if text not in (None, "") else default
        except ValueError:
            return default

    r = ResourceReport(source=source, pid=num("pid", int, None), starttime=root.findtext("starttime", ""),
                       command=root.findtext("command", ""), hostname=root.findtext("hostname", ""))
    code = root.find("exitcode")
    if code is not None:
        r.exit_type = code.get("type", "exit")
        r.exit_code = num("exitcode", int)
    samples = root.find("samples")
    if samples is not None:
        r.samples = num("samples", int)
        r.frequency = float(samples.get("frequency", "1") or 1)
    loads = root.find("loadavgs")
    if loads is not None:
        r.load_min = float(loads.get("min", "0"))
        r.load_max = float(loads.get("max", "0"))
        r.load_resolution = float(loads.get("resolution", "0.5"))
        r.load_outofrange = int(loads.get("outofrange", "0"))
        for el in loads.iterfind("loadavg"):
            r.loads[float(el.get("load", "0"))] = int(el.text or 0)
    for el in root.iterfind("maxloads/maxload"):
        r.maxloads[int(el.get("interval", "1"))] = float(el.text or 0)
    r.maxrss_mb, r.maxvm_mb = num("maxrss"), num("maxvm")
    r.usertime, r.systemtime = num("cputime/usertime"), num("cputime/systemtime")
    r.major_faults, r.minor_faults, r.swaps = num("faults/major", int), num("faults/minor", int), num("swaps", int)
    return r
