"""Output writers, one module per format, each with render(reports) -> str."""

from __future__ import annotations

import importlib

FORMATS = {"text": "text", "json": "json_format", "csv": "csv_format", "xml": "xml_format",
           "html": "html_format"}


def writer(fmt: str):
    return importlib.import_module(f"psuite.psprocess.writers.{FORMATS[fmt]}")
