"""psbase input on the command line, on both backends: several files, each
with its own input description, merged into one run (--with INPUT.xml FILE),
the old forms beside it, and a file given twice in one input refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from psuite.psbase.store import Store
from tests.conftest import one_line_error
from tests.psbase.test_cli import count_doc, ok, psbase  # noqa: F401 (count_doc: a fixture)

EXPERIMENT = """<experiment><name>app</name>
<parameter occurrence="once"><name>nodes</name><datatype>integer</datatype></parameter>
<parameter occurrence="once"><name>compiler</name><datatype>string</datatype></parameter>
<parameter occurrence="multiple"><name>size</name><datatype>integer</datatype></parameter>
<result occurrence="once"><name>time</name><datatype>float</datatype></result>
<result occurrence="multiple"><name>bw</name><datatype>float</datatype></result>
</experiment>
"""
HEAD_DESC = """<input>
<named_location><name>nodes</name><match>nodes:</match></named_location>
<named_location><name>compiler</name><match>compiler:</match></named_location>
<named_location><name>time</name><match>time:</match></named_location>
</input>
"""
TABLE_DESC = """<input>
<tabular_location><match>size bw</match><column pos="1">size</column><column pos="2">bw</column>
</tabular_location>
</input>
"""
HEAD = "nodes: 4\ncompiler: gcc\ntime: 12.5\n"
TABLE = "results\nsize bw\n1024 10.5\n2048 20.25\n"
# what the two files say, read here from their text
VALUES = {"nodes": 4, "compiler": "gcc", "time": 12.5}
ROWS = [{"size": 1024, "bw": 10.5}, {"size": 2048, "bw": 20.25}]


@pytest.fixture
def app(db_url, tmp_path) -> tuple[str, Path]:
    """The archive's URL with experiment app, and a directory with the files."""
    for name, text in (("app.xml", EXPERIMENT), ("head.xml", HEAD_DESC), ("table.xml", TABLE_DESC),
                       ("run.log", HEAD), ("run.out", TABLE)):  # fmt: skip
        (tmp_path / name).write_text(text)
    assert (dict(line.split(": ") for line in HEAD.splitlines()) ==
            {k: str(v) for k, v in VALUES.items()})  # fmt: skip
    ok(psbase("--db", db_url, "setup", "app.xml", cwd=tmp_path))
    return db_url, tmp_path


def filed(url: str) -> list:
    s = Store(url)
    try:
        return [s.run("app", r.index) for r in s.list_runs("app", deleted=True)]
    finally:
        s.close()


def test_files_with_their_own_descriptions_merge_into_one_run(app):
    url, d = app
    out = ok(psbase("--db", url, "input", "app", "--merge", "--with", "head.xml", "run.log",
                    "--with", "table.xml", "run.out", cwd=d))  # fmt: skip
    assert out == "psbase: 1 run filed in app (1)\n"
    (run,) = filed(url)
    assert (run.values, run.rows, run.sources) == (VALUES, ROWS, ["run.log", "run.out"])
    # the same two files are the same run, however given: refused unless forced
    msg = one_line_error(psbase("--db", url, "input", "app", "--merge", "--with", "table.xml", "run.out",
                                "--with", "head.xml", "run.log", cwd=d), "psbase")  # fmt: skip
    assert "already run 1 of app" in msg
    # --desc's FILEs and --with's together; --fixed overrides the files
    out = ok(psbase("--db", url, "input", "app", "--merge", "--desc", "head.xml", "run.log", "--with", "table.xml",
                    "run.out", "--fixed", "nodes=8", "--force", cwd=d))  # fmt: skip
    assert out == "psbase: 1 run filed in app (2)\n"
    run = filed(url)[1]
    assert (run.values, run.rows) == ({**VALUES, "nodes": 8}, ROWS)


def test_with_without_merge_files_each_file_as_a_run(app):
    url, d = app
    out = ok(psbase("--db", url, "input", "app", "--with", "head.xml", "run.log", "--with", "table.xml", "run.out",
                    "--missing", "empty", cwd=d))  # fmt: skip
    assert out == "psbase: 2 runs filed in app (1-2)\n"
    a, b = filed(url)
    assert (a.values, a.rows, a.sources) == (VALUES, [], ["run.log"])
    assert (b.values, b.rows, b.sources) == ({}, ROWS, ["run.out"])


def test_the_one_description_forms_still_work(app):
    url, d = app
    (d / "b.log").write_text(HEAD.replace("4", "2"))
    assert ok(psbase("--db", url, "input", "app", "--desc", "head.xml", "run.log", "b.log", cwd=d)) == \
        "psbase: 2 runs filed in app (1-2)\n"  # fmt: skip
    assert [r.values["nodes"] for r in filed(url)] == [4, 2]
    (d / "both.txt").write_text(HEAD + TABLE)
    (d / "both.xml").write_text(HEAD_DESC.replace("</input>", TABLE_DESC.removeprefix("<input>")))
    assert ok(psbase("--db", url, "input", "app", "--merge", "--desc", "both.xml", "both.txt", cwd=d)) == \
        "psbase: 1 run filed in app (3)\n"  # fmt: skip
    assert filed(url)[2].rows == ROWS


