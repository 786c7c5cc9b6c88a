"""Input readers, one module per document type, chosen by root element and
mode (as other PerfSuite readers identify documents)."""

from __future__ import annotations

from psuite.errors import InputError
from psuite.psprocess.readers import hwpcprofile, hwpcprofilereport, hwpcreport, resourcereport

READERS = (hwpcreport, hwpcprofile, hwpcprofilereport, resourcereport)


def read_document(root, source: str):
    for reader in READERS:
        if reader.accepts(root):
            return reader.read(root, source)
    mode = root.get("mode")
    kind = f"<{root.tag}{f' mode={mode!r}' if mode else ''}>"
    raise InputError(f"{source}: {kind} documents are not supported by this psprocess "
                     "(it reads <hwpcreport> in count and profile mode <hwpcprofilereport> and <resourcereport>)")
