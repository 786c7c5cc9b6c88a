"""Audit: psprocess -c counts each document once: a file named twice (a
directory and a glob, a link) or a copy of it is refused with one line,
exit 2, before its counts are summed twice."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import one_line_error, run_tool


def _runs(targets, workdir: Path) -> list[Path]:
    """Two counting reports in workdir/mpi."""
    (workdir / "mpi").mkdir()
    for pages in ("50", "80"):
        p = run_tool("psrun", "-q", "-e", "page-faults", "-d", "mpi", targets["work"], pages, "1", "0")
        assert p.returncode == 0, p.stderr
    docs = sorted((workdir / "mpi").glob("*.xml"))
    assert len(docs) == 2
    return docs


def _faults(doc: Path) -> int:
    return sum(int(e.text) for e in ET.parse(doc).getroot().iter("hwpcevent") if e.get("name") == "page-faults")


def test_directory_and_glob_naming_the_same_files_are_refused(targets, workdir):
    docs = _runs(targets, workdir)
    p = run_tool("psprocess", "-c", "mpi/", "mpi/*.xml")
    line = one_line_error(p, "psprocess")
    assert "given twice" in line and docs[0].name in line, line
    # given once, they are combined once: the sum is the two documents' counts
    p = run_tool("psprocess", "-c", "-f", "json", "mpi/")
    assert p.returncode == 0, p.stderr
    stats = {s["name"]: s for s in json.loads(p.stdout)["statistics"]}
    assert stats["page-faults"]["count"] == 2
    assert stats["page-faults"]["sum"] == sum(_faults(d) for d in docs)


def test_a_link_and_a_copy_are_refused(targets, workdir):
    docs = _runs(targets, workdir)
    os.symlink(docs[0], workdir / "link.xml")
    line = one_line_error(run_tool("psprocess", "-c", str(docs[0]), "link.xml"), "psprocess")
    assert "link.xml is given twice" in line, line
    shutil.copy(docs[1], workdir / "copy.xml")
    line = one_line_error(run_tool("psprocess", "-c", "mpi", "copy.xml"), "psprocess")
    assert f"copy.xml has the same content as mpi/{docs[1].name}" in line, line
