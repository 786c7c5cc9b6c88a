"""The call paths of what -x writes, as psuite's call-path companion
(docs/formats/callpaths.md) beside it: PerfSuite's documents have no place
for calling contexts (the DTDs allow none), so psrun writes them beside
the flat profile, and psprocess -x does the same for what it writes.

One profile: a <callpaths> 1.1 document, as psrun writes it.  A combined
document (-c): one <callpaths> per member that has call paths, inside a
<multicallpaths> root, as <multihwpcprofilereport> holds its
<hwpcprofilereport>s; each names its member in <profile file="X.xml#N">
(N counted from 1 in document order).  The addresses are written as
recorded, so that reading them back resolves them as the originals were."""

from __future__ import annotations

import os

from lxml import etree

from psuite.model.report import MultiReport, ProfileReport

TYPE_CHECKING = False
if TYPE_CHECKING:
    from psuite.model.calltree import CallPathProfile

VERSION = "1.1"
MAX_DEPTH = 1024  # psrun's largest depth: for a document that did not say its own


def element(cp: CallPathProfile, profile_file: str):
    """One process's <callpaths>, belonging to `profile_file`."""
    from psuite._version import __version__
    from psuite.model.calltree import KIND_NAMES

    root = etree.Element("callpaths", version=VERSION, generator=f"psuite {__version__} psprocess")
    etree.SubElement(root, "profile", file=profile_file, pid=str(cp.pid), hostname=cp.hostname,
                     command=cp.command)
    sampling = etree.SubElement(root, "sampling", event=cp.event, threshold=str(cp.threshold),
                                maxdepth=str(cp.maxdepth or MAX_DEPTH))
    if cp.unwinder:
        sampling.set("unwinder", cp.unwinder)
    for m in sorted(cp.modules.values(), key=lambda m: m.id):
        mod = etree.SubElement(root, "module", id=str(m.id), file=m.file, offset=f"0x{m.offset:x}")
        if m.buildid:
            mod.set("buildid", m.buildid)
    for t in cp.threads:
        th = etree.SubElement(root, "thread", id=str(t.thread), tid=str(t.tid), samples=str(t.samples),
                              truncated=str(t.truncated), lost=str(t.lost))
        for i in range(1, len(t.parent)):
            node = etree.SubElement(th, "node", id=str(i), parent=str(t.parent[i]))
            kind = KIND_NAMES[t.kind[i]]
            if kind in ("call", "sample"):  # the others have no address
                node.set("module", str(t.module[i]))
                node.set("addr", f"{t.addr[i]:x}")
            if kind != "call":
                node.set("kind", kind)
            if t.exclusive[i]:
                node.set("samples", str(t.exclusive[i]))
    return root


def members_with_callpaths(report) -> list[tuple[int, CallPathProfile]]:
    """(member number from 1, its call paths) of a combined report's
    written members; [(0, cp)] for a single profile with call paths."""
    if isinstance(report, MultiReport):
        if not report.of_profiles:
            return []
        return [(i, m.callpaths) for i, m in enumerate(report.reports, 1) if m.callpaths is not None]
    if isinstance(report, ProfileReport) and report.callpaths is not None:
        return [(0, report.callpaths)]
    return []


def render(report, document: str) -> str | None:
    """The companion of `report` written as the file `document`, or None
    when it has no call paths."""
    found = members_with_callpaths(report)
    if not found:
        return None
    name = os.path.basename(document)
    if isinstance(report, MultiReport):
        root = etree.Element("multicallpaths", version=VERSION, generator="psuite psprocess")
        for i, cp in found:
            root.append(element(cp, f"{name}#{i}"))
    else:
        root = element(found[0][1], name)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True).decode()
