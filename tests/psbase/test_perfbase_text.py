"""perfbase's raw_text output through the real `psbase` command, with
perfbase's own test directories (read from ../shared/perfbase/test at test
time): the experiment, input description and query files as written, run
with perfbase's command line, and each output compared byte for byte with
the directory's verify/test_N.vfy (perfbase's own output)."""

from __future__ import annotations

from pathlib import Path

import pytest

from psuite.psbase.output import perfbase_text
from psuite.psbase.output.perfbase_text import Block, py2str, unit_text
from tests.psbase.test_cli import ok, psbase

PERFBASE = Path(__file__).resolve().parents[3] / "shared" / "perfbase" / "test"


@pytest.fixture
def suite_dir(tmp_path):
    """A perfbase test directory's experiment set up and its data filed, by perfbase's commands
    (setup -d, input -d), in an archive of its own; the query files are read where they are."""

    def make(name: str, inputs: str, each: bool = False, dates: list[str] | None = None) -> tuple[Path, dict]:
        """inputs: a glob of the data files, filed with one command as the directory's runtest does, or
        each: one command per file (with dates: -p DATE each)."""
        here = PERFBASE / name
        env = {"PSBASE_DB": str(tmp_path / f"{name}.db")}
        ok(psbase("setup", "-d", str(here / f"{name}_exp.xml"), cwd=tmp_path, env=env))
        files = [str(f) for f in sorted(here.glob(inputs))]
        assert files
        for k, batch in enumerate([[f] for f in files] if each or dates else [files]):
            when = ["-p", dates[k]] if dates else []
            ok(psbase("input", *when, "-d", str(here / f"{name}_inp.xml"), *batch, cwd=tmp_path, env=env))
        return here, env

    return make


def query(here: Path, qry: str, cwd: Path, env: dict, written: str | None = None) -> str:
    """perfbase's `query -d QUERY`: its standard output, or the file its <filename> names."""
    out = ok(psbase("query", "-d", str(here / qry), cwd=cwd, env=env))
    if written is None:
        return out
    return (cwd / written).read_text()


def vfy(here: Path, n: int) -> str:
    return (here / "verify" / f"test_{n}.vfy").read_text()


def test_python2_values():
    # perfbase printed values with Python 2's str(): 12 significant digits, ".0" on whole floats
    assert [py2str(x) for x in (7.0, 1.1, 1e20, 50 / 3, 4, "A", None, 0.1 + 0.2)] == \
        ["7.0", "1.1", "1e+20", "16.6666666667", "4", "A", "None", "0.3"]


def test_print_softspace_after_a_text_ending_in_a_newline():
    # lines/verify/test_8.vfy: a string value of three lines is followed by the tab alone (no space: Python 2's
    # print sets no softspace after a newline), a number by " \t"
    want = (PERFBASE / "lines" / "verify" / "test_8.vfy").read_text()
    block = Block("src.string", [], [("string", "")], [], [("line 1\nline 2\nline 3\n",)])
    assert perfbase_text.text([block]) == want
    assert perfbase_text.text([Block("s", [("p", "")], [("r", "s")], ["T = 0"], [(1, 2.5)])]) == \
        "# T = 0  \n# p[]\tr[s]\t\n1 \t2.5 \t\n"


def test_units_as_perfbase_spells_them():
    assert [unit_text(u) for u in ("B", "us", "Mbit/s", "kB", "process", "MB/s", "")] == \
        ["byte", "us", "Mbit/s", "Kbyte", "process", "Mbyte/s", ""]


def test_header_rows_and_filename(suite_dir, tmp_path):
    # oponesrc: "# p[]\tmin(r)[]\t", rows "1.0 \t1.0 \t" (print's softspace), <filename>qry_result</filename>
    # written to qry_result.dat as perfbase does
    here, env = suite_dir("oponesrc", "input_?.dat")
    for n in (1, 2, 3, 5, 8, 9, 10, 12, 13, 14):
        got = query(here, f"oponesrc_qry_{n:02d}.xml", tmp_path, env, "qry_result.dat")
        assert got == vfy(here, n), n
        (tmp_path / "qry_result.dat").unlink()
    assert not (tmp_path / "qry_result").exists()


def test_operator_labels(suite_dir, tmp_path):
    # optwosrc: two sources into one operator: sum(r,r), r-r, r/r[/], [r % of r], ...
    here, env = suite_dir("optwosrc", "input_?.dat")
    heads = []
    for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12):
        got = query(here, f"optwosrc_qry_{n:02d}.xml", tmp_path, env, "qry_result.dat")
        assert sorted(got.splitlines()) == sorted(vfy(here, n).splitlines()), n
        heads.append(got.splitlines()[0])
        (tmp_path / "qry_result.dat").unlink()
    assert "# p[]\t[r % of r][%]\t" in heads and "# p[]\tr/r[/]\t" in heads


