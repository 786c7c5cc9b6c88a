"""perfbase's gnuplot output target through the real `psbase query -d`, with perfbase's own test
directories (read from ../shared/perfbase/test at test time, never copied): the gnuplot command file
psbase writes (<filename>.gp) compared byte for byte with the one perfbase wrote (verify/test_N.vfy)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import one_line_error
from tests.psbase.test_cli import ok, psbase

PERFBASE = Path(__file__).resolve().parents[3] / "shared" / "perfbase" / "test"


def _setup(tmp_path: Path, directory: str, data: str = "input/*.dat", each: bool = False) -> tuple[Path, dict]:
    work = tmp_path / directory
    shutil.copytree(PERFBASE / directory, work)
    env = {"PSBASE_DB": str(tmp_path / "a.db")}
    ok(psbase("setup", "-d", f"{directory}_exp.xml", cwd=work, env=env))
    files = sorted(str(p.relative_to(work)) for p in work.glob(data))
    for group in [[f] for f in files] if each else [files]:
        ok(psbase("input", "-d", f"{directory}_inp.xml", *group, cwd=work, env=env))
    return work, env


def _vfy(work: Path, n: int) -> str:
    return (work / "verify" / f"test_{n}.vfy").read_text()


@pytest.fixture(scope="module")
def distrib(tmp_path_factory) -> tuple[Path, dict]:
    return _setup(tmp_path_factory.mktemp("pbgp"), "distrib", "input*.dat")


@pytest.mark.parametrize("t", [1, 2, 3, 4, 5])
def test_steps_plot_as_eps(distrib, t: int) -> None:
    # type="steps" format="eps": histeps, "set size 0.8", the synopsis and unit as axis labels
    work, env = distrib
    (work / "qry_result.gp").unlink(missing_ok=True)
    ok(psbase("query", "-d", f"distrib_qry_{t}.xml", cwd=work, env=env))
    assert (work / "qry_result.gp").read_text() == _vfy(work, t)


def test_other_terminals(distrib) -> None:
    # perfbase's terminal lines of format= png, ps and pdf (pdf: half the font size), color="no"
    work, env = distrib
    text = (work / "distrib_qry_1.xml").read_text()
    want = {
        'format="png"': "set terminal png font helvetica 12 enhanced \nset size ratio 0.5  2.00,1.00\n"
                        "set output 'qry_result.png'\n",
        'format="ps"': "set terminal postscript enhanced color \"Helvetica\" 12\nset output 'qry_result.ps'\n",
        'format="pdf" fontsize="large"': "set terminal pdf enhanced fname \"Helvetica\" fsize 7\n"
                                         "set output 'qry_result.pdf'\n",
        'format="eps" color="no"': "set terminal postscript eps enhanced  \"Helvetica\" 12\nset size 0.8\n"
                                   "set output 'qry_result.eps'\n",
    }
    rest = _vfy(work, 1).split("set output 'qry_result.eps'\n", 1)[1]
    for attrs, head in want.items():
        (work / "f.xml").write_text(text.replace('format="eps"', attrs))
        ok(psbase("query", "-d", "f.xml", cwd=work, env=env))
        assert (work / "qry_result.gp").read_text() == head + rest, attrs


def test_screen_without_filename_prints_the_commands(distrib) -> None:
    # on the screen perfbase pipes the commands to gnuplot; without <filename> psbase prints them
    work, env = distrib
    text = (work / "distrib_qry_1.xml").read_text()
    (work / "s.xml").write_text(text.replace('format="eps"', 'format="screen"')
                                .replace("<filename>qry_result</filename>", ""))
    got = ok(psbase("query", "-d", "s.xml", cwd=work, env=env))
    assert got.startswith('set terminal x11 enhanced font "helvetica-12"\nset xlabel "sample value distribution [s]"')
    assert got.endswith("e\n")


@pytest.mark.parametrize(("change", "words"), [
    (('format="eps"', 'format="tiff"'), "format='tiff' is not one of screen, ps, eps, pdf, png"),
    (('type="steps"', 'type="pies"'), "type='pies' is not one of"),
    (('format="eps"', 'format="eps" dimensions="4"'), "dimensions='4' is not one of 2, 3"),
    (("<filename>qry_result</filename>", ""), "give <filename> or title="),
])
def test_bad_output_is_one_line(distrib, change: tuple[str, str], words: str) -> None:
    work, env = distrib
    (work / "qry_result.gp").unlink(missing_ok=True)
    (work / "bad.xml").write_text((work / "distrib_qry_1.xml").read_text().replace(*change))
    assert words in one_line_error(psbase("query", "-d", "bad.xml", cwd=work, env=env), "psbase")
    assert not (work / "qry_result.gp").exists()


def test_error_bars_graphs_and_points(tmp_path) -> None:
    # errors="ylowhigh" (yerrorlines, using 1:2:3:4), type="bars" (boxes at offsets, x tics), style="points",
    # <option>logscale x 2 (log2 tics), label= value and input_id
    work, env = _setup(tmp_path, "errors", "input_?.dat")
    ok(psbase("query", "-d", "errors_qry.xml", cwd=work, env=env))
    for n, name in ((1, "bars"), (2, "graphs"), (3, "points")):
        assert (work / f"errors_lowhigh_{name}.gp").read_text() == _vfy(work, n), name


def test_3d_splot(tmp_path) -> None:
    # dimensions="3": splot, blank lines between the grid's rows, tics of both parameters, <option>s as set
    work, env = _setup(tmp_path, "plot3d", each=True)
    for t in (1, 2):
        ok(psbase("query", "-d", f"plot3d_qry_{t}.xml", cwd=work, env=env))
        assert (work / f"test_{t}.gp").read_text() == _vfy(work, t)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, dict]:
    return _setup(tmp_path_factory.mktemp("pbgp"), "sweep", each=True)


@pytest.mark.parametrize("t", [1, 3, 4, 5])
def test_several_inputs_and_intern_sweeps(sweep, t: int) -> None:
    # 1: four sources in one plot, label="parameter" (the filters as data titles), integer tics, -persist
    # dropped; 3, 4: one source swept over two parameters (sweep="intern"), perfbase's order of instances;
    # 5: bars of a diff, its axis label both inputs' synopses ("A-B")
    work, env = sweep
    ok(psbase("query", "-d", f"sweep_qry_{t}.xml", cwd=work, env=env))
    assert (work / f"sweep_{t}.gp").read_text() == _vfy(work, t)


def test_extern_sweep_and_unified_filename(tmp_path) -> None:
    # sweep_resolve="extern": a plot per sweep instance, <filename unify="filter">: its filters in the name
    work = tmp_path / "update"
    shutil.copytree(PERFBASE / "update", work)
    env = {"PSBASE_DB": str(tmp_path / "a.db")}
    ok(psbase("setup", "-d", "update_exp.xml", cwd=work, env=env))
    for t in range(1, 5):
        ok(psbase("update", "-d", f"update_upd_{t}.xml", cwd=work, env=env))
    files = sorted(str(p.relative_to(work)) for p in work.glob("input_?.dat"))
    ok(psbase("input", "-d", "update_inp.xml", "-u", *files, cwd=work, env=env))
    ok(psbase("query", "-d", "update_qry.xml", cwd=work, env=env))
    for n, name in ((5, "MPI_version=1.23_platform=SX-6"), (6, "MPI_version_>_1.23_platform=SX-6"),
                    (7, "MPI_version_>_1.23_platform=SX-8")):
        assert (work / f"setup_{name}.gp").read_text() == _vfy(work, n), name


@pytest.fixture(scope="module")
def sweep_group(tmp_path_factory) -> tuple[Path, dict]:
    return _setup(tmp_path_factory.mktemp("pbgp"), "sweep_group", each=True)


@pytest.mark.parametrize("t", [2, 3, 5])
def test_bars_of_intern_sweep_over_a_data_parameter(sweep_group, t: int) -> None:
    # sweep_resolve="intern" over show="data" N_threads reduced by min: each instance one bar at its
    # N_threads (power-of-two tics), the data titles without the swept parameter
    work, env = sweep_group
    ok(psbase("query", "-d", f"sweep_group_qry_{t}.xml", cwd=work, env=env))
    assert (work / f"sweep_group_{t}.gp").read_text() == _vfy(work, t)



def test_settings_given_as_options(distrib) -> None:
    # perfbase reads <option>elements|fontsize|ntics VALUE as its own settings (frequency_qry_1's
    # "elements small": lines of width 1), not as gnuplot "set" lines
    work, env = distrib
    text = (work / "distrib_qry_1.xml").read_text()
    (work / "o.xml").write_text(text.replace("<filename>", "<option>elements small</option>\n"
                                             "<option>fontsize huge</option><option>grid</option><filename>"))
    ok(psbase("query", "-d", "o.xml", cwd=work, env=env))
    got = (work / "qry_result.gp").read_text()
    want = _vfy(work, 1).replace("with histeps lw 2", "with histeps lw 1").replace('"Helvetica" 12', '"Helvetica" 16')
    assert got == want.replace("plot '-'", "set grid\nplot '-'", 1)


def test_input_styles_and_values_as_perfbase_stored_them(tmp_path) -> None:
    # <input style="points"> beside the default linespoints; values as perfbase read them back from its
    # database (15 significant digits): 8.837662642875003 prints as 8.83766264287
    work, env = _setup(tmp_path, "plottype", "data_T*.dat", each=True)
    ok(psbase("query", "-d", "plottype_qry.xml", cwd=work, env=env))
    got = (work / "plottype.gp").read_text()
    assert "1.16233735712 8.83766264287 \n" in got
    assert got == _vfy(work, 1)


def test_extern_sweep_over_two_parameters_names_both(sweep_group) -> None:
    # sweep_resolve="extern" over bench and N_threads, unify="filter": twelve files, each named by its
    # instance's filters in the sources' order (perfbase's .vfy: the files one after the other, as ls lists them)
    work, env = sweep_group
    ok(psbase("query", "-d", "sweep_group_qry_4.xml", cwd=work, env=env))
    files = sorted(work.glob("sweep_group_4_*.gp"))
    assert files[0].name == "sweep_group_4_bench=crunch_N_threads=1.gp" and len(files) == 12
    assert "".join(f.read_text() for f in files) == _vfy(work, 4)
