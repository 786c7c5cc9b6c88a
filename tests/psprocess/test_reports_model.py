"""A document's reports are rendered from its experiment, the analysis
model: a counting document's text, JSON, CSV and -x reports (the events
as the experiment's metric columns, the derived metrics evaluated on it,
the run's description kept on its location), a profile's (its samples by
source line, Experiment.lines, its sampled PCs, Experiment.addresses,
and each thread's call paths, the experiment's call tree).  They say what the
document model's writers say of the same document (the Python API
renders documents directly), and they follow the model when its values
change."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import psuite
from psuite.analysis import metrics
from psuite.analysis.experiments import from_report
from psuite.analysis.prepare import prepare
from psuite.formats.writers import csv_format, documents, json_format, text, text_profile, xml_format
from psuite.model.cube_names import cubepl_name, cubepl_names
from tests.conftest import run_tool
from tests.psprocess.test_original_documents import original_count_03

# a preset, a derived event, a count beyond int64, a perf spelling the reader renames
EVENTS = ('<hwpcevent type="preset" name="PAPI_TOT_CYC" derived="no">3000000</hwpcevent>'
          '<hwpcevent type="preset" name="PAPI_TOT_INS" derived="yes">1500000</hwpcevent>'
          '<hwpcevent type="native" name="big::count" derived="no">18446744073709551000</hwpcevent>'
          '<hwpcevent type="native" name="perf::TASK-CLOCK" derived="no">2000000000</hwpcevent>')


def _read(path: str):
    """The document as psprocess makes it ready (its metrics derived), in the document model."""
    return prepare(psuite.read_document(path), metrics.derive_standard)


@pytest.fixture
def document(tmp_path) -> str:
    text_ = original_count_03(4242, {"PAPI_L1_DCM": 12345})
    text_ = text_.replace('<hwpcevent type="preset" name="PAPI_L1_DCM"', EVENTS + '<hwpcevent type="preset" '
                          'name="PAPI_L1_DCM"')
    path = tmp_path / "count.xml"
    path.write_text(text_)
    return str(path)


@pytest.mark.parametrize("fmt, writer", [("text", text), ("json", json_format), ("csv", csv_format),
                                         ("xml", xml_format)])
def test_each_report_of_a_counting_document_is_the_documents_own(document, fmt, writer):
    """psprocess renders the experiment; the writer given the document
    itself (psuite.read) says the same, byte for byte."""
    out = run_tool("psprocess", "-f", fmt, document)
    assert out.returncode == 0, out.stderr
    report = _read(document)
    assert out.stdout.rstrip("\n") == writer.render([report]).rstrip("\n")
    assert "18446744073709551000" in out.stdout or fmt == "text"  # beyond int64, exact where the format is
    if fmt == "json":
        [r] = json.loads(out.stdout)["reports"]
        kinds = {e["name"]: (e["type"], e["derived"], e["counted_as"]) for e in r["events"]}
        assert kinds["PAPI_TOT_INS"] == ("preset", True, "")
        assert kinds["task-clock"] == ("native", False, "perf::TASK-CLOCK")
        assert [m["name"] for m in r["metrics"]] == [m.name for m in report.metrics] != []


def test_the_reports_follow_the_model(document):
    """Change an event's count in the experiment: its line and the derived
    metrics computed from it change with it (the writers read the model,
    not the document it came from)."""
    exp = from_report(_read(document), for_reports=True)
    cols = exp.columns
    row = cols.names.index("PAPI_TOT_INS")
    before = {m.name: m.value for m in documents.of_experiment(exp)[0].metrics}
    cols.ints[row] *= 2
    cols.floats[row] *= 2
    [c] = documents.of_experiment(exp)
    after = {m.name: m.value for m in c.metrics}
    ipc = next(name for name in before if "per cycle" in name.lower() and "instruction" in name.lower())
    assert after[ipc] == pytest.approx(2 * before[ipc])
    shown = text.render([exp])
    assert f"{3_000_000:,}" in shown and f"{2 * 1_500_000:,}" in shown and f"{1_500_000:,}" not in shown


def test_columns_expand_to_the_experiment_every_other_output_renders(document):
    """from_report's ordinary experiment is the columnar one expanded:
    the same metrics in the same order, the same values."""
    report = _read(document)
    plain, columnar = from_report(report), from_report(report, for_reports=True)
    assert len(columnar.metrics) < len(plain.metrics)
    assert columnar.metric("PAPI_L1_DCM").dtype == "UINT64" and columnar.metric("big::count").dtype == "DOUBLE"
    assert "PAPI_TOT_CYC" in columnar.metric_names() and "nothing" not in columnar.metric_names()
    root = columnar.columns.cnode
    assert columnar.stored("PAPI_TOT_CYC")[root, 0] == 3_000_000
    columnar.expand()
    assert columnar.columns is None
    assert [(m.name, m.display, m.dtype, m.kind, m.description) for m in columnar.metrics] == \
        [(m.name, m.display, m.dtype, m.kind, m.description) for m in plain.metrics]
    for m in plain.metrics:
        if not m.derived:
            assert np.array_equal(columnar.stored(m.name), plain.stored(m.name)), m.name
        else:
            assert np.allclose(columnar.derived_values(m.name), plain.derived_values(m.name)), m.name


def test_a_million_names_are_named_as_one_by_one():
    """cubepl_names, the C-speed naming of a report's events, gives what
    cubepl_name gives one name at a time whenever every name is plain, and
    unique names CubePL can read otherwise."""
    plain = [f"event_{i}" for i in range(1000)] + ["a:b", "c=d", "PAPI_TOT_CYC"]
    taken: set[str] = set()
    assert cubepl_names(plain, taken) == plain and taken == set(plain)
    odd = ["a-", "a", "_x", "fixed::y", "", "%z", "x_", "x", "line\nbreak", "call::z"]
    got = cubepl_names(odd, {"a_2"})
    assert len(set(got)) == len(odd) and "a_2" not in got
    assert all(cubepl_name(n, ()) == n for n in got)  # each a name CubePL's scanner reads whole


def _profile(targets, workdir, *options: str):
    p = run_tool("psrun", "-q", *options, "--profile", "ITIMER_PROF", "--period", "1000", "-o", "prof",
                 targets["work"], "0", "25", "0")
    assert p.returncode == 0, p.stderr
    return str(min(workdir.glob("prof.*.xml"), key=lambda path: len(path.name)))  # the process's document


@pytest.mark.parametrize("fmt, writer", [("json", json_format), ("csv", csv_format), ("xml", xml_format)])
@pytest.mark.parametrize("program, options", [("work", ()), ("work", ("--callpath",)),
                                              ("many_threads", ("-p", "--callpath"))],
                         ids=["flat", "callpath", "threads"])
def test_a_profiles_json_csv_and_xml_are_its_experiments(targets, workdir, program, options, fmt, writer):
    """psprocess -f json|csv|xml of a profile, flat, with call paths, and
    of a process with many threads' call paths, renders its experiment and
    says what the document's own rendering says; the call-tree rows
    (JSON's calltree, CSV's callpath rows) are the experiment's call paths
    of each thread."""
    args = ("0", "25", "0") if program == "work" else ("60",)
    p = run_tool("psrun", "-q", *options, "--profile", "ITIMER_PROF", "--period", "1000", "-o", "prof",
                 targets[program], *args)
    assert p.returncode == 0, p.stderr
    doc = str(min(workdir.glob("prof.*.xml"), key=lambda path: len(path.name)))
    out = run_tool("psprocess", "-f", fmt, doc)
    assert out.returncode == 0, out.stderr
    report = _read(doc)
    assert out.stdout.rstrip("\n") == writer.render([report]).rstrip("\n")
    if fmt == "json" and options:
        [r] = json.loads(out.stdout)["reports"]
        exp = from_report(report, for_reports=True)
        threads = {int(loc.attributes["thread"]) for loc in exp.locations}
        assert {row["thread"] for row in r["calltree"]} <= threads and r["calltree"]
        assert sum(row["exclusive"] for row in r["calltree"]) == int(exp.stored("samples").sum())


@pytest.mark.parametrize("options", [(), ("--callpath",)], ids=["flat", "callpath"])
def test_a_profiles_text_report_is_its_experiments(targets, workdir, options):
    """psprocess's text report of a profile, flat or with call paths, is
    rendered from its experiment's source lines, and says what the
    document's own rendering says (with and without a threshold)."""
    doc = _profile(targets, workdir, *options)
    for threshold in ((), ("--threshold", "5")):
        out = run_tool("psprocess", *threshold, doc)
        assert out.returncode == 0, out.stderr
        expected = text_profile.render_one(_read(doc), float(threshold[1]) if threshold else 0.0)
        assert out.stdout.startswith(expected), out.stdout
        assert ("--calltree" in out.stdout[len(expected):]) == bool(options)  # the hint: call paths are there
    exp = from_report(_read(doc), for_reports=True)
    assert exp.lines is not None and sum(exp.lines.samples) == sum(loc.samples for loc in _read(doc).locations) > 0
    assert set(exp.lines.location.tolist()) == ({-1} if options else {0})  # with threads: the process's
    # what the text report converts: the same source lines, without the call tree
    flat = from_report(_read(doc), for_reports=True, call_paths=False)
    assert flat.lines.samples == exp.lines.samples and set(flat.lines.location.tolist()) == {0}
    assert flat.attributes.get("psuite::flat") and len(flat.cnodes) <= len(exp.cnodes)


