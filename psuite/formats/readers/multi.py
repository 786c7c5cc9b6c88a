"""Reader of the combined documents, <multihwpcreport> (multihwpcreport.dtd
and -0.3) and <multihwpcprofilereport> (multihwpcprofilereport-0.2/-0.3):
psuite's `psprocess -c -x` output and the original PerfSuite's.  Each is a
list of single reports; they are read as such and combined again, so a
multi-document gives the same report, statistics and exports as the files
it was made from."""

from __future__ import annotations

from psuite.errors import InputError
from psuite.formats.readers import hwpcprofile, hwpcprofilereport, hwpcreport
from psuite.formats.readers.document import Document
from psuite.model.report import MultiReport

ROOTS = {"multihwpcreport": (hwpcreport, hwpcprofile), "multihwpcprofilereport": (hwpcprofilereport,)}


def accepts(root) -> bool:
    return root.tag in ROOTS


def read(root, doc: Document) -> MultiReport:
    readers = ROOTS[root.tag]
    multi = MultiReport()
    for i, child in enumerate(el for el in root if isinstance(el.tag, str)):
        reader = next((rd for rd in readers if rd.accepts(child)), None)
        if reader is None:
            raise InputError(f"{doc.source}: <{root.tag}> holds a <{child.tag}> (member {i + 1}); "
                             f"it can only hold {' or '.join(f'<{rd.ROOT}>' for rd in readers[:1])} reports")
        member = reader.read(child, doc)
        member.source = f"{doc.source}#{i + 1}"
        multi.reports.append(member)
    if not multi.reports:
        raise InputError(f"{doc.source}: <{root.tag}> holds no reports")
    kinds = {type(m) for m in multi.reports}
    if len(kinds) > 1:
        raise InputError(f"{doc.source}: <{root.tag}> mixes counting reports and profiles")
    return multi
