"""perfbase query constructs through the real `psbase query -d`, with perfbase's own test directories
(read from ../shared/perfbase/test at test time, never copied): each directory's experiment definition,
input description and data imported as written into a fresh archive, its query files run as written,
and the numbers of each output compared with what perfbase printed (its verify/test_N.vfy)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import one_line_error
from tests.psbase.test_cli import ok, psbase

PERFBASE = Path(__file__).resolve().parents[3] / "shared" / "perfbase" / "test"


def _numbers(text: str) -> list[float]:
    """The numbers of a table's data lines (comment lines and words left out)."""
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        for word in line.split():
            try:
                out.append(float(word.strip("'")))
            except ValueError:
                pass
    return out


def _setup(tmp_path: Path, directory: str, data: str = "input/*.dat") -> tuple[Path, dict]:
    work = tmp_path / directory
    shutil.copytree(PERFBASE / directory, work)
    env = {"PSBASE_DB": str(tmp_path / "a.db")}
    ok(psbase("setup", "-d", f"{directory}_exp.xml", cwd=work, env=env))
    files = sorted(str(p.relative_to(work)) for p in work.glob(data))
    ok(psbase("input", "-d", f"{directory}_inp.xml", *files, cwd=work, env=env))
    return work, env


@pytest.fixture(scope="module")
def combiner2(tmp_path_factory) -> tuple[Path, dict]:
    return _setup(tmp_path_factory.mktemp("pbq"), "combiner2")


def test_combiner_of_one_swept_input_puts_its_instances_side_by_side(combiner2) -> None:
    # combiner2_qry_5: <combiner datasets="merge"> of one input swept over V_net (sweep_resolve="intern")
    work, env = combiner2
    got = ok(psbase("query", "-d", "combiner2_qry_5.xml", cwd=work, env=env))
    assert _numbers(got) == _numbers((work / "verify" / "test_5.vfy").read_text())


def test_output_option_is_accepted(combiner2, tmp_path) -> None:
    # perfbase's <output><option> (a gnuplot setting) in combiner2's query: the table is unchanged
    work, env = combiner2
    text = (work / "combiner2_qry_5.xml").read_text()
    (work / "opt.xml").write_text(text.replace("<input>comb.min</input>\n  </output>",
                                               "<input>comb.min</input>\n<option>yrange [0:]</option></output>"))
    assert "<option>" in (work / "opt.xml").read_text()
    got = ok(psbase("query", "-d", "opt.xml", cwd=work, env=env))
    assert _numbers(got) == _numbers((work / "verify" / "test_5.vfy").read_text())


def test_omit_of_an_input_the_combiner_does_not_have_is_one_line(combiner2) -> None:
    work, env = combiner2
    text = (work / "combiner2_qry_5.xml").read_text()
    (work / "bad.xml").write_text(re.sub(r"(<input[^>]*>op.sort</input>)", r'\1<omit input="nope">T</omit>', text,
                                         count=1))
    line = one_line_error(psbase("query", "-d", "bad.xml", cwd=work, env=env), "psbase")
    assert "<omit>" in line and "'nope'" in line


