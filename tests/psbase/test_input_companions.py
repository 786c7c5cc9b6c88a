"""`psbase input` of psrun's output files (a glob or a directory) files
each profile once, its call-path companion read with it: never the
companion as a run of its own (its samples would count twice).  A
companion given alone is filed with its profile when that is beside it,
else refused in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import TARGETS, one_line_error, run_tool
from tests.psbase.test_cli import ok, psbase


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """One psrun --callpath run: its profile and companion in run/."""
    out = tmp_path_factory.mktemp("psbase_companions")
    subprocess.run(["cc", "-O1", "-g", "-o", str(out / "work"), str(TARGETS / "work.c")], check=True)
    run = out / "run"
    run.mkdir()
    p = run_tool("psrun", "-q", "--callpath", "--period", "1000", "-d", str(run), str(out / "work"), "100", "200", "0")
    assert p.returncode == 0, p.stderr
    assert len(list(run.glob("*.callpaths.xml"))) == 1 and len(list(run.glob("*.xml"))) == 2
    return run


def profile_of(run: Path) -> Path:
    [profile] = [d for d in run.glob("*.xml") if not d.name.endswith(".callpaths.xml")]
    return profile


@pytest.mark.parametrize("form", ["glob", "directory", "companion beside its profile"])
def test_a_profile_is_filed_once_with_its_call_paths(run_dir, tmp_path, db_url, form):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "myapp", cwd=tmp_path, env=env))
    profile = profile_of(run_dir)
    given = {"glob": sorted(map(str, run_dir.glob("*.xml"))), "directory": [str(run_dir)],
             "companion beside its profile": [str(next(run_dir.glob("*.callpaths.xml")))]}[form]
    out = ok(psbase("input", "myapp", *given, cwd=tmp_path, env=env))
    assert out == "psbase: 1 run filed in myapp (1)\n"
    samples = int(etree.parse(str(profile)).getroot().findtext(".//totalsamples"))
    assert samples > 0
    query = json.loads(ok(psbase("query", "myapp", "total_samples", "--by", "ranks", "--stat", "mean,count", "-f",
                                 "json", cwd=tmp_path, env=env)))
    assert [(r["total_samples count"], r["total_samples mean"]) for r in query["rows"]] == [(1, samples)]
    info = ok(psbase("info", "myapp", "1", cwd=tmp_path, env=env))
    assert str(profile) in info and ".callpaths.xml" not in info


def test_a_companion_without_its_profile_is_refused(run_dir, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    [companion] = run_dir.glob("*.callpaths.xml")
    shutil.copy(companion, alone)
    ok(psbase("setup", "--psuite", "myapp", cwd=tmp_path))
    for given in (str(alone), str(alone / companion.name)):
        line = one_line_error(psbase("input", "myapp", given, cwd=tmp_path), "psbase")
        assert companion.name in line and profile_of(run_dir).name in line and "beside" in line
    assert "myapp" in ok(psbase("ls", cwd=tmp_path))
    assert ok(psbase("ls", "myapp", cwd=tmp_path)).count("\n") <= 1  # no run filed
