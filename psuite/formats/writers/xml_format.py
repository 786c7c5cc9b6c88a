"""XML output: counting reports as <hwpcreport mode="count"> in the -0.3
generation (hwpcreport-0.3.dtd), normalising documents of either
generation; profiles as the processed <hwpcprofilereport>
(hwpcprofilereport-0.3.dtd, see xml_profile); combinations as
<multihwpcreport> (multihwpcreport-0.3.dtd).  Several reports as
consecutive documents is not XML, so exactly one report is required.
Call paths have no place in these DTDs: psprocess writes them beside the
document (writers/xml_callpaths)."""

from __future__ import annotations

from lxml import etree

from psuite.errors import UsageError
from psuite.formats import machineinfo, perfsuite
from psuite.formats.writers import documents
from psuite.model.report import CountReport, MultiReport, ProfileReport, ResourceReport, RunInfo

EXTENSION = ".xml"


def sub(parent, tag: str, text: object = None, **attrs: str):
    el = etree.SubElement(parent, tag, **attrs)
    if text is not None:
        el.text = str(text)
    return el


def run_info(parent, r: RunInfo, with_pid: bool = True) -> None:
    """date ... machineinfo, in the order both DTDs give them, as the
    original PerfSuite wrote them (see formats/perfsuite.py)."""
    sub(parent, "date", perfsuite.ctime_date(r.date))
    sub(parent, "hostname", r.hostname)
    sub(parent, "domainname", r.domainname)
    if with_pid and r.pid is not None:
        sub(parent, "pid", r.pid)
    if with_pid:  # the process total is thread 0; TAU and PTP key threads by it
        sub(parent, "thread", r.thread or 0)
    if r.username:
        sub(parent, "username", r.username)
    if r.command:
        sub(parent, "command", r.command, **({"md5sum": r.md5sum} if r.md5sum else {}))
    if r.annotation:
        sub(parent, "annotation", r.annotation)
    mhz = machineinfo.clockspeed_text(r.machine) if r.machine else ""
    if mhz and float(mhz) > 0:
        sub(parent, "wallclock", perfsuite.wallclock_ticks(r.wallclock or 0.0, mhz), units="ticks")
    else:  # no clock to count ticks of
        sub(parent, "wallclock", repr(r.wallclock or 0.0), units="seconds")
    cpu = sub(parent, "cputime", units="seconds")
    sub(cpu, "usertime", repr(r.usertime or 0.0))
    sub(cpu, "systemtime", repr(r.systemtime or 0.0))
    if r.machine:
        parent.append(machineinfo.to_element(r.machine))


def to_element(r: CountReport):
    return _count_element(documents.of_report(r))


def _count_element(c: documents.Counts):
    r = c.run
    root = etree.Element("hwpcreport", version="0.3", generator=r.generator or "psuite", mode="count")
    run_info(root, r)
    cls = r.counter_class if r.counter_class in ("null", "PAPI", "perfmon") else "null"
    data = sub(root, "hwpceventdata", **{"class": cls}, domain=r.domain,
               multiplexed="yes" if r.multiplexed else "no")
    if r.counter_version:
        data.set("version", r.counter_version)
    for block in c.blocks:
        for name, count, kind, derived, _, _ in block:
            count = int(count) if float(count).is_integer() else count
            sub(data, "hwpcevent", count, type=kind if kind in ("preset", "native") else "native",
                name=name, derived="yes" if derived else "no")
    return root


def render(reports: list, **_options) -> str:
    if len(reports) != 1:
        raise UsageError("--format xml writes one report; give one input (combining comes with psprocess -c)")
    r = reports[0]
    doctype = None
    located = documents.of_experiment(r) if documents.is_counts(r) else None  # a counting document's experiment
    if located is not None and len(located) != 1:
        raise UsageError("--format xml writes one report; give one input (combining comes with psprocess -c)")
    if documents.is_profile(r):  # a profile document's experiment: the document model is the writer's own
        [p] = documents.profiles(r)
        r = documents.profile_document(p)
    if located is not None:
        root = _count_element(located[0])
    elif isinstance(r, ResourceReport):
        from psuite.formats import resourcereport

        root = resourcereport.to_element(r)
    elif isinstance(r, MultiReport) and r.of_profiles:  # <multihwpcprofilereport>: the processed profiles
        from psuite.formats.writers import xml_profile

        members = [documents.profile_document(p) for p in documents.combined(r)[0]] \
            if documents.is_combined(r) else r.reports
        if not any(loc.samples for member in members for loc in member.locations):
            raise UsageError("none of the combined profiles has samples; there is no profile to write as XML")
        root = etree.Element("multihwpcprofilereport", version="0.3", generator="psuite")
        for member in members:  # every thread, those that took no sample too (see xml_profile)
            root.append(xml_profile.to_element(member, idle=True))
    elif isinstance(r, MultiReport):  # <multihwpcreport>: the reports themselves (statistics are derived)
        root = etree.Element("multihwpcreport", version="0.3", generator="psuite")
        for member in documents.combined(r)[0] if documents.is_combined(r) else r.reports:
            root.append(_count_element(member) if isinstance(member, documents.Counts) else to_element(member))
    elif isinstance(r, ProfileReport):
        from psuite.formats.writers import xml_profile

        root = xml_profile.to_element(r)
    else:
        root = to_element(r)
    if root.tag in perfsuite.DTDS:
        doctype = perfsuite.doctype(root.tag)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True,
                          doctype=doctype).decode()
