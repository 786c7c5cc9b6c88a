"""The record APIs and JSON/CSV say the same of the same samples: one real
`psrun -p --callpath` run of tests/targets/numbering.c (the main thread
spins in main_spin, its workers in first_spin and second_spin) read as
psuite.read_document(...).to_records(), calltree_records(),
psuite.read_experiment(...).to_records(), `psprocess -f json` and
`-f csv`; and a real counting report's event descriptions in JSON and
CSV."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

import psuite
from tests.conftest import run_tool

SPINNERS = {1: "main_spin", 2: "first_spin", 3: "second_spin"}


def psprocess(*args: str) -> str:
    p = run_tool("psprocess", *args)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def run(targets, tmp_path_factory) -> tuple[Path, dict[int, Path]]:
    """(the process total, the per-thread reports by <thread>)."""
    out = tmp_path_factory.mktemp("records")
    p = run_tool("psrun", "-q", "-p", "-d", str(out), "--callpath", "--period", "2000", targets["numbering"], "150")
    assert p.returncode == 0, p.stderr
    found = {int(etree.parse(str(path)).findtext("thread")): path
             for path in out.glob("numbering.*.xml") if not path.name.endswith(".callpaths.xml")}
    assert sorted(found) == [0, 1, 2, 3], sorted(found)
    return found.pop(0), found


def per_thread(rows, key: str) -> dict[int, float]:
    out: Counter = Counter()
    for r in rows:
        assert type(r["thread"]) is int, r
        out[r["thread"]] += r[key]
    return {t: n for t, n in out.items() if n}


def test_every_record_api_files_the_samples_under_their_threads(run):
    total, threads = run
    report = psuite.read_document(str(total))
    assert report.thread == 0  # the document: the process total
    truth = {t: psuite.read_document(str(p)).total_samples for t, p in threads.items()}
    truth = {t: n for t, n in truth.items() if n}
    assert sum(truth.values()) == report.total_samples > 0
    flat = per_thread(report.to_records(), "samples")
    paths = per_thread(report.calltree_records(), "exclusive")
    model = per_thread([r for r in psuite.read_experiment(str(total)).to_records() if r["metric"] == "samples"],
                       "value")
    assert flat == paths == model == truth
    # each thread's rows are its own samples: the spinner it ran holds most of them
    for t, spinner in SPINNERS.items():
        functions = Counter()
        for r in report.to_records():
            if r["thread"] == t:
                functions[r["function"]] += r["samples"]
        assert functions.most_common(1)[0][0] == spinner, (t, functions)
    # the rows keep the flat profile's source lines
    assert any(r["line"] > 0 and r["file"].endswith("numbering.c") for r in report.to_records())


def test_a_companion_read_alone_has_the_same_records(run):
    total, _ = run
    companion = psuite.read_document(str(total).replace(".xml", ".callpaths.xml"))
    report = psuite.read_document(str(total))
    assert companion.thread is None
    assert per_thread(companion.to_records(), "samples") == per_thread(report.to_records(), "samples")


def test_the_process_total_without_per_thread_data_is_thread_0(run, tmp_path):
    """Without its companion the process report holds the whole process's
    samples only: its rows say thread 0, the process total."""
    total, threads = run
    alone = tmp_path / total.name
    alone.write_bytes(total.read_bytes())
    report = psuite.read_document(str(alone))
    assert report.callpaths is None
    assert per_thread(report.to_records(), "samples") == {0: report.total_samples}


def test_call_paths_that_miss_samples_leave_the_flat_profile_whole(run, tmp_path):
    """A companion that holds fewer samples than the flat profile (a thread
    it never recorded, samples it lost) cannot split the process total by
    thread: the rows are the flat profile, whole, under thread 0."""
    total, _ = run
    companion = total.with_name(total.name.replace(".xml", ".callpaths.xml"))
    tree = etree.parse(str(companion))
    threads = tree.getroot().findall(".//thread")
    assert len(threads) >= 2, "the run records several threads"
    threads[-1].getparent().remove(threads[-1])
    (tmp_path / total.name).write_bytes(total.read_bytes())
    tree.write(str(tmp_path / companion.name))
    report = psuite.read_document(str(tmp_path / total.name))
    assert report.callpaths is not None and len(report.callpaths.threads) == len(threads) - 1
    assert per_thread(report.to_records(), "samples") == {0: report.total_samples}


def test_a_report_without_thread_numbers_its_records_as_the_model(run, tmp_path):
    """A report without <thread> (the original PerfSuite's) is the whole
    process: report.thread None, its records thread 0, as
    read_experiment's."""
    _, threads = run
    root = etree.parse(str(threads[1])).getroot()
    el = root.find("thread")
    el.getparent().remove(el)
    doc = tmp_path / "nothread.xml"
    doc.write_bytes(etree.tostring(root))
    report = psuite.read_document(str(doc))
    assert report.thread is None
    assert {r["thread"] for r in report.to_records()} == {0}
    assert {r["thread"] for r in psuite.read_experiment(str(doc)).to_records()} == {0}


def test_json_and_csv_number_threads_as_the_records(run, tmp_path):
    total, threads = run
    docs = [str(total), *map(str, threads.values())]
    data = json.loads(psprocess("-f", "json", *docs))
    assert {r["thread"] for r in data["reports"]} == {0, 1, 2, 3}
    assert all(type(r["thread"]) is int for r in data["reports"])
    [process] = [r for r in data["reports"] if r["thread"] == 0]
    got = Counter()
    for node in process["calltree"]:
        assert type(node["thread"]) is int
        got[node["thread"]] += node["exclusive"]
    assert {t: n for t, n in got.items() if n} == per_thread(psuite.read_document(str(total)).to_records(), "samples")
    rows = list(csv.DictReader(io.StringIO(psprocess("-f", "csv", *docs))))
    assert {int(r["thread"]) for r in rows} == {0, 1, 2, 3}


def test_json_describes_events_as_csv_does(targets, tmp_path):
    """A real counting report: every event's description in JSON is the
    one CSV shows (psuite's catalogue's where the document has none), alone
    and combined."""
    for _ in range(2):
        p = run_tool("psrun", "-q", "-d", str(tmp_path), "-e", "task-clock,page-faults", targets["numbering"], "20")
        assert p.returncode == 0, p.stderr
    docs = sorted(map(str, tmp_path.glob("numbering.*.xml")))
    assert len(docs) == 2
    for options in ([], ["-c"]):
        data = json.loads(psprocess(*options, "-f", "json", *docs))
        from_json = {(r["source"], e["name"]): e["description"] for r in data["reports"] for e in r["events"]}
        from_csv = {(r["source"], r["name"]): r["description"]
                    for r in csv.DictReader(io.StringIO(psprocess(*options, "-f", "csv", *docs)))
                    if r["kind"] == "event"}
        assert from_json == from_csv
        assert len(from_json) == 4 and all(from_json.values()), from_json
        assert from_json[(docs[0], "page-faults")] == "Page faults"


def test_read_warns_that_it_will_return_the_model_and_read_document_does_not(run):
    """psuite.read is read_document with a FutureWarning naming the way to
    the analysis model; read_document and read_experiment warn of nothing,
    and the model's rows are the document's samples."""
    import warnings

    import psuite
    from psuite.model.experiment import Experiment
    from psuite.model.report import ProfileReport

    doc = str(run[0])  # the process total, with its call paths
    with pytest.warns(FutureWarning, match=r"psuite\.read_experiment\(\).*psuite\.read_document\(\)"):
        old = psuite.read(doc)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = psuite.read_document(doc)
        exp = psuite.read_experiment(doc)
    assert isinstance(old, ProfileReport) and isinstance(report, ProfileReport) and isinstance(exp, Experiment)
    assert old.to_records() == report.to_records()
    samples = sum(row["value"] for row in exp.to_records() if row["metric"] == "samples")
    assert samples == sum(row["samples"] for row in report.to_records()) > 0
