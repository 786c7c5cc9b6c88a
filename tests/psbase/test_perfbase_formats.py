"""perfbase's own files, as its test suite writes them, through the real
psbase command: experiment definitions (empty <default>, units % and $,
nested fractions), input descriptions (<tabular_location> with
<tabular_value>s, <named_location mode="count"> and is_separator="yes",
<fixed_value><content>), and what is stored checked against the numbers in
the directory's verify/test_N.vfy (perfbase's own output), read at test time
from ../shared/perfbase/test."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from psuite.psbase.store import Store
from tests.conftest import one_line_error
from tests.psbase.test_cli import ok, psbase

SUITE = Path(__file__).resolve().parents[2] / ".." / "shared" / "perfbase" / "test"


def suite(*parts: str) -> Path:
    path = SUITE.joinpath(*parts)
    assert path.exists(), f"perfbase's test suite is needed at {SUITE} (see ../shared/perfbase/README.md)"
    return path


def stored(url: str, experiment: str) -> list:
    s = Store(url)
    try:
        return [s.run(experiment, r.index) for r in s.list_runs(experiment)]
    finally:
        s.close()


def vfy_single_values(path: Path) -> list[dict[str, str]]:
    """perfbase's `input -t` listing: 'Storing single value(s) in run  N' then '  NAME\t= VALUE' lines."""
    runs: dict[int, dict[str, str]] = {}
    current = 0
    for line in path.read_text().splitlines():
        m = re.match(r"Storing single value\(s\) in run\s+(\d+)", line)
        if m:
            current = int(m.group(1))
            runs.setdefault(current, {})
        elif "=" in line:
            name, _, value = line.partition("=")
            runs[current][name.strip()] = value.strip()
    return [runs[k] for k in sorted(runs)]


def vfy_datasets(path: Path) -> list[dict[str, str]]:
    """perfbase's `input -t` listing of data sets: 'Dataset N in run R' then a dict line."""
    return [ast.literal_eval(line) for line in path.read_text().splitlines() if line.startswith("{")]


def test_count_mode_and_separator(tmp_path):
    """count/: N_gaga counts every 'gaga' (several on one line too); '###' starts a new run, and text
    before it is a run only if something was found in it (input_7: 2 runs, input_8: 1)."""
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("count", "count_exp.xml")), cwd=tmp_path))
    inputs = sorted(suite("count", "input").glob("input_*.dat"))
    assert len(inputs) == 8
    expected: list[int] = []
    for n, data in enumerate(inputs, start=1):
        # runtest imports with -a ignore: a value nothing gives is left empty
        ok(psbase("--db", db, "input", "count_TEST", "--missing", "empty", "--desc",
                  str(suite("count", "count_inp.xml")), str(data), cwd=tmp_path))
        expected += [int(run["N_gaga"]) for run in vfy_single_values(suite("count", "verify", f"test_{n}.vfy"))
                     if "N_gaga" in run]
    runs = stored(db, "count_TEST")
    assert [r.values["N_gaga"] for r in runs] == expected == [5, 1, 1, 1, 0, 4, 2, 2, 2]
    # the separator's own value is in the run it starts: the first word after the match (perfbase's reading)
    assert [r.values.get("S") for r in runs][-3:] == [None, "new", "new"]


def test_plain_table_without_header(tmp_path):
    """plain_table/: an empty <match> makes every line a possible table; <pos> counts from 0; lines of
    another width end the table and a line whose numbers cannot be read ('EOF done') is no row."""
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("plain_table", "plain_table_exp.xml")), cwd=tmp_path))
    for n in (1, 2):
        ok(psbase("--db", db, "input", "plain_table_TEST", "--desc", str(suite("plain_table", "plain_table_inp.xml")),
                  str(suite("plain_table", f"latency_{n}.dat")), cwd=tmp_path))
    runs = stored(db, "plain_table_TEST")
    assert len(runs) == 2
    for n, run in enumerate(runs, start=1):
        want = [{"S_msg": int(d["S_msg"]), "T_pp": float(d["T_pp"])}
                for d in vfy_datasets(suite("plain_table", "verify", f"test_{n}.vfy"))]
        assert len(want) == 8
        assert run.rows == want