def test_a_profiles_text_report_follows_the_model(targets, workdir):
    """Move every sample of the source lines to one function, and triple
    them, in the experiment: the report's function summary shows only it,
    with all of them."""
    exp = from_report(_read(_profile(targets, workdir)), for_reports=True)
    table = exp.lines
    table.functions[:] = ["moved_here"] * len(table)
    table.samples[:] = [3 * n for n in table.samples]
    shown = text.render([exp])
    summary = shown.split("Function Summary")[1].split("Function:File:Line Summary")[0]
    rows = [line.split() for line in summary.splitlines() if "%" in line and "Self %" not in line]
    assert {row[3] for row in rows} == {"moved_here"}
    assert sum(int(row[0].replace(",", "")) for row in rows) == sum(table.samples) > 0


def test_an_event_listed_twice_is_shown_with_the_count_its_metrics_use(tmp_path):
    """A document that lists an event twice: the reports show it once, with
    its last count, the one psmetrics derives from (the document model's
    rendering listed both while computing the metrics from the last)."""
    doc = tmp_path / "twice.xml"
    doc.write_text(original_count_03(3, {"PAPI_TOT_CYC": 1000, "PAPI_TOT_INS": 500}).replace(
        '<hwpcevent type="preset" name="PAPI_TOT_INS"',
        '<hwpcevent type="preset" name="PAPI_TOT_CYC" derived="no">7</hwpcevent><hwpcevent type="preset" '
        'name="PAPI_TOT_INS"'))
    out = run_tool("psprocess", "-f", "json", str(doc))
    assert out.returncode == 0, out.stderr
    [r] = json.loads(out.stdout)["reports"]
    assert [(e["name"], e["count"]) for e in r["events"]] == [("PAPI_TOT_CYC", 7), ("PAPI_TOT_INS", 500)]
    ipc = next(m["value"] for m in r["metrics"] if m["name"] == "Instructions per cycle")
    assert ipc == pytest.approx(500 / 7)