def test_data_title_of_filters_and_default_target(suite_dir, tmp_path):
    # filter: <output> without target= (perfbase's default: raw_text); the filters shown as the data
    # title, conditions in perfbase's order, values quoted for strings, with units
    here, env = suite_dir("filter", "input/*.dat", each=True)
    for n in (1, 2, 3, 4):
        assert query(here, f"filter_qry_{n}.xml", tmp_path, env) == vfy(here, n), n
    assert vfy(here, 2).startswith("# MPI_version > '1.2' OR MPI_version = '1.0'  I = 'SCI'  \n")


def test_combiner_labels_and_aliases(suite_dir, tmp_path):
    # combiner: alias= of <value> and <result> (Bytes, Time); a combiner's columns NAME|INPUT;
    # each input of an output its own block, the header repeated where it changes
    here, env = suite_dir("combiner", "input/*.dat")
    for n in (1, 2, 3, 4):
        assert query(here, f"combiner_qry_{n}.xml", tmp_path, env) == vfy(here, n), n
    assert vfy(here, 1).count("# Bytes[byte]") == 2


def test_limit_label_and_run_order(suite_dir, tmp_path):
    # limit: "r1,r1>4 " and the rows that pass in perfbase's order (run by run)
    here, env = suite_dir("limit", "input_?.dat")
    for n in (1, 2, 5):
        assert query(here, f"limit_qry_{n}.xml", tmp_path, env) == vfy(here, n), n


def test_chronology_performed(suite_dir, tmp_path):
    # slice: runs filed 03-, 01-, 02-Jan; chronology="performed" orders the runs by that date
    here, env = suite_dir("slice", "input_?.dat", dates=["03-Jan-2006", "01-Jan-2006", "02-Jan-2006"])
    for n in (1, 2, 3, 4, 5, 6):
        assert query(here, f"slice_qry_{n}.xml", tmp_path, env) == vfy(here, n), n


def test_min_max_keep_their_row(suite_dir, tmp_path):
    # multi_target: the min or max of a vector prints the parameters of its row
    here, env = suite_dir("multi_target", "input_*.dat")
    assert query(here, "multi_target_qry_1.xml", tmp_path, env) == vfy(here, 1)
    assert vfy(here, 1).startswith("# S_msg[byte]\tmax(max(T_pp))[s]\t\n8 \t25.8 \t\n")


def test_psbase_query_files_keep_psbase_text(suite_dir, tmp_path):
    # a query file without perfbase's DTD and without target= keeps psbase's aligned text table
    here, env = suite_dir("oponesrc", "input_1.dat")
    q = tmp_path / "q.xml"
    q.write_text("<query><experiment>oponesrc_TEST</experiment><source id='s'><result>r</result>"
                 "<parameter><value>p</value></parameter></source><output><input>s</input></output></query>")
    out = ok(psbase("query", "-d", str(q), cwd=tmp_path, env=env))
    assert out.splitlines()[0].split() == ["p", "r"] and "\t" not in out


def test_an_existing_output_file_is_replaced(suite_dir, tmp_path):
    # perfbase's query -d writes NAME.dat over an existing one (open(..., 'w+')), and says nothing
    here, env = suite_dir("oponesrc", "input_1.dat")
    (tmp_path / "qry_result.dat").write_text("mine\n")
    out = ok(psbase("query", "-d", str(here / "oponesrc_qry_01.xml"), cwd=tmp_path, env=env))
    assert out == "" and (tmp_path / "qry_result.dat").read_text().startswith("# p[]\tmin(r)[]\t\n")


def test_xml_target(suite_dir, tmp_path):
    # xml: target="xml", <data> with the filters (an open filter shows the one value found: "IC = IXS"),
    # a <dataset> per row, unit= where the value has one; run 1 of the directory's data is its first file
    here, env = suite_dir("xml", "input/data_1.dat")
    out = query(here, "xml_qry_1.xml", tmp_path, env)
    assert out == vfy(here, 1)
    assert "    <filter>IC = IXS</filter>\n" in out and '<value name="S_msg" unit="byte">0</value>' in out


def test_source_order_keep_ascending_descending(suite_dir, tmp_path):
    # order: <source order="descending"> prints each run's rows by the first parameter, largest first
    # (order_qry_10.xml: one source ascending, one descending, each its own block)
    here, env = suite_dir("order", "input_?.dat", each=True)
    assert query(here, "order_qry_10.xml", tmp_path, env) == vfy(here, 14)
    assert "4.4 \t4.0 \t\n3.3 \t5.0 \t\n" in vfy(here, 14)