def test_tabular_value_after_match_with_separator(tmp_path):
    """input/ test 2: one file, two runs started by is_separator="yes"; each run's table is found by
    <match> and <skip>1</skip> (the line after the match is the first row)."""
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("input", "input_exp.xml")), cwd=tmp_path))
    ok(psbase("--db", db, "input", "input_TEST", "--desc", str(suite("input", "input_inp_2.xml")),
              str(suite("input", "input", "data_2.dat")), cwd=tmp_path))
    runs = stored(db, "input_TEST")
    assert [(r.values["IC"], r.values["bufmode"]) for r in runs] == [("IXS", "none"), ("IXS", "full")]
    assert [[(row["S_msg"], row["T_pp"]) for row in r.rows] for r in runs] == [
        [(0, 1.0), (1, 1.1), (2, 1.2), (4, 1.3)], [(0, 2.0), (1, 2.1), (2, 2.2), (4, 2.3)]]


def test_second_table_in_one_file_is_kept(tmp_path):
    """A second table with the same trigger in one run adds its rows (perfbase files both)."""
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("plain_table", "plain_table_exp.xml")), cwd=tmp_path))
    desc = tmp_path / "two.xml"
    desc.write_text("<input><tabular_location><match># size</match><skip>1</skip>"
                    "<tabular_value><name>S_msg</name><pos>0</pos></tabular_value>"
                    "<tabular_value><name>T_pp</name></tabular_value></tabular_location></input>")
    data = tmp_path / "two.dat"
    data.write_text("# size time\n1 2.5\n2 3.5\n\nnext\n# size time\n4 4.5\n8 5.5us\n")
    ok(psbase("--db", db, "input", "plain_table_TEST", "--desc", str(desc), str(data), cwd=tmp_path))
    (run,) = stored(db, "plain_table_TEST")
    # a value without <pos> is the column after the previous one; '5.5us' reads as 5.5, as perfbase reads it
    assert [(r["S_msg"], r["T_pp"]) for r in run.rows] == [(1, 2.5), (2, 3.5), (4, 4.5), (8, 5.5)]


@pytest.mark.parametrize("kind", ["float", "int"])
def test_empty_default_and_unreadable_value(tmp_path, kind):
    """default/: an empty <default></default> is set up and makes an empty value the default; a value
    that cannot be read ('speed: km/h') is missing: refused without -u (psbase: --missing default),
    given the <default> with it; query output as verify/test_12 and test_18 (float) or 42/48 (int)."""
    d = suite("default")
    first = {"float": 6, "int": 36}[kind]
    for exp, vfy in ((2, first + 6), (3, first + 12)):
        db = str(tmp_path / f"{kind}{exp}.db")
        ok(psbase("--db", db, "setup", str(d / f"default_exp_{kind}_{exp}.xml"), cwd=tmp_path))
        ok(psbase("--db", db, "input", "default_TEST", "--desc", str(d / "default_inp_1.xml"), str(d / "input_1.dat"),
                  cwd=tmp_path))
        for n in (2, 3):
            line = one_line_error(psbase("--db", db, "input", "default_TEST", "--desc", str(d / "default_inp_1.xml"),
                                         str(d / f"input_{n}.dat"), cwd=tmp_path), "psbase")
            assert f"input_{n}.dat" in line and "'v'" in line
            ok(psbase("--db", db, "input", "default_TEST", "--missing", "default", "--desc",
                      str(d / "default_inp_1.xml"), str(d / f"input_{n}.dat"), cwd=tmp_path))
        # perfbase's raw_text output: '# type[]\tv[]' then one 'A \t40.0 \t' line per run with a value
        want = [float(line.split()[1]) for line in (d / "verify" / f"test_{vfy}.vfy").read_text().splitlines()
                if not line.startswith("#")]
        got = [r.values["v"] for r in stored(db, "default_TEST") if r.values.get("v") is not None]
        assert got == want and want[0] == 40
        assert len(stored(db, "default_TEST")) == 3


