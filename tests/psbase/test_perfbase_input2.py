"""perfbase's input command as perfbase's own test files use it (duplicate detection, input -t traces, locations),
through the real psbase command, with the files from ../shared/perfbase/test read at test time."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_cli_perfbase import refused

SUITE = Path(__file__).resolve().parents[2] / ".." / "shared" / "perfbase" / "test"


def directory(tmp_path: Path, name: str) -> tuple[Path, dict]:
    """perfbase's test directory NAME copied, with an archive of its own."""
    shutil.copytree(SUITE / name, tmp_path / name)
    return tmp_path / name, {"PSBASE_DB": str(tmp_path / "a.db")}


def runs(cwd: Path, env: dict, exp: str, *flags: str) -> list[list[str]]:
    return [line.split() for line in ok(psbase("ls", exp, *flags, cwd=cwd, env=env)).splitlines()[1:]]


def test_a_deleted_runs_file_can_be_imported_again_under_a_new_index(tmp_path):
    cwd, env = directory(tmp_path, "set_update")
    ok(psbase("setup", "-d", "set_update_exp.xml", cwd=cwd, env=env))
    args = ("input", "-j", "-d", "set_update-yes_inp.xml", "input/data_1.dat")
    ok(psbase(*args, cwd=cwd, env=env))
    # an active run is a duplicate, as in perfbase
    refused(psbase(*args, cwd=cwd, env=env), "already run 1 of set_update_TEST", "--force")
    ok(psbase("delete", "-e", "set_update_TEST", "-r", "1", "--dontask", cwd=cwd, env=env))
    # perfbase looks only at active runs: the deleted run's file is imported again, as a new run
    assert ok(psbase(*args, cwd=cwd, env=env)) == ""
    assert [r[0] for r in runs(cwd, env, "set_update_TEST")] == ["2"]
    # and the new run is a duplicate in its turn
    refused(psbase(*args, cwd=cwd, env=env), "already run 2 of set_update_TEST")
    out = ok(psbase("query", "-d", "set_update_qry.xml", cwd=cwd, env=env))
    assert (cwd / "set_update.dat").read_text().splitlines()[1:3] == ["0 \tin \t1.0 \t", "1 \tin \t1.1 \t"], out
    # restoring the deleted run would file the same data twice: refused in one line, nothing changed
    refused(psbase("restore", "set_update_TEST", "1", cwd=cwd, env=env), "imported again as run 2", "delete run 2")
    assert [r[0] for r in runs(cwd, env, "set_update_TEST")] == ["2"]
    ok(psbase("delete", "-e", "set_update_TEST", "-r", "2", "--dontask", cwd=cwd, env=env))
    ok(psbase("restore", "set_update_TEST", "1", cwd=cwd, env=env))  # its twin deleted: restored
    assert [r[0] for r in runs(cwd, env, "set_update_TEST")] == ["1"]


def test_purged_run_numbers_stay_unused_after_a_reimport(tmp_path):
    cwd, env = directory(tmp_path, "set_update")
    ok(psbase("setup", "-d", "set_update_exp.xml", cwd=cwd, env=env))
    args = ("input", "-j", "-d", "set_update-yes_inp.xml")
    ok(psbase(*args, "input/data_1.dat", cwd=cwd, env=env))
    ok(psbase(*args, "input/data_2.dat", cwd=cwd, env=env))
    ok(psbase("delete", "set_update_TEST", "2", "--purge", cwd=cwd, env=env))
    ok(psbase("delete", "set_update_TEST", "1", cwd=cwd, env=env))
    ok(psbase(*args, "input/data_1.dat", cwd=cwd, env=env))
    assert [r[0] for r in runs(cwd, env, "set_update_TEST", "--deleted")] == ["1", "3"]


def trace(cwd: Path, env: dict, *args: str) -> str:
    return ok(psbase("input", "-t", *args, cwd=cwd, env=env))