def test_a_profiles_call_tree_rows_follow_the_model(targets, workdir):
    """Change a call path's samples in the experiment: the JSON call-tree
    row of that path says the new count (the rows are the model's)."""
    doc = _profile(targets, workdir, "--callpath")
    exp = from_report(_read(doc), for_reports=True)
    samples = exp.values["samples"]
    c, j = (int(x[0]) for x in np.nonzero(samples))
    samples[c, j] += 1000
    [r] = json.loads(json_format.render([exp]))["reports"]
    leaf = [row for row in r["calltree"] if row["exclusive"] >= 1000]
    assert len(leaf) == 1 and leaf[0]["depth"] == len(exp.path(c)) - 1  # below the program's root


@pytest.mark.parametrize("fmt, writer", [("text", text), ("json", json_format), ("csv", csv_format),
                                         ("xml", xml_format)])
def test_a_consumed_document_reports_as_its_document(tmp_path, fmt, writer):
    """psprocess lets each Event object go as it converts it (consume):
    a preset, a derived event and a perf spelling keep their types and
    spellings in every report, byte for byte as the document's own."""
    text_ = original_count_03(4242, {"PAPI_L1_DCM": 12345})
    text_ = text_.replace('<hwpcevent type="preset" name="PAPI_L1_DCM"',
                          EVENTS.replace("18446744073709551000", "77") + '<hwpcevent type="preset" name="PAPI_L1_DCM"')
    path = tmp_path / "count.xml"
    path.write_text(text_)
    out = run_tool("psprocess", "-f", fmt, str(path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.rstrip("\n") == writer.render([_read(str(path))]).rstrip("\n")


def test_consuming_a_document_leaves_its_events_readable(document, tmp_path):
    """After a consuming conversion the report's events are read from the
    experiment's columns: the same names, counts, types and spellings."""
    text_ = Path(document).read_text().replace("18446744073709551000", "77")
    path = tmp_path / "small.xml"
    path.write_text(text_)
    before = [(e.name, e.count, e.type, e.derived, e.counted_as) for e in _read(str(path)).events]
    report = _read(str(path))
    exp = from_report(report, for_reports=True, consume=True)
    assert exp.columns.floats is None and exp.columns.integer.all()  # every count an int64: no float column
    assert [(e.name, e.count, e.type, e.derived, e.counted_as) for e in report.events] == before
    assert len(report.events) == len(before) and report.events[-1].name == before[-1][0]
