"""Input readers, one module per document type, chosen by root element and
mode (as other PerfSuite readers identify documents).  Each has
accepts(root) and read(root, document); document.py does the parsing."""

from __future__ import annotations

import io
import os

from psuite.errors import InputError
from psuite.formats.readers import hwpcprofile, hwpcprofilereport, hwpcreport, multi, resourcereport
from psuite.formats.readers.document import Document, parse

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing costs milliseconds at start-up
    from collections.abc import Callable
    from typing import IO

READERS = (hwpcreport, hwpcprofile, hwpcprofilereport, multi, resourcereport)


class CubeFile(InputError):
    """A CUBE 4 file where a PerfSuite document was read: readers/cube.py
    reads it (psuite.analysis.inputs.load(..., cubes=True)), not the XML
    parser, which would call the tar archive broken XML."""

    def __init__(self, source: str) -> None:
        super().__init__(f"{source} is a CUBE 4 file, not a PerfSuite document; show it with psprocess --html, "
                         "psprocess stat or psprocess dump, and combine cubes with psprocess merge or mean")
        self.source = source


def is_cube(source: str) -> bool:
    """A CUBE 4 file: named .cubex, or a tar archive (ustar magic).  Here,
    not in experiments, so that psprocess asks it without importing numpy."""
    if source.endswith(".cubex"):
        return True
    if "://" in source or not os.path.isfile(source):
        return False
    try:
        with open(source, "rb") as f:
            head = f.read(265)
    except OSError:
        return False
    return is_cube_head(head)


def is_cube_head(head: bytes) -> bool:
    """A tar archive (ustar magic at 257), which is what a .cubex is."""
    return head[257:262] == b"ustar"


def canonical_names(doc):
    """A report model (CountReport, ProfileReport, MultiReport; anything
    else is returned as it is) with its events under their canonical names
    (psuite.hwpc.names), in place; each renamed event keeps the document's
    spelling in counted_as.  A report that counted one event under two
    spellings (PAPI_TOT_CYC and perf::CYCLES) keeps the later one under its
    own: one name stays one measurement.  (Here, not in hwpc.names: the
    event names sit below the report model, which the readers build.)"""
    from psuite.hwpc.names import canonical, rename_events
    from psuite.model.report import CountReport, MultiReport, ProfileReport

    if isinstance(doc, MultiReport):
        for r in (*doc.reports, *doc.totals):
            canonical_names(r)
    elif isinstance(doc, CountReport):
        rename_events(doc.events)
    elif isinstance(doc, ProfileReport) and doc.event:
        name = canonical(doc.event)
        if name != doc.event:
            doc.event_counted_as, doc.event = doc.event, name
    return doc


def read_document(doc: Document):
    """The report model of a parsed document, its events under their
    canonical names (psuite.hwpc.names)."""
    root = doc.root
    for reader in READERS:
        if reader.accepts(root):
            return canonical_names(reader.read(root, doc))
    mode = root.get("mode")
    kind = f"<{root.tag}{f' mode={mode!r}' if mode else ''}>"
    raise InputError(f"{doc.source}: {kind} documents are not supported by this psprocess (it reads "
                     "<hwpcreport> in count and profile mode, <hwpcprofilereport>, <multihwpcreport>, "
                     "<multihwpcprofilereport>, <resourcereport> and <callpaths>)")


def read_stream(stream: IO[bytes], source: str, on_module: Callable[[str], None] | None = None):
    """The report model of one document, parsed from a binary stream.  A
    <callpaths> companion read on its own is a ProfileReport of its call
    paths (readers/callpaths.py streams it with a parser of its own).
    on_module: see document.parse."""
    from psuite.formats.readers import callpaths

    if not hasattr(stream, "peek"):  # look at the first bytes without consuming them
        stream = io.BufferedReader(stream)  # type: ignore[arg-type]
    head = stream.peek(4096)[:4096]  # type: ignore[attr-defined]
    if is_cube_head(head):
        raise CubeFile(source)
    if callpaths.is_callpaths(head):
        return canonical_names(callpaths.report_alone(callpaths.read(stream, source)))
    if callpaths.is_callpaths(head, callpaths.MULTI_ROOT):  # no flat profile to make of several processes
        raise InputError(f"{source}: <{callpaths.MULTI_ROOT}> is the call paths of a combined document (psprocess "
                         "-c -x); give that document, which reads them from beside it")
    return read_document(parse(stream, source, on_module))