def test_units_percent_dollar_and_fraction(tmp_path):
    """multi/ (%), plottype/ ($) and combiner2/ (a <fraction> Mbit/s) set up with their units."""
    for directory, variable, unit in (("multi", "CPU_load", "%"), ("plottype", "Y", "$"),
                                      ("combiner2", None, "Mbit/s")):
        db = str(tmp_path / f"{directory}.db")
        ok(psbase("--db", db, "setup", str(suite(directory, f"{directory}_exp.xml")), cwd=tmp_path))
        s = Store(db)
        try:
            d = s.definition(f"{directory}_TEST")
        finally:
            s.close()
        units = {v.name: v.unit for v in d.variables}
        assert unit in units.values() if variable is None else units[variable] == unit


def test_nested_fraction_unit(tmp_path):
    """perfbase nests <fraction> and <product> in <dividend>/<divisor>: byte/(s/op) is byte*op/s."""
    exp = tmp_path / "e.xml"
    exp.write_text("<experiment><name>u</name><result><name>r</name><datatype>float</datatype><unit><fraction>"
                   "<dividend><base_unit>byte</base_unit><scaling>Mega</scaling></dividend><divisor><fraction>"
                   "<dividend><base_unit>s</base_unit></dividend><divisor><base_unit>op</base_unit></divisor>"
                   "</fraction></divisor></fraction></unit></result></experiment>")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(exp), cwd=tmp_path))
    assert "MB*op/s" in ok(psbase("--db", db, "info", "u", cwd=tmp_path))


def test_fixed_value_content(tmp_path):
    """<fixed_value><name/><content/></fixed_value> as perfbase writes it."""
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("plain_table", "plain_table_exp.xml")), cwd=tmp_path))
    desc = tmp_path / "fixed.xml"
    desc.write_text("<input><fixed_value><name>S_msg</name><content>64</content></fixed_value>"
                    "<tabular_location><match># t</match><skip>1</skip>"
                    "<tabular_value><name>T_pp</name><pos>0</pos></tabular_value></tabular_location></input>")
    data = tmp_path / "f.dat"
    data.write_text("# t\n1.5\n2.5\n")
    ok(psbase("--db", db, "input", "plain_table_TEST", "--desc", str(desc), str(data), cwd=tmp_path))
    (run,) = stored(db, "plain_table_TEST")
    assert run.rows == [{"S_msg": 64, "T_pp": 1.5}, {"S_msg": 64, "T_pp": 2.5}]


@pytest.mark.parametrize("bad, what", [
    ("<tabular_value><name>T_pp</name><pos>-1</pos></tabular_value>", "<pos>"),
    ("<tabular_value><name>T_pp</name></tabular_value><column pos='1'>S_msg</column>", "mixes"),
    ("<tabular_value><name>T_pp</name><map/></tabular_value>", "not supported"),
    ("<tabular_value scale='x'><name>T_pp</name></tabular_value>", "scale="),
    ("<tabular_value><name>nope</name></tabular_value>", "'nope'"),
])
def test_bad_tabular_location_is_one_line(tmp_path, bad, what):
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(suite("plain_table", "plain_table_exp.xml")), cwd=tmp_path))
    desc = tmp_path / "bad.xml"
    desc.write_text(f"<input><tabular_location>{bad}</tabular_location></input>")
    shutil.copy(suite("plain_table", "latency_1.dat"), tmp_path / "l.dat")
    line = one_line_error(psbase("--db", db, "input", "plain_table_TEST", "--desc", str(desc), "l.dat",
                                 cwd=tmp_path), "psbase")
    assert what in line
    assert stored(db, "plain_table_TEST") == []


