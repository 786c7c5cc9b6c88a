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
