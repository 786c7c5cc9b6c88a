"""Reader of psrun -R's <resourcereport>."""

from __future__ import annotations

from psuite.formats import resourcereport
from psuite.formats.readers.document import Document
from psuite.model.report import ResourceReport

ROOT = "resourcereport"


def accepts(root) -> bool:
    return root.tag == ROOT


def read(root, doc: Document) -> ResourceReport:
    return resourcereport.from_element(root, doc.source)