@pytest.fixture(scope="module")
def eval_dir(tmp_path_factory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("pbq")
    d, env = _setup(work, "eval", "input_1.dat")
    for f in sorted(p.name for p in d.glob("*.dat") if p.name != "input_1.dat"):
        ok(psbase("input", "-d", "eval_inp.xml", f, cwd=d, env=env))
    return d, env


@pytest.mark.parametrize(("args", "vfy"), [(["eval_qry_1.xml"], 1), (["eval_qry_1.xml", "-f", "Q=0.02"], 2),
                                          (["eval_qry_2.xml"], 3)])
def test_eval_with_an_xml_term(eval_dir, args: list[str], vfy: int) -> None:
    # <term id="func"><fraction><dividend><sum>... <variable name="P">src.data</variable> ... <constant>Q</constant>
    # (a <fixed>, which -f overrides); eval_qry_2 also has <combiner><omit>T</omit>
    work, env = eval_dir
    got = ok(psbase("query", "-d", *args, cwd=work, env=env))
    want = (work / "verify" / f"test_{vfy}.vfy").read_text()
    assert _numbers(got) == pytest.approx(_numbers(want))
    # the column named as perfbase names it: the term's id and its variables in perfbase's (dict) order
    name = re.search(r"func\([^)]*\)", want).group(0)
    assert name in got and name in ("func(P,R_1,T,R_2)", "func(P,R_1,R_2)")


def test_eval_xml_term_with_a_function(tmp_path) -> None:
    # oponesrc_qry_11: <function type="floor"> of a <fraction> of a <variable> and a <constant>
    work, env = _setup(tmp_path, "oponesrc", "input_?.dat")
    ok(psbase("query", "-d", "oponesrc_qry_11.xml", cwd=work, env=env))
    got = (work / "qry_result.dat").read_text()  # perfbase writes <filename>NAME</filename> as NAME.dat
    want = (work / "verify" / "test_11.vfy").read_text()
    assert sorted(_numbers(got)) == sorted(_numbers(want))


def test_xml_term_variable_of_an_unknown_input_is_one_line(eval_dir) -> None:
    work, env = eval_dir
    text = (work / "eval_qry_1.xml").read_text()
    (work / "bad.xml").write_text(text.replace('<variable name="T">src.data</variable>',
                                               '<variable name="T">src.nope</variable>'))
    line = one_line_error(psbase("query", "-d", "bad.xml", cwd=work, env=env), "psbase")
    assert "<variable>" in line and "'src.nope'" in line


def _gnuplot_numbers(text: str) -> list[float]:
    """The numbers of the data lines of perfbase's gnuplot script (after plot, up to each e)."""
    return _numbers("\n".join(x for x in text.splitlines() if x[:1].isdigit() or x[:1] == "-"))


@pytest.fixture(scope="module")
def distrib_dir(tmp_path_factory) -> tuple[Path, dict]:
    return _setup(tmp_path_factory.mktemp("pbq"), "distrib", "input*.dat")


@pytest.mark.parametrize("t", [1, 2, 3, 4, 5])
def test_distrib(distrib_dir, t: int) -> None:
    # distrib_qry_T as written but for its output: raw text, not perfbase's eps plot, whose data are compared;
    # 1: 100 automatic bins; 2: of a scale value="Mega"; 3-5: value="0.1", variants normalized and cumulative
    work, env = distrib_dir
    text = (work / f"distrib_qry_{t}.xml").read_text()
    (work / f"t{t}.xml").write_text(text.replace('target="gnuplot" format="eps" type="steps"', 'target="raw_text"'))
    ok(psbase("query", "-d", f"t{t}.xml", cwd=work, env=env))
    got = (work / "qry_result.dat").read_text()
    assert _numbers(got) == pytest.approx(_gnuplot_numbers((work / "verify" / f"test_{t}.vfy").read_text()),
                                          rel=1e-6)
    assert "N_samples = 500" in got and "samples(l_msg)" in got
    if t == 2:
        assert "[us]" in got  # s times Mega: microseconds


def test_distrib_of_several_parameter_sets_is_one_line(distrib_dir) -> None:
    work, env = distrib_dir
    text = (work / "distrib_qry_1.xml").read_text()
    (work / "bad.xml").write_text(text.replace('<parameter show="filter" id="p.s_msg">', '<parameter id="p.s_msg">')
                                  .replace("<equal>f.s_msg</equal>", "<greater>0</greater>")
                                  .replace('target="gnuplot" format="eps" type="steps"', 'target="raw_text"'))
    line = one_line_error(psbase("query", "-d", "bad.xml", cwd=work, env=env), "psbase")
    assert "distrib takes one set of parameter values" in line


@pytest.mark.parametrize("t", [1, 2, 3])
def test_frequency(tmp_path, t: int) -> None:
    # frequency_qry_T as written but for its PostScript plot (left out: its raw_text output is perfbase's
    # verify/test_T.vfy); the data filed with a description in psbase's dialect (perfbase's names the run
    # r by its file name), r given with -f
    work = tmp_path / "frequency"
    shutil.copytree(PERFBASE / "frequency", work)
    env = {"PSBASE_DB": str(tmp_path / "a.db")}
    ok(psbase("setup", "-d", "frequency_exp.xml", cwd=work, env=env))
    (work / "inp.xml").write_text('<input><experiment>frequency_TEST</experiment><tabular_location><match># time'
                                  '</match><column pos="1">t</column><column pos="2">v</column></tabular_location>'
                                  "</input>")
    for n in (1, 2, 3):
        ok(psbase("input", "-d", "inp.xml", "-f", f"r={n}", f"input/data_{n}.dat", cwd=work, env=env))
    text = (work / f"frequency_qry_{t}.xml").read_text()
    (work / "q.xml").write_text(re.sub(r'<output target="gnuplot".*?</output>', "", text, flags=re.S))
    ok(psbase("query", "-d", "q.xml", cwd=work, env=env))
    (out,) = work.glob(f"frequency_{t}*")
    # verify/test_T.vfy is the raw text, then the PostScript plot's script (from "set terminal" on)
    got, want = out.read_text(), (work / "verify" / f"test_{t}.vfy").read_text().split("set terminal")[0]
    assert _numbers(got) == pytest.approx(_numbers(want))
    assert "freq(v)" in got and "Hz" in got


@pytest.fixture(scope="module")
def regexp2(tmp_path_factory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("pbq") / "regexp2"
    shutil.copytree(PERFBASE / "regexp2", work)
    env = {"PSBASE_DB": str(work.parent / "a.db")}
    ok(psbase("setup", "-d", "regexp2_exp.xml", cwd=work, env=env))
    files = sorted(str(p.relative_to(work)) for p in work.glob("input/*"))
    ok(psbase("input", "-u", "-d", "regexp2_inp.xml", *files, cwd=work, env=env))
    return work, env


@pytest.mark.parametrize("t", [1, 2])
def test_filter_regexp(regexp2, t: int) -> None:
    # <filter><regexp>.*number one.*</regexp> (1) and ^number one (2) on a string parameter
    work, env = regexp2
    got = ok(psbase("query", "-d", f"regexp2_qry_{t}.xml", cwd=work, env=env))
    want = (work / "verify" / f"test_{t}.vfy").read_text()
    assert _numbers(got) == _numbers(want)
    assert [x.split()[-1] for x in got.splitlines()[1:]] == [x.split()[-1] for x in want.splitlines()[1:]]


def test_filter_regexp_on_a_number_is_one_line(regexp2) -> None:
    # regexp2_qry_3: perfbase refuses it too ("needs to be a string type")
    work, env = regexp2
    line = one_line_error(psbase("query", "-d", "regexp2_qry_3.xml", cwd=work, env=env), "psbase")
    assert "'dummy'" in line and "filters strings" in line


def test_filter_regexp_that_is_no_regexp_is_one_line(regexp2) -> None:
    work, env = regexp2
    text = (work / "regexp2_qry_1.xml").read_text().replace(".*number one.*", "(number")
    (work / "bad.xml").write_text(text)
    line = one_line_error(psbase("query", "-d", "bad.xml", cwd=work, env=env), "psbase")
    assert "<regexp>" in line and "not a regular expression" in line


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("pbq") / "runs"
    shutil.copytree(PERFBASE / "runs", work)
    env = {"PSBASE_DB": str(work.parent / "a.db")}
    ok(psbase("setup", "-d", "runs_exp_desc.xml", cwd=work, env=env))
    for d in range(1, 5):
        ok(psbase("input", "-d", "runs_inp_desc.xml", "-s", f"synopsis_{d}", "-p", f"{d}-Dec-2004", f"data_{d}.dat",
                  cwd=work, env=env))
    return work, env


@pytest.mark.parametrize("t", [4, 5, 6, 8, 10, 11])
def test_run_performed_and_synopsis(runs_dir, t: int) -> None:
    # runs_query_T: <run><performed><from>/<to><date><day/><month/><year/> (4, 5, 6, 8), <synopsis> regexps
    # (10; 11 through a <fixed>); several <run>s of a source: the runs of any (4, 6); mask="exclude" (8, 10).
    # psbase orders a source's rows by parameter value, then run; perfbase by run: compared as a multiset
    work, env = runs_dir
    got = ok(psbase("query", "-d", f"runs_query_{t}.xml", cwd=work, env=env))
    want = (work / "verify" / f"test_{t}.vfy").read_text()
    rows = sorted(tuple(float(x) for x in line.split()) for line in got.splitlines()[1:])
    assert rows == sorted(tuple(float(x) for x in line.split()) for line in want.splitlines()[1:])
    assert rows


def test_run_performed_with_a_bad_month_is_one_line(runs_dir) -> None:
    work, env = runs_dir
    (work / "bad.xml").write_text((work / "runs_query_4.xml").read_text().replace("<month>Dec</month>",
                                                                                    "<month>Decembre13</month>", 1))
    line = one_line_error(psbase("query", "-d", "bad.xml", cwd=work, env=env), "psbase")
    assert "<from>" in line and "not a date" in line


def test_output_of_inputs_that_do_not_match_row_by_row(tmp_path) -> None:
    # pset_qry_1: an output of a sum by p and of its source (two rows for each p): perfbase shows each input
    # as its own table, one after the other; psbase too (rows of a table compared as a multiset)
    work = tmp_path / "pset"
    shutil.copytree(PERFBASE / "pset", work)
    env = {"PSBASE_DB": str(tmp_path / "a.db")}
    ok(psbase("setup", "-d", "pset_exp.xml", cwd=work, env=env))
    for p in (1, 2, 4):
        ok(psbase("input", f"--pset-store=pset_{p}", "-d", "pset_inp.xml", f"params_{p}.dat", cwd=work, env=env))
    for n, use in enumerate(("--pset-use=pset_1", "--pset-use=pset_1 -f P_2=tiny", "--pset-use=pset_1",
                             "--pset-use=pset_2", "--pset-use=pset_2,pset_4", "--pset-use=pset_1,pset_4",
                             "--pset-use=pset_4 --pset-use=pset_1"), 1):  # as pset's runtest files them
        ok(psbase("input", *use.split(), "-d", "pset_inp.xml", f"input_{n}.dat", cwd=work, env=env))
    got = ok(psbase("query", "-d", "pset_qry_1.xml", "-f", "f.size=small", cwd=work, env=env))
    want = (work / "verify" / "test_3.vfy").read_text()

    def blocks(text: str) -> list[list[tuple[float, ...]]]:
        out: list[list[tuple[float, ...]]] = []
        for line in text.splitlines():
            if line.startswith("# P_2"):
                out.append([])
            elif line[:1].isdigit():
                out[-1].append(tuple(float(x) for x in line.split()))
        return [sorted(b) for b in out]

    assert blocks(got) == blocks(want)
    assert len(blocks(got)) == 2 and len(blocks(got)[1]) == 6


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("pbq") / "sweep"
    shutil.copytree(PERFBASE / "sweep", work)
    env = {"PSBASE_DB": str(work.parent / "a.db")}
    ok(psbase("setup", "-d", "sweep_exp.xml", cwd=work, env=env))
    for f in sorted(work.glob("input/*.dat")):
        ok(psbase("input", "-d", "sweep_inp.xml", str(f.relative_to(work)), cwd=work, env=env))
    return work, env


def test_diff_of_one_input_resolved_per_sweep_value(sweep_dir) -> None:
    # sweep_qry_5 as written but for its output (raw text, not perfbase's eps plot, whose data are compared):
    # <operator type="diff"><input sweep_resolve="intern">op.sort</input>: the two interconnects' minima
    work, env = sweep_dir
    text = (work / "sweep_qry_5.xml").read_text()
    (work / "t5.xml").write_text(text.replace('target="gnuplot" format="eps" type="bars"', 'target="raw_text"'))
    ok(psbase("query", "-d", "t5.xml", cwd=work, env=env))
    got = (work / "sweep_5.dat").read_text()
    want = (work / "verify" / "test_5.vfy").read_text()
    assert [n for i, n in enumerate(_numbers(got)) if i % 2] == _gnuplot_numbers(want)[1::2]


def test_diff_of_one_input_without_intern_is_one_line(sweep_dir) -> None:
    # perfbase: "operation 'diff' needs 2 instead of 1 data sources" (combiner2_qry_4)
    work, env = sweep_dir
    text = (work / "sweep_qry_5.xml").read_text().replace(' sweep_resolve="intern"', "")
    (work / "bad.xml").write_text(text.replace('target="gnuplot" format="eps" type="bars"', 'target="raw_text"'))
    line = one_line_error(psbase("query", "-d", "bad.xml", cwd=work, env=env), "psbase")
    assert "diff takes exactly two" in line


@pytest.mark.parametrize("t", [1, 4, 10])
def test_source_rows_in_perfbase_order(runs_dir, t: int) -> None:
    # a source's rows run by run, each run's rows as filed: perfbase's order (runs_query_T's verify file)
    work, env = runs_dir
    got = ok(psbase("query", "-d", f"runs_query_{t}.xml", cwd=work, env=env))
    assert _numbers(got) == _numbers((work / "verify" / f"test_{t}.vfy").read_text())
