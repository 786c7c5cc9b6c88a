"""One numbering of threads in every document and export
(docs/formats/numbering.md), through the real psrun and psprocess.

One `psrun -p` run of tests/targets/numbering.c: the main thread spins in
main_spin, its first worker in first_spin, its second in second_spin, so
each document tells which thread it holds by the function that has its
samples.  In the -p reports, the call-path companion, --cube of the
profile, --cube -c of the -p reports, --pprof, -c's JSON records and the
Python API, the main thread is 1, the first worker 2, the second 3."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

import psuite
from tests.conftest import run_tool
from tests.psprocess.pprof_proto import decode

SPINNERS = {1: "main_spin", 2: "first_spin", 3: "second_spin"}  # what each thread number holds
SPIN_MS = "150"
MODES = {"callpath": ["--callpath", "--period", "2000"],
         "profile": ["--profile", "ITIMER_PROF", "--period", "2000"]}


@pytest.fixture(scope="module", params=list(MODES))
def run(request, targets, tmp_path_factory):
    """psrun -p MODE numbering, once per mode: (mode, the process total,
    the -p reports by <thread>)."""
    out = tmp_path_factory.mktemp(request.param)
    p = run_tool("psrun", "-q", "-p", "-d", str(out), *MODES[request.param], targets["numbering"], SPIN_MS)
    assert p.returncode == 0, p.stderr
    found = {int(etree.parse(str(path)).findtext("thread")): path
             for path in out.glob("numbering.*.xml") if not path.name.endswith(".callpaths.xml")}
    assert sorted(found) == [0, 1, 2, 3], sorted(found)  # the total, main, two workers
    return request.param, found.pop(0), found


def dominant(counts: Counter) -> str:
    """The spinner that holds most of a thread's samples (one must)."""
    [(name, _)] = Counter({k: v for k, v in counts.items() if k in SPINNERS.values()}).most_common(1)
    assert counts[name] > sum(counts.values()) / 2, counts
    return name


def psprocess(*args: str) -> str:
    p = run_tool("psprocess", *args)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_reports_number_threads_by_their_creation(run):
    _, _, threads = run
    for number, path in threads.items():
        report = psuite.read_document(str(path))
        assert report.thread == number and f".t{number}." in path.name
        records = report.to_records()
        assert {r["thread"] for r in records} == {number}
        assert dominant(Counter({r["function"]: r["samples"] for r in records})) == SPINNERS[number]


def test_the_companion_numbers_threads_as_the_reports(run):
    mode, total, _ = run
    companion = total.with_name(total.name.replace(".xml", ".callpaths.xml"))
    if mode != "callpath":
        assert not companion.exists()
        return
    doc = etree.parse(str(companion)).getroot()
    assert doc.get("version") == "1.1"
    assert sorted(int(t.get("id")) for t in doc.iter("thread")) == [1, 2, 3]
    records = psuite.read_document(str(total)).calltree_records()
    leaves: dict[int, Counter] = {}
    for r in records:
        leaves.setdefault(r["thread"], Counter())[r["function"]] += r["exclusive"]
    assert {t: dominant(c) for t, c in leaves.items()} == SPINNERS
    # calltree_records and to_records give the thread the same type
    total_rows = psuite.read_document(str(total)).to_records()
    assert {type(r["thread"]) for r in records} == {type(total_rows[0]["thread"])} == {int}


def cube_threads(path: Path) -> dict[int, str]:
    """A cube read back by pycubexr: per location named "thread N", the
    spinner with most of its samples."""
    from pycubexr import CubexParser

    out = {}
    with CubexParser(str(path)) as parser:
        values = parser.get_metric_values(metric=parser.get_metric_by_name("samples"))
        cnodes = []
        stack = list(parser.get_root_cnodes())
        while stack:
            c = stack.pop()
            cnodes.append(c)
            stack.extend(c.get_children())
        for location in parser.get_locations():
            number = int(re.fullmatch(r"thread (\d+)", location.name).group(1))
            assert int(location.rank) == number, (location.name, location.rank)
            counts = Counter()
            for c in cnodes:
                counts[parser.get_region(c).name] += float(
                    values.location_value(c, location.id, convert_to_exclusive=True))
            out[number] = dominant(counts)
    return out


def test_cubes_number_threads_as_the_reports(run, tmp_path):
    mode, total, threads = run
    psprocess("--cube", str(tmp_path / "combined.cubex"), "-c", *map(str, threads.values()))
    assert cube_threads(tmp_path / "combined.cubex") == SPINNERS
    if mode == "callpath":  # a profile's own cube has its threads' call trees
        psprocess("--cube", str(tmp_path / "profile.cubex"), str(total))
        assert cube_threads(tmp_path / "profile.cubex") == SPINNERS


def pprof_threads(path: Path) -> dict[int, str]:
    """A pprof profile.proto read back (tests/psprocess/pprof_proto.py): per
    thread label ("... thread N"), the spinner that most of its samples end
    in."""
    counts: dict[int, Counter] = {}
    got = decode(path)
    index = [name for name, _ in got["types"]].index("samples")
    for (labels, values, stack), n in got["samples"].items():
        [thread] = [value for key, value in labels if key == "thread"]
        number = int(re.fullmatch(r".* thread (\d+)", thread).group(1))
        leaf_function = stack[0][2][0][0]  # the leaf location's innermost line
        counts.setdefault(number, Counter())[leaf_function] += values[index] * n
    return {n: dominant(c) for n, c in counts.items()}


@pytest.mark.parametrize("run", ["callpath"], indirect=True)  # pprof holds call paths; --profile records none
def test_pprof_numbers_threads_as_the_reports(run, tmp_path):
    _, total, _ = run
    psprocess("--pprof", str(tmp_path / "run.pb.gz"), str(total))
    assert pprof_threads(tmp_path / "run.pb.gz") == SPINNERS


def test_combined_json_records_number_threads_as_the_reports(run):
    mode, total, threads = run
    doc = json.loads(psprocess("-c", "-f", "json", str(total), *map(str, threads.values())))
    reports = {r["thread"]: r for r in doc["reports"]}
    assert sorted(reports) == [1, 2, 3]  # the process total is left out, its threads stay
    for number, r in reports.items():
        assert dominant(Counter({loc["function"]: loc["samples"] for loc in r["locations"]})) == SPINNERS[number]
    rows = [row for r in doc["reports"] for row in r["calltree"]]
    if mode == "callpath":  # the process's call trees go with its first thread report, each thread's once
        leaves: dict[int, Counter] = {}
        for row in rows:
            assert isinstance(row["thread"], int)
            leaves.setdefault(row["thread"], Counter())[row["function"]] += row["exclusive"]
        assert {t: dominant(c) for t, c in leaves.items()} == SPINNERS
    else:
        assert rows == []
