"""The processed profile, <hwpcprofilereport> (hwpcprofilereport-0.3.dtd):
samples by module, file, function and line, as PerfSuite's psprocess -x
wrote them; the mapper attribute names the resolver."""

from __future__ import annotations

from lxml import etree

from psuite.errors import UsageError
from psuite.formats import machineinfo, perfsuite
from psuite.formats.writers.xml_format import run_info, sub
from psuite.libperfsuite.machine import MachineInfo
from psuite.model.report import ProfileReport


def to_element(r: ProfileReport, idle: bool = False):
    """The processed profile.  A profile without samples is refused (the
    DTD wants module+ file+ function+ line+, and a placeholder line makes
    TAU divide 0 by 0), unless `idle`: a member of a combined document,
    where a thread that took no sample is still one of the run's threads
    (the cube, the HTML page and JSON list it with 0), written with one
    line of 0 samples in PerfSuite's "??" (unknown)."""
    if not idle and not any(loc.samples for loc in r.locations):
        raise UsageError(f"{r.source} has no samples ({r.who}); there is no profile to write as XML")
    root = etree.Element("hwpcprofilereport", version="0.3", generator=r.generator or "psuite")
    sub(root, "date", perfsuite.ctime_date(r.date))
    sub(root, "hostname", r.hostname)
    sub(root, "domainname", r.domainname)
    if r.username:
        sub(root, "username", r.username)
    info = sub(root, "executioninfo")
    run_info(info, r)
    if info.find("machineinfo") is None:  # required here; an empty one if the source had none
        info.append(machineinfo.to_element(MachineInfo(cpu_count=0, vendor="", brand="", family=0, model=0,
                                                       stepping=0, mhz=0.0)))
    prof = sub(root, "hwpcprofile", mapper=r.mapper or "psuite-dwarf")
    event = sub(prof, "hwpcevent", **{"class": r.profile_class or "itimer"}, name=r.event or "ITIMER_PROF",
                domain=r.domain if r.domain in ("user", "kernel", "all") else "user",
                type=r.event_type if r.event_type in ("preset", "native") else "native")
    if r.profile_version:
        event.set("version", r.profile_version)
    sub(prof, "period", r.threshold if r.threshold is not None else 0)
    sub(prof, "totalsamples", r.total_samples)
    tree: dict[str, dict[str, dict[str, dict[int, int]]]] = {}
    for loc in r.locations:
        lines = tree.setdefault(loc.module, {}).setdefault(loc.file, {}).setdefault(loc.function, {})
        lines[loc.line] = lines.get(loc.line, 0) + loc.samples
    if not any(loc.samples for loc in r.locations):  # idle: the one line the DTD needs, 0 samples
        tree = {"??": {"??": {"??": {0: 0}}}}
    for module, files in sorted(tree.items()):
        m = sub(prof, "module", name=module)
        for file, functions in sorted(files.items()):
            f = sub(m, "file", name=file)
            for function, lines in sorted(functions.items()):
                fn = sub(f, "function", name=function)
                for lineno, count in sorted(lines.items()):
                    sub(fn, "line", count, lineno=str(lineno))
    return root
