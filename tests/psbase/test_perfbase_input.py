"""perfbase's input descriptions and input command line, with perfbase's own files as its test suite
writes them (read at test time from ../shared/perfbase/test), through the real psbase command; what psbase
prints or files is compared with perfbase's recorded output (verify/test_N.vfy)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.psbase.test_cli import PSBASE, ok, psbase
from tests.psbase.test_perfbase_formats import stored, suite


def _copy(tmp_path, directory: str):
    """A copy of a suite directory: perfbase's command lines name its files relative to it."""
    work = tmp_path / directory
    shutil.copytree(suite(directory), work)
    return work


@pytest.mark.parametrize("desc, data, flags, vfy", [
    ("1", "bench_N_proc_1.dat", ("-u",), 1),  # <match>es: N_proc from "N_proc_1", fs not described: default
    ("1", "data_Nproc1.dat", ("-u",), 2),  # the second <match> found
    ("4", "bench_nproc1.dat", ("-u",), 4),  # <match> not in the name: its default, before the data sets
    ("2", "bench_nproc1.dat", ("-f", "fs=UFS"), 5),  # match="fuzzy": "nproc" found too
    ("3", "bench_UFSN_proc1.dat", (), 7),  # fs from its <valid> values
])
def test_filename_location_with_matches_or_valid_values(tmp_path, desc, data, flags, vfy):
    """filename/: <filename_location> without <regexp>: each <match> searched in the file's path, the first
    word after it the value; no <match>: the variable's <valid> values are looked for. input -t prints what
    perfbase's does, the file name's values first."""
    work = _copy(tmp_path, "filename")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "filename_exp.xml", cwd=work))
    out = ok(psbase("--db", db, "input", "-t", *flags, "-d", f"filename_inp_{desc}.xml", f"input/{data}", cwd=work))
    assert out == (work / "verify" / f"test_{vfy}.vfy").read_text()


def test_filename_location_files_the_value(tmp_path):
    """The value read from the file name is filed (not only printed by -t)."""
    work = _copy(tmp_path, "filename")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "filename_exp.xml", cwd=work))
    ok(psbase("--db", db, "input", "-d", "filename_inp_3.xml", "input/bench_UFSN_proc1.dat", cwd=work))
    (run,) = stored(db, "filename_TEST")
    assert (run.values["N_proc"], run.values["fs"]) == (1, "UFS")
    assert len(run.rows) == 8


def test_filename_location_without_match_or_valid_values_is_refused(tmp_path):
    """A <filename_location> with neither <match> nor valid values to look for: one line, exit 2."""
    work = _copy(tmp_path, "filename")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "filename_exp.xml", cwd=work))
    text = (work / "filename_inp_1.xml").read_text()
    (work / "bad.xml").write_text(text.replace("<match>N_proc</match>", "").replace("<match>Nproc</match>", ""))
    p = psbase("--db", db, "input", "-d", "bad.xml", "input/bench_N_proc_1.dat", cwd=work)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr
    assert "no <match>" in p.stderr and "'N_proc' has no <valid>" in p.stderr
    assert stored(db, "filename_TEST") == []


def test_quoted_synopsis_and_standard_input(tmp_path):
    """input/: `-s "data as separator"` split by the shell into three words is one synopsis (perfbase merges
    quoted words); `-` reads the data from standard input; two runs of one file with is_separator="yes" are
    both filed although the first holds the same lines as a file filed before."""
    work = _copy(tmp_path, "input")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "input_exp.xml", cwd=work))
    ok(psbase("--db", db, "input", "-s", "standard", "-d", "input_inp_1.xml", "input/data_1.dat", cwd=work))
    ok(psbase("--db", db, "input", "-s", '"data', "as", 'separator"', "-d", "input_inp_2.xml", "input/data_2.dat",
              cwd=work))
    with open(work / "input" / "data_5.dat", "rb") as inp:
        p = subprocess.run([PSBASE, "--db", db, "input", "-s", "stdin", "-d", "input_inp_1.xml", "-"], cwd=work,
                           stdin=inp, capture_output=True, text=True, timeout=120)
    ok(p)
    runs = stored(db, "input_TEST")
    assert [r.synopsis for r in runs] == ["standard", "data as separator", "data as separator", "stdin"]
    assert runs[3].sources == ["-"]
    assert [row["T_pp"] for row in runs[3].rows] == [
        float(x.split()[1]) for x in (work / "input" / "data_5.dat").read_text().splitlines()
        if x.strip() and x.split()[0].isdigit()]