def test_a_boolean_location_is_stored_as_f_with_the_first_row_and_its_state_when_the_run_ends(tmp_path):
    cwd, env = directory(tmp_path, "boolean")
    ok(psbase("setup", "-d", "boolean_exp.xml", cwd=cwd, env=env))
    for data, vfy in (("input_2.dat", "test_2.vfy"), ("input_3.dat", "test_3.vfy")):
        out = trace(cwd, env, "-d", "boolean_inp_2.xml", f"input/{data}")
        assert out == (cwd / "verify" / vfy).read_text(), data
    # found in input_2: 'f' with the row, then 't' at the end
    out = trace(cwd, env, "-d", "boolean_inp_2.xml", "input/input_2.dat").splitlines()
    assert [x for x in out if x.startswith("  IXS")] == ["  IXS\t= f", "  IXS\t= t"]
    assert out.index("Dataset 0 in run 1") < out.index("  IXS\t= t")
    # a <map>ped value (boolean_inp_1) is stored when it is read, once
    out = trace(cwd, env, "-d", "boolean_inp_1.xml", "input/input_1.dat")
    assert out == (cwd / "verify" / "test_1.vfy").read_text()


def test_a_derived_parameter_is_stored_before_the_input_it_is_computed_from(tmp_path):
    cwd, env = directory(tmp_path, "map2")
    ok(psbase("setup", "-d", "map2_exp.xml", cwd=cwd, env=env))
    for n, fs in ((1, "NTFS"), (2, "ext2")):
        out = trace(cwd, env, "-u", "-d", "map2_inp_1.xml", f"input/input_{n}.dat")
        assert out == (cwd / "verify" / f"test_{n}.vfy").read_text()
        lines = out.splitlines()
        assert lines[1] == f"  fs\t= {fs}" and lines[3].startswith("  os\t= ")


def test_the_descriptions_synopsis_is_the_runs_synopsis_without_s(tmp_path):
    cwd, env = directory(tmp_path, "input")
    ok(psbase("setup", "-d", "input_exp.xml", cwd=cwd, env=env))
    ok(psbase("input", "-s", "standard", "-d", "input_inp_1.xml", "input/data_1.dat", cwd=cwd, env=env))
    # input_inp_3.xml has <synopsis>multiple input files</synopsis>; two files, two runs, both with it
    ok(psbase("input", "-d", "input_inp_3.xml", "input/data_3a.dat", "input/data_3b.dat", cwd=cwd, env=env))
    listed = ok(psbase("ls", "input_TEST", cwd=cwd, env=env)).splitlines()[1:]
    assert [" ".join(x.split()[4:-1]) for x in listed] == ["standard", "multiple input files", "multiple input files"]
    # input_qry_3.xml selects the runs by that synopsis
    out = ok(psbase("query", "-d", "input_qry_3.xml", cwd=cwd, env=env))
    assert sorted(out.splitlines()) == sorted((cwd / "verify" / "test_3.vfy").read_text().splitlines())


def test_raw_text_read_into_a_string_keeps_its_line_breaks_and_white_space(tmp_path):
    cwd, env = directory(tmp_path, "lines")
    ok(psbase("setup", "-d", "lines_exp.xml", cwd=cwd, env=env))
    for t in (1, 4):  # lines="3" and lines="0" (up to a blank line) after a <trigger>
        ok(psbase("input", "-u", "-d", f"lines_inp_{t}.xml", f"input/input_{t}.dat", cwd=cwd, env=env))
    out = ok(psbase("query", "-d", "lines_qry_1.xml", "-f", "f.runid=1", cwd=cwd, env=env))
    assert out == (cwd / "verify" / "test_8.vfy").read_text()
    assert "line 3\n\t\n" in out  # the value ends with its line break (perfbase's), no blank before the tab
    out = ok(psbase("query", "-d", "lines_qry_1.xml", "-f", "f.runid=2", cwd=cwd, env=env))
    assert out == (cwd / "verify" / "test_11.vfy").read_text()
    assert out.splitlines()[1] == " line 1"  # the leading blank kept


