"""Readers and writers of the PerfSuite XML formats, one module per format."""

import os

CALLPATHS_VERSION = "1.1"  # what psrun writes; 1.0 numbered threads from 0 (docs/formats/numbering.md)


def callpaths_schema(version: str = CALLPATHS_VERSION) -> str:
    """Path of the XML Schema of psuite's call-path document (docs/formats/callpaths.md),
    of the version psrun writes or of an older one ("1.0")."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas", f"callpaths-{version}.xsd")