def test_unclosed_quote_is_refused(tmp_path):
    work = _copy(tmp_path, "input")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "input_exp.xml", cwd=work))
    p = psbase("--db", db, "input", "-s", '"data', "as", "-d", "input_inp_1.xml", "input/data_1.dat", cwd=work)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "not closed" in p.stderr
    assert stored(db, "input_TEST") == []


@pytest.mark.parametrize("t", [1, 2, 3, 4, 6])
def test_named_location_lines(tmp_path, t):
    """lines/: lines="3" takes three lines from the triggered one, lines="0" the lines up to a blank one,
    line breaks kept (the <match>'s text cut from the first line, a <trigger>'s kept); the import prints
    what perfbase's does (nothing), and the text is filed as read (a string's too, as perfbase files it)."""
    work = _copy(tmp_path, "lines")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "lines_exp.xml", cwd=work))
    args = ("-u", "-d", f"lines_inp_{t}.xml", f"input/input_{t}.dat")
    out = ok(psbase("--db", db, "input", *args, cwd=work))
    assert out == (work / "verify" / f"test_{t}.vfy").read_text()
    (run,) = stored(db, "lines_TEST")
    name = "text" if t == 6 else "string"
    (value,) = [row[name] for row in run.rows]
    # raw text is filed as read, into a string too: its line breaks and white space kept (perfbase's)
    want = {1: "line 1\nline 2\nline 3\n", 2: "line 1\nline 2\nline 3\n",
            3: "result: line 1\nline 2\nline 3\n", 4: " line 1\nline 2\nline 3\n"}.get(t)
    if want is None:  # text keeps everything, its last line break too
        want = "".join(x + "\n" for x in (work / "input" / "input_6.dat").read_text().splitlines()[3:8])
    assert value == want


def test_lines_on_a_number_is_refused(tmp_path):
    """lines/7: lines= on an integer: one line naming it, exit 2, nothing filed."""
    work = _copy(tmp_path, "lines")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "lines_exp.xml", cwd=work))
    p = psbase("--db", db, "input", "-u", "-d", "lines_inp_7.xml", "input/input_7.dat", cwd=work)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "'int' is of datatype integer" in p.stderr
    assert stored(db, "lines_TEST") == []


def test_table_is_separator(tmp_path):
    """errors/: <tabular_location is_separator="yes">: a table after the first starts a new run; input_2.dat
    holds two tables, so the three files are four runs (perfbase's query plots four)."""
    work = _copy(tmp_path, "errors")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "errors_exp.xml", cwd=work))
    ok(psbase("--db", db, "input", "-d", "errors_inp.xml", "input_1.dat", "input_2.dat", "input_3.dat", cwd=work))
    runs = stored(db, "errors_TEST")
    assert [len(r.rows) for r in runs] == [8, 8, 8, 8]
    assert [r.sources for r in runs] == [["input_1.dat"], ["input_2.dat"], ["input_2.dat"], ["input_3.dat"]]
    assert [r.rows[0]["T_pp"] for r in runs[1:3]] == [4.98, 2.98]


def _rows(run) -> list[tuple]:
    return [(r["S_msg"], r["d"], r.get("T_gap"), r.get("T_pp")) for r in run.rows]


