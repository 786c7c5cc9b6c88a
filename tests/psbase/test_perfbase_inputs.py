"""Constructs of perfbase's input descriptions, with perfbase's own files as
its test suite writes them (read at test time from ../shared/perfbase/test),
filed through the real psbase command; what is stored is checked against
perfbase's own query output in the directory's verify/test_N.vfy."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_perfbase_formats import stored, suite


def vfy_first_value(path: Path) -> str:
    """The first value of a one-run query output of perfbase: the text after the '# NAME[]' header up to
    the column separator (a tab ending a line), without the blank Python 2's print puts before the tab (none
    after a value ending with a line break: the marked text keeps its own, as perfbase files it)."""
    body = path.read_text().split("\n", 1)[1]
    value = body.split("\t\n", 1)[0]
    return value[:-1] if value.endswith(" ") else value


def test_match_markers(tmp_path):
    """marker/: <match marker="begin"> ... <match marker="end">: the lines between the markers (skip="n",
    several begin and end markers, text on the markers' own lines); a run without an end marker, without
    a begin marker or with nothing between them stores the <default> (runtest imports with -u)."""
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("marker", "marker_exp.xml")), cwd=tmp_path))
    checked = [1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13]
    for n in checked:
        ok(psbase("--db", db, "input", "marker_TEST", "--missing", "default", "--desc",
                  str(suite("marker", f"marker_inp_{n}.xml")), str(suite("marker", "input", f"input_{n}.dat")),
                  cwd=tmp_path))
    runs = stored(db, "marker_TEST")
    # the query of run n is test n+13 (runtest: one input test per run, then one query each)
    expected = [vfy_first_value(suite("marker", "verify", f"test_{n + 13}.vfy")) for n in checked]
    assert [r.values["string"] for r in runs] == expected
    assert expected[0] == "line 1\nline 2\nline 3\nline 4\n" and expected[3:6] == ["null"] * 3


def test_marker_text_is_a_data_set_value(tmp_path):
    """marker/5: the marked text into a multiple-occurrence text result (store_set="yes"): one row, the
    lines kept as they are."""
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("marker", "marker_exp.xml")), cwd=tmp_path))
    ok(psbase("--db", db, "input", "marker_TEST", "--fixed", "int=0", "--fixed", "string=text", "--desc",
              str(suite("marker", "marker_inp_5.xml")), str(suite("marker", "input", "input_5.dat")), cwd=tmp_path))
    (run,) = stored(db, "marker_TEST")
    vfy = suite("marker", "verify", "test_18.vfy").read_text()
    text = vfy.split("# text[]\t\n", 1)[1].rsplit("\t\n", 1)[0]
    assert run.values["string"] == "text"
    assert [row["text"] for row in run.rows] == [text]  # a text value keeps its last line break
    assert text.count("\n") == 5 and text.startswith("data data")


@pytest.mark.parametrize("attrs, problem", [
    ('<match marker="begin">B</match>', "together"),
    ('<match marker="middle">B</match><match marker="end">E</match>', "marker='middle'"),
    ('<match skip="1">B</match>', "skip="),
])
def test_bad_markers_are_one_line(tmp_path, attrs, problem):
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("marker", "marker_exp.xml")), cwd=tmp_path))
    desc = tmp_path / "bad.xml"
    desc.write_text(f"<input><named_location><name>string</name>{attrs}</named_location></input>")
    r = psbase("--db", db, "input", "marker_TEST", "--desc", str(desc),
               str(suite("marker", "input", "input_1.dat")), cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and problem in r.stderr
    assert "Traceback" not in r.stderr and stored(db, "marker_TEST") == []
