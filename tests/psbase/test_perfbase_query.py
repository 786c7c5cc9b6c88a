"""perfbase's query language through the real `psbase query --file`, with
perfbase's own test directories: their experiment definitions and query
files as written (read from ../shared/perfbase/test at test time), the
input data filed with a psbase-dialect input description written here,
the queries run in the order of each directory's runtest, and each
output compared with that directory's verify/test_N.vfy: psbase writes
perfbase's raw_text (data title, header, one block per input).

Rows are compared as a multiset, as perfbase's own suite does where the
order of rows depends on the database (test/order/runtest: "a
second-level comparison with sorted files"); the order sort gives is
tested on its own."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from psuite.psbase import queryfile
from tests.conftest import one_line_error
from tests.psbase.test_cli import ok, psbase

PERFBASE = Path(__file__).resolve().parents[3] / "shared" / "perfbase" / "test"

# psbase-dialect input descriptions of the directories' data (perfbase's use <tabular_value><name/><pos/>)
DESCS = {
    "oponesrc": '<tabular_location><match># p</match><column pos="1">p</column><column pos="2">r</column>'
    "</tabular_location>",
    "limit": '<tabular_location><match># p</match><column pos="1">p</column><column pos="2">r1</column>'
    '<column pos="3">r2</column></tabular_location>',
    "normalize": '<tabular_location><match># arrival</match><column pos="1">t</column><column pos="2">s</column>'
    "</tabular_location>",
    # MPI_version occurs multiple times (perfbase's default): given with --fixed per file below
    "fixed": r'<tabular_location><match># msg_size</match><row>^\d</row><column pos="1">S_msg</column>'
    '<column pos="2">T_pp</column></tabular_location>',

    "slice": '<tabular_location><match># msg_size</match><column pos="1">S_msg</column><column pos="2">T_pp</column>'
    "</tabular_location>",
    "runindex": '<tabular_location><match># msg_size</match><column pos="1">S_msg</column><column pos="2">T_pp</column>'
    "</tabular_location><named_location><name>v_prot</name><match>Version:</match></named_location>"
    "<named_location><name>algo</name><match>Algorithm:</match></named_location>",
    "scope": '<tabular_location><match>#p</match><column pos="1">p</column><column pos="2">r</column>'
    "</tabular_location>",
    "filter": "<named_location><name>MPI_version</name><match>version:</match></named_location>"
    "<named_location><name>I</name><match>connect:</match></named_location>"
    '<tabular_location><match># msg_size</match><column pos="1">S_msg</column><column pos="2">T_pp</column>'
    "</tabular_location>",
    "order": '<tabular_location><match># p</match><column pos="1">p</column><column pos="2">r</column>'
    "</tabular_location><named_location><name>T</name><match>T =</match></named_location>",
}


def _cell(text: str) -> object:
    text = text.strip().strip("'")
    try:
        return float(text)
    except ValueError:
        return text


def vfy_blocks(path: Path | str) -> tuple[list[str], list[list[tuple]]]:
    """perfbase's raw_text output (a .vfy file, or psbase's output as text):
    its notes (the data title's "NAME = VALUE") and its tables, each a list of rows."""
    notes, blocks = [], []
    text = path.read_text() if isinstance(path, Path) else path
    for line in text.splitlines():
        if line.startswith("# ") and " = " in line:
            name, _, value = line[2:].partition(" = ")
            notes.append(f"{name.strip()} = {value.strip().strip(chr(39))}")
        elif line.startswith("#"):
            blocks.append([])
        elif line.strip():
            blocks[-1].append(tuple(_cell(c) for c in line.split("\t") if c.strip()))
    return notes, blocks


def text_table(text: str) -> tuple[list[str], list[str], list[tuple]]:
    """psbase's text table: notes, column names, rows (empty cells None)."""
    lines = text.splitlines()
    notes = [n[2:] for n in lines if n.startswith("# ")]
    body = [n for n in lines if not n.startswith("# ")]
    header = body[0]
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", header)]
    names = [header[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    rows = []
    for line in body[1:]:
        cells = [line[a:b].strip() if b is None or a < len(line) else "" for a, b in
                 zip(starts, [*starts[1:], None], strict=True)]
        rows.append(tuple(_cell(c) if c else None for c in cells))
    return notes, names, rows


def _same(a: list[tuple], b: list[tuple]) -> bool:
    def key(row):
        return tuple((0, round(x, 6), "") if isinstance(x, float) else (1, 0.0, str(x)) for x in row)

    a, b = sorted(a, key=key), sorted(b, key=key)
    return len(a) == len(b) and all(
        len(r) == len(s) and all(
            math.isclose(x, y, rel_tol=1e-10, abs_tol=1e-12) if isinstance(x, float) and isinstance(y, float)
            else x == y for x, y in zip(r, s, strict=True))
        for r, s in zip(a, b, strict=True))


def matches(out: str, vfy: Path, notes_too: bool = True) -> bool:
    """Whether psbase's output is the .vfy's: its headers and data titles line for line, its
    blocks' rows as multisets (perfbase's order of rows with equal keys is its database's)."""
    want_notes, blocks = vfy_blocks(vfy)
    notes, got = vfy_blocks(out)
    heads = [line for line in out.splitlines() if line.startswith("#")]
    if heads != [line for line in vfy.read_text().splitlines() if line.startswith("#")]:
        return False
    if notes_too:
        assert want_notes == notes, (want_notes, notes)
    return len(got) == len(blocks) and all(_same(a, b) for a, b in zip(got, blocks, strict=True))


@pytest.fixture
def archive(db_url, tmp_path):
    """setup and input of a perfbase test directory: its definition as written, its data with DESCS."""

    def make(name: str, inputs: list[str], fixed: list[str] | None = None) -> tuple[str, Path]:
        """fixed: a --fixed NAME=VALUE per input file, each then filed on its own."""
        here = PERFBASE / name
        exp = next(here.glob("*_exp.xml"))
        ok(psbase("--db", db_url, "setup", str(exp), cwd=tmp_path))
        (tmp_path / "inp.xml").write_text(f"<input><experiment>{name}_TEST</experiment>{DESCS[name]}</input>")
        files = [str(here / f) for f in inputs]
        batches = [["--fixed", x, f] for f, x in zip(files, fixed, strict=True)] if fixed else [files]
        for batch in batches:
            ok(psbase("--db", db_url, "input", f"{name}_TEST", "--desc", "inp.xml", *batch, cwd=tmp_path))
        return db_url, tmp_path

    return make


def query(url: str, cwd: Path, qry: Path) -> str:
    """psbase query --file: standard output, or the file an output writes (perfbase's <filename>)."""
    p = psbase("--db", url, "query", "--file", str(qry), "--force", cwd=cwd)
    out = ok(p)
    if out.startswith("psbase: wrote "):
        written = cwd / out.removeprefix("psbase: wrote ").strip()
        out = written.read_text()
        written.unlink()
    return out


def wrong(url: str, cwd: Path, here: Path, sequence: list[tuple[str, int]]) -> list[str]:
    """The queries of a runtest sequence (query file, .vfy number) whose output differs."""
    bad = []
    for qry, n in sequence:
        out = query(url, cwd, here / qry)
        if not matches(out, here / "verify" / f"test_{n}.vfy"):
            bad.append(f"{qry} (test_{n}.vfy):\n{out}")
    return bad


def test_oponesrc(archive):
    # oponesrc/runtest: both inputs, then each query N against verify/test_N.vfy;
    # query 11 writes its <term> as XML elements, which psbase does not read yet
    url, cwd = archive("oponesrc", ["input_1.dat", "input_2.dat"])
    runs = [(f"oponesrc_qry_{n:02d}.xml", n) for n in range(1, 15) if n != 11]
    assert wrong(url, cwd, PERFBASE / "oponesrc", runs) == []


def test_limit(archive):
    # limit/runtest: expected exit status 0 0 1 1 0 0 (perfbase's 1 for a bad query file is psbase's 2)
    url, cwd = archive("limit", ["input_1.dat", "input_2.dat"])
    here = PERFBASE / "limit"
    assert wrong(url, cwd, here, [("limit_qry_1.xml", 1), ("limit_qry_2.xml", 2), ("limit_qry_5.xml", 5)]) == []
    for n, says in ((3, "value= is missing"), (4, "'r3'")):
        p = psbase("--db", url, "query", "--file", str(here / f"limit_qry_{n}.xml"), cwd=cwd)
        assert says in one_line_error(p, "psbase")


def test_normalize(archive):
    url, cwd = archive("normalize", ["input/data_1.dat"])
    assert wrong(url, cwd, PERFBASE / "normalize", [("normalize_qry_1.xml", 1), ("normalize_qry_2.xml", 2)]) == []


def test_fixed_values_of_the_query(archive):
    # fixed/runtest's tests 1 and 3: the <fixed> values as the files give them
    url, cwd = archive("fixed", ["latency.dat", "latency2.dat"], ["MPI_version=1.24", "MPI_version=1.23"])
    assert wrong(url, cwd, PERFBASE / "fixed", [("fixed_plain_qry.xml", 1), ("fixed_scale_qry.xml", 3)]) == []


@pytest.mark.parametrize("qry, overrides, n", [
    ("fixed_plain_qry.xml", {"f.version": "1.23"}, 2),
    ("fixed_scale_qry.xml", {"f.scale": "4"}, 4),
    ("fixed_scale_qry.xml", {"f.scale": "4", "f.version": "1.23"}, 5),
])
def test_fixed_overrides(qry, overrides, n):
    # fixed/runtest's -f NAME=VALUE: the query file as the overrides make it (the command-line
    # option is cli's; it hands queryfile.parse_fixed's result to queryfile.parse)
    here = PERFBASE / "fixed"
    items = [f"{k}={v}" for k, v in overrides.items()]
    q = queryfile.parse(str(here / qry), fixed=queryfile.parse_fixed(items))
    (src,) = [e for e in q.elements.values() if isinstance(e, queryfile.Source)]
    version = next(p for p in src.params if p.name == "MPI_version")
    assert version.filters[0].single_value() == overrides.get("f.version", "1.24")
    scale = [e for e in q.elements.values() if isinstance(e, queryfile.Operator) and e.type == "scale"]
    assert [s.value for s in scale] == ([float(overrides.get("f.scale", 2))] if "scale" in qry else [])


def test_fixed_override_bad_item():
    with pytest.raises(Exception, match="write NAME=VALUE"):
        queryfile.parse_fixed(["f.scale"])


def test_slice(archive):
    # slice/runtest: three runs (filed in this order; perfbase's slice follows the filing order unless
    # the source says chronology="performed", queries 2 and 5), expected exit status 0 0 0 0 0 0 1 1
    url, cwd = archive("slice", ["input_1.dat", "input_2.dat", "input_3.dat"])
    here = PERFBASE / "slice"
    assert wrong(url, cwd, here, [(f"slice_qry_{n}.xml", n) for n in (1, 3, 4, 6)]) == []
    for n, says in ((7, "the slice [3:2] of its 3 runs is empty"), (8, "value='1:2]' is not a slice")):
        p = psbase("--db", url, "query", "--file", str(here / f"slice_qry_{n}.xml"), cwd=cwd)
        assert says in one_line_error(p, "psbase")


def test_runindex_and_param(archive):
    # runindex/runtest: four runs, expected exit status 0 0 1 0 0 1 1 0 0
    url, cwd = archive("runindex", [f"input_{j}.dat" for j in (1, 2, 3, 4)])
    here = PERFBASE / "runindex"
    assert wrong(url, cwd, here, [(f"runindex_qry_{n}.xml", n) for n in (1, 2, 4, 5, 8, 9)]) == []
    for n, says in ((3, "runindex takes exactly one <input> (it has 2)"), (6, "run index -1"),
                    (7, "has no parameter 'vprot'")):
        p = psbase("--db", url, "query", "--file", str(here / f"runindex_qry_{n}.xml"), cwd=cwd)
        assert says in one_line_error(p, "psbase")


def test_order_one_source(archive):
    # order/runtest: queries 1-4 after the first input (tests 1-4) and after the second (5-8)
    url, cwd = archive("order", ["input_1.dat"])
    here = PERFBASE / "order"
    assert wrong(url, cwd, here, [(f"order_qry_{n}.xml", n) for n in range(1, 5)]) == []
    ok(psbase("--db", url, "input", "order_TEST", "--desc", "inp.xml", str(here / "input_2.dat"), cwd=cwd))
    assert wrong(url, cwd, here, [(f"order_qry_{n}.xml", n + 4) for n in range(1, 5)]) == []


def test_sort_orders(archive):
    # sort by value= (a result or a parameter, several with commas), descending or ascending;
    # ties keep the order of the input (perfbase's follows its database's)
    url, cwd = archive("oponesrc", ["input_1.dat", "input_2.dat"])
    here = PERFBASE / "oponesrc"
    data = [tuple(float(x) for x in line.split()) for f in ("input_1.dat", "input_2.dat")
            for line in (here / f).read_text().splitlines() if line.strip() and not line.startswith("#")]
    for how, expect in (('value="r" variant="descending"', sorted(data, key=lambda r: -r[1])),
                        ('value="p, r"', sorted(data)),
                        ("", sorted(data, key=lambda r: r[0])),
                        ('variant="descending"', sorted(data, key=lambda r: -r[0]))):
        (cwd / "q.xml").write_text(
            "<query><experiment>oponesrc_TEST</experiment><source id='s'><result>r</result>"
            "<parameter><value>p</value></parameter></source>"
            f"<operator id='o' type='sort' {how}><input>s</input></operator><output><input>o</input></output></query>")
        _, _, rows = text_table(query(url, cwd, cwd / "q.xml"))
        assert [(p, r) for p, r in rows] == expect, how
    (cwd / "q.xml").write_text(
        "<query><experiment>oponesrc_TEST</experiment><source id='s'><result>r</result></source>"
        "<operator id='o' type='sort' value='nosuch'><input>s</input></operator><output><input>o</input></output>"
        "</query>")
    p = psbase("--db", url, "query", "--file", "q.xml", cwd=cwd)
    assert "value= names 'nosuch'" in one_line_error(p, "psbase")


def test_empty_result_is_an_empty_table(archive):
    # perfbase writes an empty output and exits 0 where no run matches; a chart of nothing is refused
    url, cwd = archive("oponesrc", ["input_1.dat"])
    src = ("<query><experiment>oponesrc_TEST</experiment><source id='s'><result>r</result><parameter>"
           "<value>p</value><filter><greater>100</greater></filter></parameter></source>")
    (cwd / "q.xml").write_text(src + "<output><input>s</input></output></query>")
    notes, names, rows = text_table(query(url, cwd, cwd / "q.xml"))
    assert names == ["p", "r"] and rows == []
    (cwd / "q.xml").write_text(src + "<output format='png'><input>s</input><filename>x.png</filename></output></query>")
    p = psbase("--db", url, "query", "--file", "q.xml", cwd=cwd)
    assert "has no rows" in one_line_error(p, "psbase") and not (cwd / "x.png").exists()


def test_scope_run(archive):
    # scope/runtest: both inputs, queries 1-4; min or avg per run (scope="run") or per parameter
    # value, then the max of those.  perfbase prints beside a min or max of a vector the parameters
    # of the row its value came from (None for an avg): psbase's output is perfbase's byte for byte
    url, cwd = archive("scope", ["input_1.dat", "input_2.dat"])
    here = PERFBASE / "scope"
    for n in (1, 2, 3, 4):
        assert query(url, cwd, here / f"scope_qry_{n}.xml") == (here / "verify" / f"test_{n}.vfy").read_text(), n


def test_filters_boolean_or_and_show(archive):
    # filter/runtest: the inputs, queries 1-4: <source boolean="or">, <parameter boolean="or">,
    # <filter boolean="or">, show=; a parameter filtered to a list or range is no column, its
    # filters perfbase's data title ("# MPI_version > '1.2' OR MPI_version = '1.0'  I = 'SCI'  ")
    here = PERFBASE / "filter"
    url, cwd = archive("filter", sorted(str(f.relative_to(here)) for f in (here / "input").glob("*.dat")))
    for n in (1, 2, 3, 4):
        out = query(url, cwd, here / f"filter_qry_{n}.xml")
        assert matches(out, here / "verify" / f"test_{n}.vfy"), (n, out)
        assert "# S_msg[byte]\tT_pp[us]\t\n" in out, n