def test_a_marked_text_read_into_a_string_keeps_its_line_breaks(tmp_path):
    cwd, env = directory(tmp_path, "marker")
    ok(psbase("setup", "-d", "marker_exp.xml", cwd=cwd, env=env))
    ok(psbase("input", "-d", "marker_inp_1.xml", "-u", "input/input_1.dat", cwd=cwd, env=env))
    out = ok(psbase("query", "-d", "marker_qry_1.xml", "-f", "f.runid=1", cwd=cwd, env=env))
    assert out == (cwd / "verify" / "test_14.vfy").read_text()
    # still at most 255 characters: perfbase's string is a varchar too (its run 4 is refused)
    refused(psbase("input", "-d", "marker_inp_4.xml", "-u", "input/input_4.dat", cwd=cwd, env=env),
            "'string'", "at most 255", "text")


def test_a_string_location_takes_the_first_word_after_its_match(tmp_path):
    cwd, env = directory(tmp_path, "count")
    ok(psbase("setup", "-d", "count_exp.xml", cwd=cwd, env=env))
    for n in (7, 8):  # "### new input set": S is "new", as perfbase reads a string without len=
        out = trace(cwd, env, "-a", "ignore", "-d", "count_inp.xml", f"input/input_{n}.dat")
        assert out == (cwd / "verify" / f"test_{n}.vfy").read_text()
        assert "  S\t= new\n" in out and "new input" not in out


def ask(cwd: Path, env: dict, answers: str, *args: str):
    """perfbase's `input -a ask` with answers on standard input."""
    import os
    import subprocess

    from tests.psbase.test_cli import PSBASE

    return subprocess.run([PSBASE, "input", "-d", "missing_inp.xml", "-a", "ask", *args], cwd=cwd,
                          env={**os.environ, **env}, input=answers, capture_output=True, text=True, timeout=120)


def test_input_a_ask_prompts_for_a_missing_value_as_perfbase_does(tmp_path):
    # missing/input_4.dat gives no MPI_version: perfbase lists it, asks whether to add it, prompts, and its test
    # import prints the answer as stored after the file's rows (verify/test_4.vfy, with stdin_3.dat's answers)
    cwd, env = directory(tmp_path, "missing")
    ok(psbase("setup", "-d", "missing_exp.xml", cwd=cwd, env=env))
    p = ask(cwd, env, (cwd / "stdin_3.dat").read_text(), "-t", "input_4.dat")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout == (cwd / "verify" / "test_4.vfy").read_text()
    # a real import files the answer
    p = ask(cwd, env, "yes\n2.7\n", "input_4.dat")
    assert p.returncode == 0, p.stderr
    assert "MPI_version = ? " in p.stdout
    assert "2.7" in ok(psbase("ls", "missing_TEST", "--show", "MPI_version", cwd=cwd, env=env)).splitlines()[1].split()


def test_input_a_ask_answered_no_or_ended_files_nothing(tmp_path):
    cwd, env = directory(tmp_path, "missing")
    ok(psbase("setup", "-d", "missing_exp.xml", cwd=cwd, env=env))
    no = ask(cwd, env, "no\n", "input_4.dat")
    assert no.returncode == 2 and len(no.stderr.splitlines()) == 1 and "answered no" in no.stderr
    assert no.stdout.endswith("   No data written to database.\n")
    ended = ask(cwd, env, "\n", "input_4.dat")  # yes, then no answer at all
    assert ended.returncode == 2 and len(ended.stderr.splitlines()) == 1
    assert "standard input ended before a value for 'MPI_version'" in ended.stderr and "Traceback" not in ended.stderr
    assert ok(psbase("ls", "missing_TEST", cwd=cwd, env=env)).splitlines()[1:] == []
    # the answers cannot come from standard input when it is an input file
    refused(ask(cwd, env, "", "-"), "standard input", "--fixed")
