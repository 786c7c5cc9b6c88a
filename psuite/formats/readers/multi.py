"""Reader of the combined documents, <multihwpcreport> (multihwpcreport.dtd
and -0.3) and <multihwpcprofilereport> (multihwpcprofilereport-0.2/-0.3):
psuite's `psprocess -c -x` output and the original PerfSuite's.  Each is a
list of single reports; they are read as such and combined again, so a
multi-document gives the same report, statistics and exports as the files
it was made from.  A combined document's call paths lie beside it
(X.callpaths.xml, a <multicallpaths>: PerfSuite's DTDs have no place for
them), each naming its member; attach() gives each member its own."""

from __future__ import annotations

import os

from psuite.errors import InputError
from psuite.formats.readers import hwpcprofile, hwpcprofilereport, hwpcreport
from psuite.formats.readers.document import Document
from psuite.model.report import MultiReport, ProfileReport

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


def attach(multi: MultiReport, profiles: list, source: str) -> list[str]:
    """Each member's call paths from the companion of the combined document
    read from `source`: the <callpaths> whose <profile file="X.xml#N">
    names member N of X.xml (and its pid).  Returns why the others were
    left out, one line each."""
    base = os.path.basename(source.rstrip("/")).split("?", 1)[0]
    problems = []
    for cp in profiles:
        name, _, number = cp.profile_file.rpartition("#")
        k = int(number) if number.isdigit() and number.isascii() else 0
        if name != base or not 0 < k <= len(multi.reports):
            problems.append(f'its <profile file="{cp.profile_file}"> names no member of {base}')
            continue
        member = multi.reports[k - 1]
        if not isinstance(member, ProfileReport):
            problems.append(f"member {k} of {base} is no profile")
        elif member.pid is not None and cp.pid and cp.pid != member.pid:
            problems.append(f'its <profile file="{cp.profile_file}" pid="{cp.pid}"> is not member {k}\'s pid '
                            f"{member.pid}")
        elif member.callpaths is not None:
            problems.append(f"member {k} of {base} is named twice")
        else:
            member.callpaths = cp
    return problems
