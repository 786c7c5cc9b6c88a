"""What psprocess -c lists of the reports it combined (JSON "reports" and
"totals", CSV rows, -x members) is rendered from the model: a combination
of counting reports from its experiment, each member one location with
its run's description and the events and metrics its report has (an event
a run did not count is not a count of 0); a combination of profiles from
each member's own experiment.  Each member says what psprocess says of
that document alone, and the listing follows the experiment when its
values change."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from psuite.analysis import combine, experiments, inputs, metrics, prepare
from psuite.formats.writers import csv_format, json_format, xml_format
from psuite.model.report import MultiReport
from tests.conftest import run_tool
from tests.test_formats_agree import mpi_work_run


def _psprocess(*args: str) -> str:
    out = run_tool("psprocess", *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _counted(path: str) -> dict[str, int]:
    """The events a document lists, read with lxml only."""
    return {e.get("name"): int(e.text) for e in etree.parse(path).getroot().iter("hwpcevent")}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> list[str]:
    """Five real counting runs, ranks 0..4 (rank order differs from file-name order only
    from 10 on, so ranks 10 and 11 too), the last two counting one event more."""
    d = tmp_path_factory.mktemp("mixed")
    out = []
    for rank in (0, 1, 2, 10, 11):
        events = "task-clock,page-faults" + (",context-switches" if rank >= 10 else "")
        p = run_tool("psrun", "-q", "-d", str(d), "-e", events, "/bin/true",
                     env={"OMPI_COMM_WORLD_RANK": str(rank)})
        assert p.returncode == 0, p.stderr
    out = sorted(str(x) for x in d.glob("*.xml"))
    assert len(out) == 5
    return out


def test_each_member_lists_what_its_report_counted(mixed):
    doc = json.loads(_psprocess("-c", "-f", "json", *mixed))
    assert [r["rank"] for r in doc["reports"]] == [0, 1, 2, 10, 11]  # system-tree order, not file names'
    for r in doc["reports"]:
        counted = _counted(r["source"])
        assert {e["name"]: e["count"] for e in r["events"]} == counted
        rate = [m for m in r["metrics"] if m["name"] == "Context switches per second"]
        assert bool(rate) == ("context-switches" in counted), r["rank"]
    stats = {s["name"]: s for s in doc["statistics"]}
    assert stats["context-switches"]["count"] == 2 and stats["task-clock"]["count"] == 5
    assert stats["Context switches per second"]["count"] == 2


def test_each_member_is_what_psprocess_says_of_its_document_alone(mixed):
    """JSON and CSV: the member's report is the document's own report,
    value for value (the combination names and numbers it as the document does)."""
    doc = json.loads(_psprocess("-c", "-f", "json", *mixed))
    by_source = {r["source"]: r for r in doc["reports"]}
    rows = _psprocess("-c", "-f", "csv", *mixed).splitlines()
    for path in mixed:
        [alone] = json.loads(_psprocess("-f", "json", path))["reports"]
        assert by_source[path] == alone
        own = _psprocess("-f", "csv", path).splitlines()
        assert [row for row in rows[1:] if row.startswith(path + ",")] == own[1:]


def test_x_writes_each_member_with_its_own_events(mixed, tmp_path):
    text = _psprocess("-c", "-x", *mixed)
    root = etree.fromstring(text.encode())
    assert root.tag == "multihwpcreport"
    members = root.findall("hwpcreport")
    assert len(members) == 5
    by_pid = {int(etree.parse(p).getroot().findtext("pid")): p for p in mixed}
    for m in members:
        events = {e.get("name"): int(e.text) for e in m.iter("hwpcevent")}
        assert events == _counted(by_pid[int(m.findtext("pid"))])


def test_the_listing_follows_the_combinations_experiment(mixed):
    """Double an event's counts in the combination's experiment: the JSON,
    CSV and XML listings and nothing else change (they read the model, not
    the documents the combination keeps)."""
    reports = [prepare.prepare(inputs.load(p), metrics.derive_standard) for p in mixed]
    multi = combine.summarize(reports)
    cols = multi.experiment.columns
    assert cols is not None and cols.listed is not None  # the events as columns, where each report has them
    row = cols.displays.index("page-faults")
    before = json.loads(json_format.render([multi]))
    cols.ints[row] *= 2
    cols.floats[row] *= 2
    after = json.loads(json_format.render([multi]))
    for b, a in zip(before["reports"], after["reports"], strict=True):
        assert [e["count"] for e in a["events"] if e["name"] == "page-faults"] == \
            [2 * e["count"] for e in b["events"] if e["name"] == "page-faults"]
        faults = [m["value"] for m in a["metrics"] if m["name"] == "Page faults per second"]
        assert faults == pytest.approx([2 * m["value"] for m in b["metrics"] if m["name"] == "Page faults per second"])
    doubled = {r["source"]: next(e["count"] for e in r["events"] if e["name"] == "page-faults")
               for r in after["reports"]}
    csv_rows = [line.split(",") for line in csv_format.render([multi]).splitlines()[1:]]
    assert {row[0]: int(row[6]) for row in csv_rows if row[5] == "page-faults"} == doubled
    xml = etree.fromstring(xml_format.render([multi]).encode())
    assert sorted(int(e.text) for e in xml.iter("hwpcevent") if e.get("name") == "page-faults") == \
        sorted(doubled.values())
    # the documents the combination was made of are as they were
    assert [next(e.count for e in r.events if e.name == "page-faults") for r in sorted(
        multi.reports, key=lambda r: r.rank)] == [c // 2 for _, c in sorted(
            (r["rank"], doubled[r["source"]]) for r in after["reports"])]


def test_the_exports_get_the_expanded_experiment_and_the_combination_keeps_its_columns(mixed):
    reports = [prepare.prepare(inputs.load(p), metrics.derive_standard) for p in mixed]
    multi = combine.summarize(reports)
    exp = experiments.from_report(multi)
    assert exp.columns is None and multi.experiment.columns is not None
    assert exp.stored("task_clock")[0].tolist() == multi.experiment.stored("task_clock")[0].tolist()
    listed = multi.experiment.columns.listed
    row = multi.experiment.columns.displays.index("context-switches")
    assert listed[row].tolist() == [loc.rank >= 10 for loc in multi.experiment.locations]
    assert experiments.from_report(multi, for_reports=True) is multi.experiment
    assert isinstance(multi, MultiReport)


def test_two_runs_of_the_same_ranks_keep_each_documents_values(tmp_path):
    """Runs of the same places are converted together, side by side, as
    ranks are: each location of the cube holds its own document's values,
    events and derived metrics, as that document's cube alone has them."""
    import psuite

    (tmp_path / "first").mkdir()
    docs, _ = mpi_work_run(tmp_path / "first", 2)
    first = sorted(str(x) for x in docs.glob("*.xml"))
    again = tmp_path / "again"
    again.mkdir()
    second = []
    for doc in first:  # the same ranks, other pids and counts: what a second run writes
        text = re.sub(r"<pid>(\d+)</pid>", lambda m: f"<pid>{int(m.group(1)) + 100000}</pid>", Path(doc).read_text())
        text = re.sub(r'(name="perf::PAGE-FAULTS"[^>]*>)(\d+)<', lambda m: f"{m.group(1)}{int(m.group(2)) + 7}<", text)
        second.append(str(again / Path(doc).name))
        Path(second[-1]).write_text(text)
    _psprocess("-c", "--cube", str(tmp_path / "c.cubex"), *first, *second)
    exp = psuite.read_experiment(str(tmp_path / "c.cubex"))
    assert len(exp.locations) == 4
    for k, loc in enumerate(exp.locations):
        doc = (second if loc.process.endswith("(run 2)") else first)[int(loc.attributes["rank"])]
        _psprocess("--cube", str(tmp_path / f"own{k}.cubex"), doc)
        own = psuite.read_experiment(str(tmp_path / f"own{k}.cubex"))
        for m in own.metrics:
            mine = own.derived_values(m.name) if m.derived else own.stored(m.name)
            theirs = exp.derived_values(m.name) if m.derived else exp.stored(m.name)
            assert theirs[0, k] == pytest.approx(mine[0, 0]), (m.name, loc.process)
    faults = exp.stored("page_faults")[0]
    runs = [loc.process.endswith("(run 2)") for loc in exp.locations]
    assert sum(f for f, again_ in zip(faults, runs, strict=True) if again_) == \
        sum(f for f, again_ in zip(faults, runs, strict=True) if not again_) + 14


