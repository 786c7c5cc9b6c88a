"""Audit: a CUBE file psprocess wrote is read by the one CUBE reader
(readers/cube.py) on every path that reads inputs, never by the XML
parser; its text and JSON reports and the combination of two cubes give
the source profiles' samples, counted here from the raw XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from psuite.analysis import experiments, inputs
from psuite.errors import UsageError
from psuite.formats.readers import CubeFile
from tests.conftest import one_line_error, run_tool


def _samples(doc: Path) -> int:
    """The profile's samples: every <sample> of every module."""
    return sum(int(s.text) for s in ET.parse(doc).getroot().iter("sample"))


def _profiles(targets, workdir: Path) -> list[tuple[Path, Path]]:
    """Two ITIMER_PROF profiles and the cubes psprocess --cube made of them."""
    out = []
    for name in ("p1", "p2"):
        p = run_tool(
            "psrun", "-q", "--profile", "ITIMER_PROF", "--period", "1000", "-o", name, targets["work"], "0", "25", "0"
        )
        assert p.returncode == 0, p.stderr
        [doc] = workdir.glob(f"{name}.*.xml")
        cube = workdir / f"{name}.cubex"
        p = run_tool("psprocess", "--cube", str(cube), str(doc))
        assert p.returncode == 0, p.stderr
        assert _samples(doc) > 0
        out.append((doc, cube))
    return out


def test_text_and_json_of_a_cube(targets, workdir):
    [(doc, cube), _] = _profiles(targets, workdir)
    exp = inputs.load(str(cube), cubes=True)  # through readers/cube.py
    assert int(exp.total("samples")) == _samples(doc)
    report = json.loads("".join(experiments.cube_report([str(cube)], "json", False)))
    assert {m["name"]: m["total"] for m in report["metrics"]}["samples"] == _samples(doc)
    text = "".join(experiments.cube_report([str(cube)], "text", False))
    samples_row = next(line for line in text.splitlines() if line.startswith("samples "))
    assert samples_row.split()[-1] == str(_samples(doc)), text
    # a cube under a name without .cubex is told from its tar header, not parsed as XML
    plain = workdir / "renamed"
    plain.write_bytes(cube.read_bytes())
    assert int(inputs.load(str(plain), cubes=True).total("samples")) == _samples(doc)


def test_combining_two_cubes(targets, workdir):
    (d1, c1), (d2, c2) = _profiles(targets, workdir)
    report = json.loads("".join(experiments.cube_report([str(c1), str(c2)], "json", True)))
    assert {m["name"]: m["total"] for m in report["metrics"]}["samples"] == _samples(d1) + _samples(d2)
    per_location = [loc["totals"]["samples"] for loc in report["locations"]]
    assert per_location == [_samples(d1), _samples(d2)]  # each cube's run a location of its own
    # the same cube twice is refused, as documents are
    again = workdir / "again.cubex"
    again.write_bytes(c1.read_bytes())
    with pytest.raises(UsageError, match="again.cubex has the same content as"):
        experiments.cube_report([str(c1), str(again)], "json", True)


def test_psprocess_shows_cubes_as_it_shows_documents(targets, workdir):
    """psprocess X.cubex, -f json X.cubex and -c A.cubex B.cubex: the report,
    through the real command; a cube among documents, or with an export that
    reads documents, is refused in one line naming it."""
    (d1, c1), (d2, c2) = _profiles(targets, workdir)
    text = run_tool("psprocess", str(c1))
    assert text.returncode == 0, text.stderr
    samples_row = next(line for line in text.stdout.splitlines() if line.startswith("samples "))
    assert samples_row.split()[-1] == str(_samples(d1)), text.stdout
    js = run_tool("psprocess", "-f", "json", str(c1))
    assert js.returncode == 0, js.stderr
    assert {m["name"]: m["total"] for m in json.loads(js.stdout)["metrics"]}["samples"] == _samples(d1)
    both = run_tool("psprocess", "-c", "-f", "json", str(c1), str(c2))
    assert both.returncode == 0, both.stderr
    got = {m["name"]: m["total"] for m in json.loads(both.stdout)["metrics"]}["samples"]
    assert got == _samples(d1) + _samples(d2)
    # -c expands a glob to the same two cubes (psprocess expands it, not a shell)
    globbed = run_tool("psprocess", "-c", "-f", "json", str(workdir / "p?.cubex"))
    assert globbed.returncode == 0, globbed.stderr
    assert json.loads(globbed.stdout) == json.loads(both.stdout)
    line = one_line_error(run_tool("psprocess", "-c", str(c1), str(d2)), "psprocess")
    assert "CUBE file" in line and "well-formed" not in line, line
    line = one_line_error(run_tool("psprocess", "--gmon", str(workdir / "g.out"), str(c1)), "psprocess")
    assert "--gmon" in line and "CUBE file" in line, line
    assert not (workdir / "g.out").exists()
    # the reader underneath: inputs.load without cubes=True names it, never parses it as XML
    with pytest.raises(CubeFile) as caught:
        inputs.load(str(c1))
    assert caught.value.source == str(c1)
    # the algebra reads it through the same reader
    p = run_tool("psprocess", "stat", str(c1))
    assert p.returncode == 0, p.stderr