def test_boolean_mode_leads_map_and_data_set_value(tmp_path):
    """boolean/: mode="boolean" (whether 'IXS' occurs), <map> on->t, content="leads" (the number before
    'processes'), and a <named_location> of a data-set variable (l); values as verify/test_1..3."""
    d = suite("boolean")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(d / "boolean_exp.xml"), cwd=tmp_path))
    for desc, data in (("1", "input_1.dat"), ("2", "input_2.dat"), ("2", "input_3.dat")):
        ok(psbase("--db", db, "input", "boolean_TEST", "--desc", str(d / f"boolean_inp_{desc}.xml"),
                  str(d / "input" / data), cwd=tmp_path))
    runs = stored(db, "boolean_TEST")
    assert len(runs) == 3
    for n, run in enumerate(runs, start=1):
        vfy = d / "verify" / f"test_{n}.vfy"
        single: dict[str, str] = {}
        for values in vfy_single_values(vfy):
            single.update(values)  # perfbase prints IXS = f first and then its final value
        assert run.values["N_proc"] == int(single["N_proc"])
        assert run.values["IXS"] is {"t": True, "f": False}[single["IXS"]]
        assert [row["l"] for row in run.rows] == [float(s["l"]) for s in vfy_datasets(vfy)]
    assert [r.values["IXS"] for r in runs] == [True, True, False]


def test_missing_value_policies(tmp_path):
    """missing/: -u (--missing default) gives OS_version its <default> 1.0; --missing=abort (refuse)
    refuses input_2 ('MPI version: ' has no content); ignore (empty) leaves values empty; -f gives one."""
    d = suite("missing")
    desc = str(d / "missing_inp.xml")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(d / "missing_exp.xml"), cwd=tmp_path))
    ok(psbase("--db", db, "input", "missing_TEST", "--desc", desc, "--missing", "default", str(d / "input_1.dat"),
              cwd=tmp_path))
    line = one_line_error(psbase("--db", db, "input", "missing_TEST", "--desc", desc, str(d / "input_2.dat"),
                                 cwd=tmp_path), "psbase")
    assert "MPI_version" in line
    ok(psbase("--db", db, "input", "missing_TEST", "--desc", desc, "--missing", "empty", str(d / "input_3.dat"),
              cwd=tmp_path))
    ok(psbase("--db", db, "input", "missing_TEST", "--desc", desc, "--fixed", "MPI_version=1.25",
              str(d / "input_4.dat"), cwd=tmp_path))
    runs = stored(db, "missing_TEST")
    for run, n in zip(runs, (1, 3, 5), strict=True):
        vfy = d / "verify" / f"test_{n}.vfy"
        single: dict[str, str] = {}
        for values in vfy_single_values(vfy):
            single.update(values)
        assert {k: run.values.get(k) for k in ("MPI_version", "OS_version")} == {
            k: single.get(k) for k in ("MPI_version", "OS_version")}
        assert [(r["S_msg"], r["T_pp"]) for r in run.rows] == [
            (int(s["S_msg"]), float(s["T_pp"])) for s in vfy_datasets(vfy)]
    assert runs[0].values["OS_version"] == "1.0"


def test_two_descriptions_join_rows_side_by_side(tmp_path):
    """multi/: load.dat (CPU_load) and latency.dat (T_pp), each with its own description, make one run
    whose data-set row i joins row i of each file on S_msg, as perfbase merges them."""
    d = suite("multi")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(d / "multi_exp.xml"), cwd=tmp_path))
    ok(psbase("--db", db, "input", "multi_TEST", "--merge", "--with", str(d / "multi_load_inp.xml"),
              str(d / "load.dat"), "--with", str(d / "multi_ltncy_inp.xml"), str(d / "latency.dat"), cwd=tmp_path))
    (run,) = stored(db, "multi_TEST")

    def table(name: str) -> list[list[str]]:
        return [line.split() for line in (d / name).read_text().splitlines() if line.strip() and line[0] != "#"]

    load, latency = table("load.dat"), table("latency.dat")
    assert len(load) == len(latency) == 5
    assert run.rows == [{"S_msg": int(a[0]), "CPU_load": float(a[1]), "T_pp": float(b[1])}
                        for a, b in zip(load, latency, strict=True)]
    # rows that disagree on the variable both give are refused, nothing filed
    bad = tmp_path / "latency.dat"
    bad.write_text((d / "latency.dat").read_text().replace("16\t", "32\t"))
    line = one_line_error(psbase("--db", db, "input", "multi_TEST", "--merge", "--force", "--with",
                                 str(d / "multi_load_inp.xml"), str(d / "load.dat"), "--with",
                                 str(d / "multi_ltncy_inp.xml"), str(bad), cwd=tmp_path), "psbase")
    assert "'S_msg'" in line
    assert len(stored(db, "multi_TEST")) == 1


