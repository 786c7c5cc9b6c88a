"""Reader of processed profiles, <hwpcprofilereport> (hwpcprofilereport-0.3
and earlier): ours, and those of the original PerfSuite (mapper "binutils",
unknown locations as file and function "??" with line 0).  The first
<hwpcprofile> is read."""

from __future__ import annotations

from psuite.errors import InputError
from psuite.psprocess.readers.hwpcprofile import read_event
from psuite.psprocess.readers.hwpcreport import read_run_info
from psuite.report import Location, ProfileReport

ROOT = "hwpcprofilereport"


def accepts(root) -> bool:
    return root.tag == ROOT


def _int(text: str | None, what: str, source: str) -> int:
    try:
        return int(float((text or "0").strip()))
    except ValueError:
        raise InputError(f"{source}: {what} is not a number: {text!r}") from None


def read(root, source: str) -> ProfileReport:
    r = ProfileReport(version=root.get("version", ""), generator=root.get("generator", ""))
    info = root.find("executioninfo")
    read_run_info(info if info is not None else root, r, source)
    prof = root.find("hwpcprofile")
    if prof is None:
        raise InputError(f"{source}: <hwpcprofilereport> without <hwpcprofile>")
    r.mapper = prof.get("mapper", "")
    event = prof.find("hwpcevent")
    if event is not None:
        read_event(event, r)
    period = prof.findtext("period")
    r.threshold = _int(period, "<period>", source) if period else None
    r.total_samples = _int(prof.findtext("totalsamples"), "<totalsamples>", source)
    for module in prof.iterfind("module"):
        for file in module.iterfind("file"):
            for function in file.iterfind("function"):
                for line in function.iterfind("line"):
                    r.locations.append(Location(module=module.get("name", "??"), file=file.get("name", "??"),
                                                function=function.get("name", "??"),
                                                line=_int(line.get("lineno"), "lineno", source),
                                                samples=_int(line.text, "sample count", source)))
    return r
