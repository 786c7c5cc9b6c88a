"""Readers and writers of the PerfSuite XML formats, one module per format."""

import os


def callpaths_schema() -> str:
    """Path of the XML Schema of psuite's call-path document (docs/formats/callpaths.md)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "schemas", "callpaths-1.0.xsd")