def vfy_info(path: Path) -> tuple[str, dict[str, str | None]]:
    """perfbase's `info -e EXP -v`: the project and each variable's default (None: none)."""
    project, variables, current = "", {}, None
    for line in path.read_text().splitlines():
        if line.startswith(" Project"):
            project = line.split(":", 1)[1].strip()
        m = re.match(r" '(\w+)': ", line)
        if m:
            current = m.group(1)
            variables[current] = None
        elif line.strip().startswith("Default:") and current:
            variables[current] = line.split(":", 1)[1].strip()
    return project, variables


def test_experiment_update_files(tmp_path):
    """update/: perfbase's <experiment_update> files add variables, set a default, drop one, rename one
    (<new_name>); the experiment then reads as perfbase's `info` in verify/test_1..4; updates 5 (drop an
    unknown variable) and 6 (an unknown datatype) are one line, exit 2, nothing changed."""
    d = suite("update")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(d / "update_exp.xml"), cwd=tmp_path))
    for n in (1, 2, 3, 4):
        ok(psbase("--db", db, "update", str(d / f"update_upd_{n}.xml"), cwd=tmp_path))
        project, want = vfy_info(d / "verify" / f"test_{n}.vfy")
        s = Store(db)
        try:
            got = s.definition("update_TEST")
        finally:
            s.close()
        assert got.project == project
        assert {v.name: v.default for v in got.variables} == want
    before = ok(psbase("--db", db, "info", "update_TEST", cwd=tmp_path))
    for n in (5, 6):
        line = one_line_error(psbase("--db", db, "update", str(d / f"update_upd_{n}.xml"), cwd=tmp_path), "psbase")
        assert "S_gaga" in line
    assert ok(psbase("--db", db, "info", "update_TEST", cwd=tmp_path)) == before
    # an update is not a definition
    line = one_line_error(psbase("--db", str(tmp_path / "b.db"), "setup", str(d / "update_upd_1.xml"),
                                 cwd=tmp_path), "psbase")
    assert "psbase update" in line


def test_renamed_variable_keeps_its_values(tmp_path):
    """A <new_name> renames the variable's stored values with it."""
    d = suite("update")
    db = str(tmp_path / "a.db")
    ok(psbase("--db", db, "setup", str(d / "update_exp.xml"), cwd=tmp_path))
    ok(psbase("--db", db, "update", str(d / "update_upd_1.xml"), cwd=tmp_path))
    ok(psbase("--db", db, "update", str(d / "update_upd_2.xml"), cwd=tmp_path))
    desc = tmp_path / "inp.xml"  # the description as it was before the rename
    desc.write_text((d / "update_inp.xml").read_text().replace("<name>platform</name>", "<name>machine</name>"))
    ok(psbase("--db", db, "input", "update_TEST", "--missing", "empty", "--desc", str(desc),
              str(d / "input_1.dat"), cwd=tmp_path))
    ok(psbase("--db", db, "update", str(d / "update_upd_4.xml"), cwd=tmp_path))
    (run,) = stored(db, "update_TEST")
    machine = re.search(r"machine:\s*(\S+)", (d / "input_1.dat").read_text()).group(1)
    assert run.values["platform"] == machine == "SX-6"
    assert "machine" not in run.values