UNCLEAR = [
    (["--with", "run.log", "head.xml"],
     "--with run.log head.xml: head.xml is the input description; write it first: --with head.xml run.log"),
    (["--with", "head.xml"], "argument --with: expected 2 arguments"),
    (["run.out", "--with", "head.xml", "run.log"],
     "run.out has no input description while others are read --with one: give it as --with INPUT.xml run.out"),
    (["--desc", "table.xml", "--with", "head.xml", "run.log"],
     "--desc table.xml reads the FILEs given without --with, and there are none"),
    ([], "name the files to file: psbase input EXPERIMENT FILE..., or --with INPUT.xml FILE"),
    (["--with", "nope.xml", "run.log"], "input description nope.xml: no such file"),
    (["--with", "head.xml", "nope.log"], "nope.log: no such file"),
    (["--merge", "--desc", "head.xml", "run.log", "--bogus"], "unrecognized arguments: --bogus"),
    (["--fixed", "nodes=2", "run.log"], "--fixed and --missing go with --desc or --with"),
]  # fmt: skip


def test_unclear_input_forms_are_one_line(app):
    url, d = app
    for args, message in UNCLEAR:
        p = psbase("--db", url, "input", "app", *args, cwd=d)
        msg = one_line_error(p, "psbase input" if p.stderr.startswith("psbase input:") else "psbase")
        assert message in msg, args
    assert filed(url) == []


def test_help_explains_with(tmp_path):
    out = " ".join(ok(psbase("input", "--help", cwd=tmp_path)).split())
    assert "--with INPUT.xml FILE" in out and "--merge --with head.xml run.log --with table.xml run.sum" in out
    assert "--merge --with head.xml a.log --with table.xml a.sum" in ok(psbase("--help", cwd=tmp_path))


# -- a file given twice in one input ------------------------------------------------------------


TWICE = [
    (["--desc", "head.xml", "run.log", "b.log", "run.log"],
     "run.log is given twice in this input; give it once (nothing was filed)"),
    (["--desc", "head.xml", "run.log", "copy.log"],
     "copy.log has the same content as run.log, given before it in this input; give one of them"),
    (["--merge", "--desc", "head.xml", "run.log", "./run.log"], "./run.log is given twice in this input"),
    (["--merge", "--with", "head.xml", "run.log", "--with", "table.xml", "run.out", "--with", "head.xml",
      "copy.log"], "copy.log has the same content as run.log"),
    (["--force", "--desc", "head.xml", "run.log", "run.log"], "run.log is given twice in this input"),
]  # fmt: skip


def test_a_file_given_twice_is_refused(app):
    url, d = app
    (d / "b.log").write_text(HEAD.replace("4", "2"))
    shutil.copy(d / "run.log", d / "copy.log")
    for args, message in TWICE:
        msg = one_line_error(psbase("--db", url, "input", "app", *args, cwd=d), "psbase")
        assert message in msg and "already run" not in msg, args
    assert filed(url) == []
    # each once: filed
    assert ok(psbase("--db", url, "input", "app", "--desc", "head.xml", "run.log", "b.log", cwd=d)) == \
        "psbase: 2 runs filed in app (1-2)\n"  # fmt: skip


def test_runs_repeated_in_one_file_are_named(app):
    url, d = app
    (d / "sep.xml").write_text(HEAD_DESC.replace("<input>", "<input><set_separation><match>nodes:</match>"
                                                 "</set_separation>"))  # fmt: skip
    (d / "runs.log").write_text(HEAD + HEAD.replace("4", "2") + HEAD)
    msg = one_line_error(psbase("--db", url, "input", "app", "--desc", "sep.xml", "runs.log", cwd=d), "psbase")
    assert "runs.log: the runs at lines 1 and 7 are the same lines" in msg
    assert filed(url) == []


def test_a_psuite_document_given_twice_is_refused(db_url, tmp_path, count_doc):  # noqa: F811
    ok(psbase("--db", db_url, "setup", "--psuite", "app", cwd=tmp_path))
    shutil.copy(count_doc, tmp_path / "again.xml")
    for args in ([str(count_doc), str(count_doc)], ["--merge", str(count_doc), "again.xml"]):
        msg = one_line_error(psbase("--db", db_url, "input", "app", *args, cwd=tmp_path), "psbase")
        assert "given twice" in msg or "has the same content as" in msg
    s = Store(db_url)
    assert s.list_runs("app", deleted=True) == []
    s.close()
