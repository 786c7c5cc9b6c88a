"""Reader of processed profiles, <hwpcprofilereport> (hwpcprofilereport-0.3
and earlier, down to the first generation's <modules> and loose <file>s):
ours, and those of the original PerfSuite (mapper "binutils", unknown
locations as file and function "??" with line 0).  The first
<hwpcprofile> is read."""

from __future__ import annotations

from psuite.errors import InputError
from psuite.formats import values
from psuite.formats.readers.document import Document
from psuite.formats.readers.hwpcprofile import read_event
from psuite.formats.readers.hwpcreport import read_run_info
from psuite.model.report import Location, ProfileReport

ROOT = "hwpcprofilereport"


def accepts(root) -> bool:
    return root.tag == ROOT


def read(root, doc: Document) -> ProfileReport:
    source = doc.source
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
    r.threshold = values.integer(period, "<period>", source) if period and period.strip() else None
    total = (prof.findtext("totalsamples") or "").strip()
    for module in prof.iterfind("module"):
        _files(r, doc, module.get("name", "??"), module)
    if prof.find("file") is not None:
        # The first generation (hwpcprofilereport.dtd): <modules> lists the
        # modules apart and the <file>s sit in <hwpcprofile> itself.
        names = [m.get("name") or (m.text or "").strip() or "??" for m in prof.iterfind("modules/module")]
        _files(r, doc, names[0] if len(names) == 1 else "??", prof)
    # An empty <totalsamples/> (the DTD allows it) is not a count of zero: the lines' samples are the total.
    r.total_samples = (values.integer(total, "<totalsamples>", source) if total
                       else sum(loc.samples for loc in r.locations))
    return r


def _files(r: ProfileReport, doc: Document, mname: str, parent) -> None:
    for file in parent.iterfind("file"):
        fname = file.get("name", "??")
        for function in file.iterfind("function"):
            func = function.get("name", "??")
            # A line of 0 samples holds nothing: it is the placeholder of a
            # thread that took no sample (the DTD wants a line), not a location.
            r.locations += [Location(module=mname, file=fname, function=func, line=lineno, samples=n)
                            for lineno, n in doc.lines(function) if n]