def test_update_values_complete_rows(tmp_path):
    """set_update/: <tabular_value update="yes"> keys: a latency row completes the gap row with the same
    S_msg and d (one row with both results); a row matching none is dropped with "yes", filed as a row of
    its own with "auto"; a data-set value still missing stays empty (perfbase's abort checks values of one
    occurrence only)."""
    work = _copy(tmp_path, "set_update")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "set_update_exp.xml", cwd=work))
    ok(psbase("--db", db, "input", "-j", "-d", "set_update-yes_inp.xml", "input/data_1.dat", cwd=work))
    ok(psbase("--db", db, "input", "-j", "-d", "set_update-yes_inp.xml", "input/data_2.dat", "input/data_3.dat",
              cwd=work))
    ok(psbase("--db", db, "input", "-j", "-d", "set_update-yes_inp.xml", "input/data_4.dat", cwd=work))
    ok(psbase("--db", db, "input", "-j", "-d", "set_update-auto_inp.xml", "input/data_4.dat", "--force", cwd=work))
    one, two, three, four = stored(db, "set_update_TEST")
    assert _rows(one) == [(0, "in", 0.13, 1.0), (1, "in", 0.23, 1.1), (2, "in", 0.33, 2.0), (4, "in", 0.43, 2.1)]
    assert _rows(two) == [(10, "in", 0.13, 1.0), (11, "in", 0.23, 1.1), (12, "out", 0.33, 2.0),
                          (14, "out", 0.43, 2.1)]
    gaps = [(20, "out", 0.13, None), (21, "out", 0.23, None), (22, "out", 0.33, None), (24, "out", 0.43, None)]
    assert _rows(three) == gaps
    assert _rows(four) == gaps + [(20, "in", None, 1.0), (21, "in", None, 1.1), (22, "in", None, 2.0),
                                  (24, "in", None, 2.1)]


def test_abort_refuses_a_missing_value_of_one_occurrence(tmp_path):
    """default/: perfbase's default policy (abort) refuses a run without a value of one occurrence: one line,
    exit 2, nothing filed."""
    work = _copy(tmp_path, "default")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "default_exp_float_1.xml", cwd=work))
    p = psbase("--db", db, "input", "-d", "default_inp_1.xml", "input_2.dat", cwd=work)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "no value for 'v'" in p.stderr
    assert stored(db, "default_TEST") == []


def test_version_with_a_word(tmp_path):
    """version/: a version such as '1.0.3 a' (read with len="0") is filed as a version that sorts after
    1.0.3 and before 1.0.4, as perfbase's query v_prot >= '1.0.3' takes it."""
    work = _copy(tmp_path, "version")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "version_exp.xml", cwd=work))
    ok(psbase("--db", db, "input", "-d", "version_inp.xml", "input/input_1.dat", "input/input_4.dat", cwd=work))
    one, four = stored(db, "version_TEST")
    assert (one.values["v_prot"], four.values["v_prot"]) == ("1.0.3", "1.0.3 a")
    assert one.values["v_prot"] < four.values["v_prot"] < "1.0.4"


@pytest.mark.parametrize("t, data", [(1, "input_1.dat"), (2, "input_2_networkfs.dat"),
                                     (3, "input_3_fs-network.dat"), (4, "input_4.dat")])
def test_maps(tmp_path, t, data):
    """map/: <map> in a <tabular_value> (fsx -> XFS); a <filename_location> of a data-set parameter, by its
    valid values and map inputs (networkfs -> NFS) or a <match> with terminator= (fs-network. -> NFS), the
    value in every row; a <named_location> without <match> finds a map input in the file (fsx -> XFS).
    input -t prints perfbase's data sets, and the same is filed."""
    work = _copy(tmp_path, "map")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "map_exp.xml", cwd=work))
    args = ("-d", f"map_inp_{t}.xml", f"input/{data}")
    want = (work / "verify" / f"test_{t}.vfy").read_text()
    assert ok(psbase("--db", db, "input", "-t", *args, cwd=work)) == want
    ok(psbase("--db", db, "input", *args, cwd=work))
    (run,) = stored(db, "map_TEST")
    assert [(r["fs"], str(r["T"])) for r in run.rows] == [
        (x.split("'fs': '")[1].split("'")[0], x.split("'T': '")[1].split("'")[0])
        for x in want.splitlines() if x.startswith("{")]


