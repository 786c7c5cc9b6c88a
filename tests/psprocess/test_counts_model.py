"""A counting document's reports (text, JSON, CSV, -x) are rendered from
its experiment, the analysis model: the events as the experiment's metric
columns, the derived metrics evaluated on it, the run's description kept
on its location.  They say what the document model's writers say of the
same document (the Python API renders documents directly), and they
follow the model when its values change."""

from __future__ import annotations

import json

import numpy as np
import pytest

import psuite
from psuite.analysis import metrics
from psuite.analysis.experiments import from_report
from psuite.analysis.prepare import prepare
from psuite.formats.writers import counts, csv_format, json_format, text, xml_format
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
    return prepare(psuite.read(path), metrics.derive_standard)


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
    exp = from_report(_read(document), columnar=True)
    cols = exp.columns
    row = cols.names.index("PAPI_TOT_INS")
    before = {m.name: m.value for m in counts.of_experiment(exp)[0].metrics}
    cols.ints[row] *= 2
    cols.floats[row] *= 2
    [c] = counts.of_experiment(exp)
    after = {m.name: m.value for m in c.metrics}
    ipc = next(name for name in before if "per cycle" in name.lower() and "instruction" in name.lower())
    assert after[ipc] == pytest.approx(2 * before[ipc])
    shown = text.render([exp])
    assert f"{3_000_000:,}" in shown and f"{2 * 1_500_000:,}" in shown and f"{1_500_000:,}" not in shown


def test_columns_expand_to_the_experiment_every_other_output_renders(document):
    """from_report's ordinary experiment is the columnar one expanded:
    the same metrics in the same order, the same values."""
    report = _read(document)
    plain, columnar = from_report(report), from_report(report, columnar=True)
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
