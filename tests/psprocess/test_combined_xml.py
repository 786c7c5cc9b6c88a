"""psprocess -x keeps the call paths: PerfSuite's documents have no place
for them (the DTDs allow none), so they are written beside the document,
NAME.callpaths.xml, as psrun writes a process's.  One profile's is a
<callpaths> document; a combined document's (-c -x) a <multicallpaths>
holding a <callpaths> per member, each naming its member NAME.xml#N.
Reading the document (psuite.read, psprocess) reads them with it."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from psuite.formats import callpaths_schema
from tests.conftest import one_line_error, run_tool, validate


def schema(name: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(os.path.join(os.path.dirname(callpaths_schema()), name)))


@pytest.fixture(scope="module")
def docs(programs, tmp_path_factory) -> list[str]:
    """Two psrun -p --callpath runs of a threaded program: two processes'
    thread reports, process totals and call-path companions."""
    d = tmp_path_factory.mktemp("combined_xml")
    for _ in range(2):
        p = run_tool("psrun", "-q", "-p", "--callpath", "-d", str(d), "--profile", "ITIMER_PROF", "--period",
                     "1000", programs["prof_threads"])
        assert p.returncode == 0, p.stderr
    out = sorted(str(p) for p in d.glob("*.xml") if not p.name.endswith(".callpaths.xml"))
    assert len(list(d.glob("*.callpaths.xml"))) == 2
    return out


def ok(*args: str) -> str:
    p = run_tool("psprocess", *args, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def paths(records: list[dict]) -> Counter:
    """Exclusive samples per (pid, thread, call path)."""
    out: Counter = Counter()
    for rec in records:
        out[(rec["pid"], rec["thread"], tuple(rec["path"]))] += rec["exclusive"]
    return +out


def test_combined_companion_is_valid_and_names_its_members(docs, tmp_path):
    import psuite

    f = tmp_path / "c.xml"
    ok("-c", "-x", "-o", str(f), *docs)
    root = validate(f, "multihwpcprofilereport-0.3.dtd")
    companion = etree.parse(str(tmp_path / "c.callpaths.xml"))
    assert schema("multicallpaths-1.1.xsd").validate(companion), schema("multicallpaths-1.1.xsd").error_log
    members = list(root)
    named = [cp.find("profile") for cp in companion.getroot()]
    assert len(named) == 2  # one per process: its threads' trees go with its first thread report
    for profile in named:
        name, _, n = profile.get("file").partition("#")
        assert name == "c.xml" and profile.get("pid") == members[int(n) - 1].findtext("executioninfo/pid")
    # read back: the call paths of the documents it was made from
    own = Counter()
    for doc in docs:
        if "process total" in (etree.parse(doc).getroot().findtext("annotation") or ""):
            own.update(paths(psuite.read_document(doc).calltree_records()))
    assert paths(psuite.read_document(str(f)).calltree_records()) == own
    # combined again (the document counts as its members, with their call paths)
    again = json.loads(ok("-c", "-f", "json", str(f)))
    first = json.loads(ok("-c", "-f", "json", *docs))
    assert again["callpath_statistics"] == first["callpath_statistics"]


def test_one_profile_gets_its_companion_too(docs, tmp_path):
    import psuite

    total = next(d for d in docs if "process total" in (etree.parse(d).getroot().findtext("annotation") or ""))
    f = tmp_path / "one.xml"
    ok("-x", "-o", str(f), total)
    validate(f, "hwpcprofilereport-0.3.dtd")
    companion = etree.parse(str(tmp_path / "one.callpaths.xml"))
    assert schema("callpaths-1.1.xsd").validate(companion)
    assert companion.getroot().find("profile").get("file") == "one.xml"
    assert paths(psuite.read_document(str(f)).calltree_records()) == \
        paths(psuite.read_document(total).calltree_records())


def test_to_standard_output_the_call_paths_are_said_to_be_left_out(docs):
    p = run_tool("psprocess", "-c", "-x", *docs)
    assert p.returncode == 0 and p.stdout.startswith("<?xml"), p.stderr
    [line] = p.stderr.splitlines()
    assert "call paths are left out" in line and "-o NAME.xml" in line


def test_a_companion_naming_no_member_is_left_out_with_a_warning(docs, tmp_path):
    f = tmp_path / "c.xml"
    ok("-c", "-x", "-o", str(f), *docs)
    companion = tmp_path / "c.callpaths.xml"
    companion.write_text(companion.read_text().replace('file="c.xml#', 'file="c.xml#9'))
    p = run_tool("psprocess", "-f", "json", str(f))
    assert p.returncode == 0, p.stderr
    assert all(not r["calltree"] for r in json.loads(p.stdout)["reports"])
    lines = p.stderr.splitlines()
    assert len(lines) == 2 and all("names no member of c.xml" in line and "left out" in line for line in lines)


def test_the_combined_companion_alone_is_refused_naming_the_document(docs, tmp_path):
    f = tmp_path / "c.xml"
    ok("-c", "-x", "-o", str(f), *docs)
    line = one_line_error(run_tool("psprocess", str(tmp_path / "c.callpaths.xml")), "psprocess")
    assert "combined document" in line and "give that document" in line


def test_an_existing_companion_is_not_replaced_without_force(docs, tmp_path: Path):
    stale = tmp_path / "c.callpaths.xml"
    stale.write_text("keep")
    p = run_tool("psprocess", "-c", "-x", "-o", str(tmp_path / "c.xml"), *docs)
    line = one_line_error(p, "psprocess")
    assert "c.callpaths.xml" in line and not (tmp_path / "c.xml").exists() and stale.read_text() == "keep"
    ok("-c", "-x", "--force", "-o", str(tmp_path / "c.xml"), *docs)
    assert stale.read_text().startswith("<?xml")


def test_a_document_without_call_paths_takes_the_old_companion_with_it(docs, programs, tmp_path: Path):
    """-x --force over a document whose call paths lie beside it, with one
    that has none (a counting report): the old call paths go too, or they
    would be read as the new document's."""
    import psuite

    ok("-c", "-x", "-o", str(tmp_path / "c.xml"), *docs)
    assert (tmp_path / "c.callpaths.xml").exists()
    counting = tmp_path / "counting"
    counting.mkdir()
    p = run_tool("psrun", "-q", "-d", str(counting), programs["prof_threads"])
    assert p.returncode == 0, p.stderr
    [doc] = counting.glob("*.xml")
    ok("-x", "--force", "-o", str(tmp_path / "c.xml"), str(doc))
    assert not (tmp_path / "c.callpaths.xml").exists()
    report = psuite.read_document(str(tmp_path / "c.xml"))
    assert report.events and getattr(report, "callpaths", None) is None
