"""Input readers, one module per document type, chosen by root element and
mode (as other PerfSuite readers identify documents).  Each has
accepts(root) and read(root, document); document.py does the parsing."""

from __future__ import annotations

from typing import IO

from psuite.errors import InputError
from psuite.psprocess.readers import hwpcprofile, hwpcprofilereport, hwpcreport, multi, resourcereport
from psuite.psprocess.readers.document import Document, parse

READERS = (hwpcreport, hwpcprofile, hwpcprofilereport, multi, resourcereport)


def read_document(doc: Document):
    root = doc.root
    for reader in READERS:
        if reader.accepts(root):
            return reader.read(root, doc)
    mode = root.get("mode")
    kind = f"<{root.tag}{f' mode={mode!r}' if mode else ''}>"
    raise InputError(f"{doc.source}: {kind} documents are not supported by this psprocess (it reads "
                     "<hwpcreport> in count and profile mode, <hwpcprofilereport>, <multihwpcreport>, "
                     "<multihwpcprofilereport> and <resourcereport>)")


def read_stream(stream: IO[bytes], source: str):
    """The report model of one document, parsed from a binary stream."""
    return read_document(parse(stream, source))
