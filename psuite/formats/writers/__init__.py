"""Output writers, one module per format, each with render(reports) -> str."""

from __future__ import annotations

import importlib

FORMATS = {"text": "text", "json": "json_format", "csv": "csv_format", "xml": "xml_format"}


def writer(fmt: str):
    """The writer module of -f FMT; the HTML page (-f html) is psprocess's
    own (psuite.psprocess.html.render), above the analysis it draws."""
    return importlib.import_module(f"psuite.formats.writers.{FORMATS[fmt]}")
