"""perfbase's opendoc target and gnuplot's PostScript/EPS files through the real `psbase query -d`, with
perfbase's own test directories (read from ../shared/perfbase/test at test time, never copied): the
spreadsheet psbase writes (<filename>.ods) compared with perfbase's (verify/test_N.ods) cell by cell, and
the .ps/.eps gnuplot draws from the command file."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.conftest import one_line_error
from tests.psbase.perfbase_suite import _ods_content, before_postscript
from tests.psbase.test_cli import ok, psbase

PERFBASE = Path(__file__).resolve().parents[3] / "shared" / "perfbase" / "test"


def _setup(tmp_path: Path, directory: str, data: str = "input/*.dat") -> tuple[Path, dict]:
    work = tmp_path / directory
    shutil.copytree(PERFBASE / directory, work)
    env = {"PSBASE_DB": str(tmp_path / "a.db")}
    ok(psbase("setup", "-d", f"{directory}_exp.xml", cwd=work, env=env))
    for f in sorted(work.glob(data)):
        ok(psbase("input", "-d", f"{directory}_inp.xml", str(f.relative_to(work)), cwd=work, env=env))
    return work, env


def _cells(content: str) -> dict[str, tuple[str, str, str]]:
    """The harness's content lines by cell (A1, B6, ...): (type and value, texts, formatting); the sheet's
    name under 'sheet'."""
    out = {}
    for line in content.splitlines():
        key, _, rest = line.partition(" ")
        if key == "sheet":
            out[key] = (rest, "", "")
            continue
        head, _, look = rest[:-1].rpartition(" [")
        kind, _, texts = head.partition(" [")
        out[key] = (kind, "[" + texts, look)
    return out


@pytest.fixture(scope="module")
def opendoc(tmp_path_factory) -> tuple[Path, dict]:
    return _setup(tmp_path_factory.mktemp("pbods"), "opendoc")


def _query(work: Path, env: dict, t: int) -> dict[str, str]:
    (work / f"opendoc_{t}.ods").unlink(missing_ok=True)
    ok(psbase("query", "-d", f"opendoc_qry_{t}.xml", cwd=work, env=env))
    return _cells(_ods_content((work / f"opendoc_{t}.ods").read_bytes()))


def _want(work: Path, t: int) -> dict[str, str]:
    return _cells(_ods_content((work / "verify" / f"test_{t}.ods").read_bytes()))


def test_vector_sheet_is_perfbases(opendoc) -> None:
    # one input, no sweep: the common filters under "Parameters are:", an empty filter cell above the
    # result's label, the labels with units, integers as string cells and floats as float cells
    work, env = opendoc
    got = _query(work, env, 1)
    assert got == _want(work, 1)
    assert got["sheet"][0] == "'OpenDoc Test 1'"
    assert got["A6"][:2] == ("string", "['0']") and got["B6"][:2] == ("float value=3.0", "['3.0']")
    assert "font-weight=bold" in got["A1"][2] and "font-size=12pt" in got["A1"][2]
    assert got["B4"][:2] == ("string", "[]")  # the result's own filters: none, an empty string cell


def test_file_is_an_opendocument_spreadsheet(opendoc) -> None:
    # the zip LibreOffice opens: the mimetype first and uncompressed, a manifest, content.xml
    import zipfile

    work, env = opendoc
    _query(work, env, 1)
    with zipfile.ZipFile(work / "opendoc_1.ods") as z:
        first = z.infolist()[0]
        assert first.filename == "mimetype" and first.compress_type == zipfile.ZIP_STORED
        assert z.read("mimetype") == b"application/vnd.oasis.opendocument.spreadsheet"
        assert {"content.xml", "META-INF/manifest.xml"} <= set(z.namelist())


@pytest.mark.parametrize("t", [2, 3, 4, 5, 6, 7])
def test_layouts_place_cells_as_perfbase(opendoc, t: int) -> None:
    # 2: a sweep's columns side by side (the repeated parameter column shown once); 3 and 5: single values
    # over two sweeps ("Results are ..."; the first filter spans the columns); 4, 6, 7: single values over
    # one sweep, the results as sorted columns.  Every cell where perfbase put one, formatted as perfbase's;
    # the values and labels with units as perfbase's (a filter's text follows the parameter's style=)
    work, env = opendoc
    got, want = _query(work, env, t), _want(work, t)
    assert got.keys() == want.keys()
    for cell, (kind, texts, look) in want.items():
        assert got[cell][2] == look, cell
        if kind.startswith("float") or texts.endswith("]']"):  # a value, or a label with its unit
            assert got[cell] == (kind, texts, look), cell


def test_sheet_is_named_after_the_id_not_the_title(opendoc) -> None:
    work, env = opendoc
    text = (work / "opendoc_qry_1.xml").read_text()
    (work / "titled.xml").write_text(text.replace('target="opendoc">', 'target="opendoc" title="Latency">'))
    (work / "opendoc_1.ods").unlink(missing_ok=True)
    ok(psbase("query", "-d", "titled.xml", cwd=work, env=env))
    got = _cells(_ods_content((work / "opendoc_1.ods").read_bytes()))
    assert got == _want(work, 1)


def test_opendoc_without_filename_is_one_line(opendoc, tmp_path) -> None:
    work, env = opendoc
    text = (work / "opendoc_qry_1.xml").read_text().replace("<filename>opendoc_1</filename>", "")
    (work / "nofile.xml").write_text(text)
    line = one_line_error(psbase("query", "-d", "nofile.xml", cwd=work, env=env), "psbase")
    assert "<filename>" in line


def test_without_odfpy_one_line_names_the_extra(opendoc, tmp_path) -> None:
    # an archive installed before odfpy joined the extra: the package and the extra named, no file
    work, env = opendoc
    fake = tmp_path / "hide" / "odf"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'odf'\", name='odf')\n")
    (work / "opendoc_1.ods").unlink(missing_ok=True)
    line = one_line_error(psbase("query", "-d", "opendoc_qry_1.xml", cwd=work,
                                 env={**env, "PYTHONPATH": str(fake.parent)}), "psbase")
    assert "odfpy" in line and "psuite[archive]" in line
    assert not (work / "opendoc_1.ods").exists()


@pytest.fixture(scope="module")
def frequency(tmp_path_factory) -> tuple[Path, dict]:
    return _setup(tmp_path_factory.mktemp("pbps"), "frequency")


def test_ps_is_drawn_by_gnuplot(frequency) -> None:
    # format="ps": the command file and the PostScript gnuplot draws from it, named by its "set output"
    assert shutil.which("gnuplot"), "gnuplot is not installed: install gnuplot-nox (tests/run.sh does)"
    work, env = frequency
    ok(psbase("query", "-d", "frequency_qry_1.xml", cwd=work, env=env))
    gp = (work / "frequency_1.gp").read_text()
    assert "set output 'frequency_1.ps'\n" in gp
    ps = (work / "frequency_1.ps").read_text()
    want = (work / "verify" / "test_1.vfy").read_text()
    body = want[len(before_postscript(want)):]
    assert ps.startswith("%!PS-Adobe-2.0\n%%Title: frequency_1.ps\n")
    for line in ("%%BoundingBox: 50 50 554 770", "%%Orientation: Landscape", "%%Page: 1 1", "showpage"):
        assert line in body and line in ps, line
    # the harness's split: what perfbase wrote itself (data, command file), then gnuplot's file
    assert before_postscript(gp + ps) == gp and before_postscript(want).endswith("e\n")


def test_eps_is_drawn_by_gnuplot(tmp_path) -> None:
    assert shutil.which("gnuplot"), "gnuplot is not installed: install gnuplot-nox (tests/run.sh does)"
    work, env = _setup(tmp_path, "distrib", "input*.dat")
    ok(psbase("query", "-d", "distrib_qry_1.xml", cwd=work, env=env))
    eps = (work / "qry_result.eps").read_text()
    assert eps.startswith("%!PS-Adobe-2.0 EPSF-2.0\n%%Title: qry_result.eps\n")


def _fake_gnuplot(tmp_path: Path, body: str) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "gnuplot"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}


def test_without_gnuplot_one_line_and_no_file(frequency, tmp_path) -> None:
    work, env = frequency
    for f in work.glob("frequency_2.*"):
        f.unlink()
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_line_error(psbase("query", "-d", "frequency_qry_2.xml", cwd=work,
                                 env={**env, "PATH": str(empty)}), "psbase")
    assert "gnuplot" in line and "not installed" in line and "gnuplot-nox" in line
    assert not list(work.glob("frequency_2.*"))


def test_gnuplot_failing_leaves_no_plot(frequency, tmp_path) -> None:
    # a gnuplot that writes half a file and fails: one line with its message, no .ps left behind (the
    # command file stays, for `gnuplot NAME.gp` to show why)
    work, env = frequency
    for f in work.glob("frequency_3.*"):
        f.unlink()
    fake = _fake_gnuplot(tmp_path, "echo '%!PS' > frequency_3.ps\necho 'line 3: no such terminal' >&2\nexit 1\n")
    line = one_line_error(psbase("query", "-d", "frequency_qry_3.xml", cwd=work, env={**env, **fake}), "psbase")
    assert "gnuplot could not draw frequency_3.ps" in line and "no such terminal" in line
    assert not (work / "frequency_3.ps").exists()
    assert (work / "frequency_3.gp").is_file()


@pytest.mark.parametrize("option", ["title `touch pwned`", "grid ytics; system('touch pwned')",
                                    "output 'pwned'", "print 'pwned'", "grid\n!touch pwned"])
def test_a_command_file_that_would_run_commands_is_not_drawn(frequency, option) -> None:
    # the <option>s (and titles of stored values) go into the command file: psbase runs gnuplot on it only
    # when it draws and nothing more (perfbase piped it to gnuplot as it was)
    work, env = frequency
    text = (work / "frequency_qry_1.xml").read_text()
    assert "<option>grid ytics</option>" in text
    (work / "hostile.xml").write_text(text.replace("<option>grid ytics</option>", f"<option>{option}</option>")
                                      .replace("frequency_1<", "hostile<"))
    line = one_line_error(psbase("query", "-d", "hostile.xml", cwd=work, env=env), "psbase")
    assert "psbase does not run gnuplot on it" in line and "hostile.gp" in line
    assert not (work / "pwned").exists() and not (work / "hostile.ps").exists()
    assert (work / "hostile.gp").is_file()