@pytest.mark.parametrize("t", [1, 2, 3])
def test_derived_parameter_xml_term(tmp_path, t):
    """derived/: <derived_parameter><term><product><factor><parameter>... (perfbase's XML term): N_procs is
    N_nodes * N_ppn in every row (and N_cpus = N_nodes * N_cpn in the third)."""
    work = _copy(tmp_path, "derived")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", f"derived_exp_{t}.xml", cwd=work))
    ok(psbase("--db", db, "input", "-d", f"derived_inp_{t}.xml", f"input_{t}.dat", cwd=work))
    (run,) = stored(db, "derived_TEST")
    rows = [{**run.values, **r} for r in run.rows]  # N_nodes is of one occurrence in the second and third
    assert rows and all(r["N_procs"] == r["N_nodes"] * r["N_ppn"] for r in rows)
    if t == 1:
        assert sorted(r["N_procs"] for r in rows) == [1, 2, 2, 3, 4, 4, 6, 8]
    if t == 3:
        assert all(r["N_cpus"] == r["N_nodes"] * r["N_cpn"] for r in rows)


def test_derived_parameter_map(tmp_path):
    """map2/: <derived_parameter><map value="os">: fs is the content_out of the os content found (Windows ->
    NTFS, Linux -> ext2), as perfbase's input -t prints it."""
    work = _copy(tmp_path, "map2")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "map2_exp.xml", cwd=work))
    ok(psbase("--db", db, "input", "-u", "-d", "map2_inp_1.xml", "input/input_1.dat", "input/input_2.dat",
              cwd=work))
    one, two = stored(db, "map2_TEST")
    assert [(r.values["os"], r.values["fs"]) for r in (one, two)] == [("Windows", "NTFS"), ("Linux", "ext2")]
    for n, run in ((1, one), (2, two)):
        assert f"  fs\t= {run.values['fs']}\n" in (work / "verify" / f"test_{n}.vfy").read_text()


def test_xml_term_unknown_function_is_refused(tmp_path):
    work = _copy(tmp_path, "derived")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "derived_exp_1.xml", cwd=work))
    text = (work / "derived_inp_1.xml").read_text()
    (work / "bad.xml").write_text(text.replace("<product>", '<function type="atanh"><argument><product>', 1)
                                  .replace("</product>", "</product></argument></function>", 1))
    p = psbase("--db", db, "input", "-d", "bad.xml", "input_1.dat", cwd=work)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "type='atanh'" in p.stderr
    assert stored(db, "derived_TEST") == []


@pytest.mark.parametrize("t", [1, 4])
def test_split_location(tmp_path, t):
    """split/: <split_location>: enter lines push a record, leave lines pop the latest and make a row of the
    <store> names (func at leave, t_0 at enter, t = leave - enter); sticky="no" values (call, len) go to the
    next row only; a <match terminator="("> takes the first word up to it. input -t prints perfbase's data
    sets (numbers as read, "0.00"), and the rows are filed."""
    work = _copy(tmp_path, "split")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "split_exp.xml", cwd=work))
    args = ("-d", "split_inp_1.xml", f"input_{t}.dat")
    assert ok(psbase("--db", db, "input", "-t", *args, cwd=work)) == (work / "verify" / f"test_{t}.vfy").read_text()
    ok(psbase("--db", db, "input", *args, cwd=work))
    (run,) = stored(db, "split_TEST")
    got = [(r["func"], r["t_0"], r["t"], r.get("call"), r.get("len")) for r in run.rows]
    call = ("write", 25) if t == 4 else (None, None)
    assert got == [("func2", 0.21, 0.24, *call), ("func1", 0.0, 0.47, None, None)]


@pytest.mark.parametrize("t, problem", [(2, "no value for 't'"), (3, "leave line without its enter line")])
def test_split_location_bad_files_are_refused(tmp_path, t, problem):
    """split/2 and 3: an incomplete leave line, a leave without enter: one line, exit 2, nothing filed."""
    work = _copy(tmp_path, "split")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", "-d", "split_exp.xml", cwd=work))
    p = psbase("--db", db, "input", "-d", "split_inp_1.xml", f"input_{t}.dat", cwd=work)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and problem in p.stderr
    assert stored(db, "split_TEST") == []