def test_combined_profiles_list_each_profile_as_its_own_report(tmp_path, targets):
    """Call-path profiles of two ranks: each member of -c's JSON is the
    document's own JSON report (its source lines, sampled PCs and call
    tree from its experiment); the -x members' samples are the members'."""
    for rank in (0, 1):
        p = run_tool("psrun", "-q", "-d", str(tmp_path), "--callpath", "--profile", "ITIMER_PROF", targets["work"],
                     "1", str(150 * (rank + 1)), "0", env={"OMPI_COMM_WORLD_RANK": str(rank)})
        assert p.returncode == 0, p.stderr
    paths = sorted(str(x) for x in tmp_path.glob("*.xml") if not x.name.endswith(".callpaths.xml"))
    assert len(paths) == 2
    doc = json.loads(_psprocess("-c", "-f", "json", *paths))
    assert doc["schema"] == "psuite.multiprofile/1" and doc["callpath_statistics"]
    for member, path in zip(doc["reports"], paths, strict=True):
        [alone] = json.loads(_psprocess("-f", "json", path))["reports"]
        assert member == alone
        assert member["calltree"] and sum(loc["samples"] for loc in member["locations"]) > 0
    xml = etree.fromstring(_psprocess("-c", "-x", *paths).encode())
    assert xml.tag == "multihwpcprofilereport"
    totals = [sum(int(line.text) for line in m.iter("line")) for m in xml.findall("hwpcprofilereport")]
    assert totals == [sum(loc["samples"] for loc in r["locations"]) for r in doc["reports"]]
    assert np.all(np.asarray(totals) > 0)
