"""The views of an experiment (psuite.analysis.experiment_views, stat,
dump) on experiments built with the model API; every expected number is
computed here from the arrays the test put in, with plain Python (the
subtree of a call path, sums, statistics), not with the model's views."""

from __future__ import annotations

import csv
import io
import json
import re
import statistics

import numpy as np
import pytest

from psuite.analysis import algebra, dump, experiment_views, stat
from psuite.errors import UsageError
from psuite.model.experiment import Experiment, Location, Metric, Region

# main(0) -> foo(1) -> bar(2); main -> bar(3); main -> rec(4) -> rec(5) -> bar(6)
TREE = [("main", None), ("foo", 0), ("bar", 1), ("bar", 0), ("rec", 0), ("rec", 4), ("bar", 5)]
NLOC = 3


def build(seed: int = 1, derived: bool = True) -> tuple[Experiment, dict[str, list[list[float]]]]:
    """An experiment with a nested metric (mpi under time), an integer
    metric, a derived one; its values as plain lists too."""
    rng = np.random.default_rng(seed)
    e = Experiment(attributes={"source": "built.cubex"})
    e.add_metric(Metric("time", unit="sec"))
    e.add_metric(Metric("mpi", unit="sec", parent=0))
    e.add_metric(Metric("samples", dtype="UINT64"))
    if derived:
        e.add_metric(Metric("rate", kind="POSTDERIVED", expression="metric::samples() / metric::time()"))
    names = {}
    for name, _ in TREE:
        if name not in names:
            names[name] = e.add_region(Region(name))
    for name, parent in TREE:
        e.add_cnode(names[name], parent)
    e.locations = [Location(rank=r, process=f"process {r}") for r in range(NLOC)]
    plain = {}
    for metric, integer in (("time", False), ("mpi", False), ("samples", True)):
        a = e.zeros(metric)
        v = rng.integers(0, 50, size=a.shape) if integer else np.round(rng.random(a.shape) * 10, 3)
        a[:] = v
        plain[metric] = v.tolist()
    e.check()
    return e, plain


def subtree(i: int, tree: list[tuple[str, int | None]] = TREE) -> list[int]:
    """Call path i and every call path below it, in a tree of (name, parent index) listed parents first."""
    out = [i]
    for k, (_, parent) in enumerate(tree):
        if parent is not None and parent in out:
            out.append(k)
    return out


def incl(values: list[list[float]], i: int, loc: int) -> float:
    return sum(values[k][loc] for k in subtree(i))


def less_children(plain: dict, metric: str) -> list[list[float]]:
    """time as CUBE shows the expanded metric (metric tree exclusive): its
    stored value, which includes mpi's, less mpi."""
    if metric == "time":
        return [[t - m for t, m in zip(rt, rm, strict=True)] for rt, rm in zip(plain["time"], plain["mpi"],
                                                                                strict=True)]
    return plain[metric]


def test_json_report_values_and_derived_metric():
    e, plain = build()
    doc = json.loads("".join(experiment_views.render(e, "json")))
    assert doc["schema"] == "psuite.experiment/1"
    assert [m["name"] for m in doc["metrics"]] == ["time", "mpi", "samples", "rate"]
    shown = plain["time"]  # each metric as stored, by default
    for i, cp in enumerate(doc["callpaths"]):
        assert cp["name"] == TREE[i][0] and cp["parent"] == TREE[i][1]
        for metric, values in (("time", shown), ("mpi", plain["mpi"]), ("samples", plain["samples"])):
            assert cp["exclusive"][metric] == pytest.approx(sum(values[i]))
            assert cp["inclusive"][metric] == pytest.approx(sum(incl(values, i, j) for j in range(NLOC)))
        # a ratio of sums over the threads, of time alone (its expression names time, not its children)
        t = sum(incl(plain["time"], i, j) for j in range(NLOC))
        s = sum(incl(plain["samples"], i, j) for j in range(NLOC))
        assert cp["inclusive"]["rate"] == pytest.approx(s / t)
    assert isinstance(doc["callpaths"][0]["inclusive"]["samples"], int)
    total_samples = sum(map(sum, plain["samples"]))
    assert doc["metrics"][2]["total"] == total_samples
    assert doc["metrics"][0]["total"] == pytest.approx(sum(map(sum, shown)))
    assert doc["metrics"][3]["total"] == pytest.approx(total_samples / sum(map(sum, plain["time"])))
    for j, loc in enumerate(doc["locations"]):
        assert loc["rank"] == j
        assert loc["totals"]["samples"] == sum(row[j] for row in plain["samples"])


def test_csv_report_rows():
    e, plain = build(2)
    rows = list(csv.DictReader(io.StringIO("".join(experiment_views.render(e, "csv")))))
    assert tuple(rows[0].keys()) == experiment_views.CSV_COLUMNS
    paths = {r["id"]: r["path"] for r in rows if r["kind"] == "callpath"}
    assert paths["6"] == "main;rec;rec;bar"
    for r in rows:
        if r["kind"] == "callpath" and r["metric"] == "samples":
            i = int(r["id"])
            assert int(r["exclusive"]) == sum(plain["samples"][i])
            assert int(r["inclusive"]) == sum(incl(plain["samples"], i, j) for j in range(NLOC))
            assert int(r["depth"]) == len(r["path"].split(";")) - 1
        elif r["kind"] == "location" and r["metric"] == "mpi":
            j = int(r["id"])
            assert float(r["inclusive"]) == pytest.approx(sum(row[j] for row in plain["mpi"]))
    assert sum(r["kind"] == "callpath" for r in rows) == len(TREE) * 4


def test_text_report_tree():
    e, plain = build(3)
    text = "".join(experiment_views.render(e))
    assert text.startswith("experiment: 4 metrics, 7 call paths, 3 locations (3 processes)")
    assert "source: built.cubex" in text
    # tables of three metrics at most: time, mpi, samples; then rate
    first = text.index("Call tree, time, mpi, samples (inclusive and exclusive, summed over 3 locations):")
    second = text.index("Call tree, rate (")
    tree = text[first:second].strip().splitlines()[2:]
    assert len(tree) == len(TREE)
    for i, line in enumerate(tree):
        label = re.search(r"(\s*)(\w+) \(id=(\d+)\)$", line)
        assert int(label.group(3)) == i and label.group(2) == TREE[i][0]
        cells = line[:label.start()].split()
        # columns: time incl, time excl, mpi incl, mpi excl, samples incl, samples excl
        assert int(cells[4]) == sum(incl(plain["samples"], i, j) for j in range(NLOC))
        assert int(cells[5]) == sum(plain["samples"][i])
    depth = [len(re.match(r".*?(\s*)\w+ \(id=\d+\)$", line).group(1)) for line in tree]
    assert depth[2] - depth[1] == 2 and depth[6] - depth[5] == 2
    rate = text[second:].strip().splitlines()
    assert rate[1].split() == ["rate", "incl", "rate", "excl", "call", "path"] and len(rate) == 2 + len(TREE)
    per_location = text[text.index("Per location (totals):"):first].strip().splitlines()
    assert per_location[1].split() == ["location", "time", "mpi", "samples", "rate"]
    assert [int(line.split()[-2]) for line in per_location[2:]] == \
        [sum(row[j] for row in plain["samples"]) for j in range(NLOC)]


def test_text_report_of_one_call_path_is_its_metrics():
    e = Experiment()
    e.add_metric(Metric("PAPI_TOT_CYC", dtype="UINT64"))
    e.add_cnode(e.add_region(Region("program")), None)
    e.locations = [Location()]
    e.zeros("PAPI_TOT_CYC")[:] = 12345
    text = "".join(experiment_views.render(e))
    assert "Call tree" not in text and "Per location" not in text
    assert text.splitlines()[-1].split() == ["PAPI_TOT_CYC", "occ", "UINT64", "exclusive", "12345"]


def test_inclusive_stored_metric_shown_exclusive():
    """A metric stored INCLUSIVE (as Score-P writes some): its exclusive view
    is a call path's value minus its children's."""
    e, _ = build(4)
    inclusive = [[10.0, 1.0, 0.0], [6.0, 1.0, 0.0], [2.0, 0.0, 0.0], [1.0, 0.0, 0.0], [3.0, 0.0, 0.0],
                 [2.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
    e.add_metric(Metric("visits", dtype="UINT64", kind="INCLUSIVE"))
    e.zeros("visits")[:] = inclusive
    doc = json.loads("".join(experiment_views.render(e, "json")))
    kids = {i: [k for k, (_, p) in enumerate(TREE) if p == i] for i in range(len(TREE))}
    for i, cp in enumerate(doc["callpaths"]):
        assert cp["inclusive"]["visits"] == sum(inclusive[i])
        assert cp["exclusive"]["visits"] == sum(inclusive[i]) - sum(sum(inclusive[k]) for k in kids[i])
    assert doc["metrics"][-1]["total"] == 11


def test_metric_tree_exclusive_subtracts_child_metrics():
    e, plain = build(5)
    # inclusive (the default): values as stored, which in CUBE already hold the child metrics'
    doc = json.loads("".join(experiment_views.render(e, "json")))
    assert doc["metrics"][0]["total"] == pytest.approx(sum(map(sum, plain["time"])))
    doc = json.loads("".join(experiment_views.render(e, "json", metric_tree="excl")))
    shown = less_children(plain, "time")
    assert doc["metrics"][0]["total"] == pytest.approx(sum(map(sum, shown)))
    assert doc["callpaths"][1]["inclusive"]["time"] == pytest.approx(sum(incl(shown, 1, j) for j in range(NLOC)))
    assert doc["metrics"][1]["total"] == pytest.approx(sum(map(sum, plain["mpi"])))
    # a derived metric names time as stored, whatever the view
    assert doc["metrics"][3]["total"] == pytest.approx(sum(map(sum, plain["samples"])) /
                                                      sum(map(sum, plain["time"])))
    text = "".join(experiment_views.render(e, metric_tree="excl"))
    assert "Metrics (each metric less its child metrics):" in text


# ---------------------------------------------------------------- stat


def expected_stats(values: list[float]) -> list[float]:
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return [len(values), sum(values), statistics.mean(values), statistics.variance(values), min(values), q1, median,
            q3, max(values)]


def test_stat_routine_rows():
    e, plain = build(6)
    rows = list(csv.DictReader(io.StringIO(stat.run(e, metrics=["samples"], routines=["main", "rec"],
                                                     fmt="csv"))))
    got = {(r["routine"], r["view"], r["callee"]): [float(r[k]) for k in stat.STATISTICS] for r in rows}
    s = plain["samples"]
    per_loc = {  # per location, computed from the tree by hand
        ("main", "incl", ""): [incl(s, 0, j) for j in range(NLOC)],
        ("main", "excl", ""): [s[0][j] for j in range(NLOC)],
        ("main", "callee", "foo"): [incl(s, 1, j) for j in range(NLOC)],
        ("main", "callee", "bar"): [incl(s, 3, j) for j in range(NLOC)],
        ("main", "callee", "rec"): [incl(s, 4, j) for j in range(NLOC)],
        # rec calls itself: its inclusive value counts the outer call only
        ("rec", "incl", ""): [incl(s, 4, j) for j in range(NLOC)],
        ("rec", "excl", ""): [s[4][j] + s[5][j] for j in range(NLOC)],
        ("rec", "callee", "rec"): [incl(s, 5, j) for j in range(NLOC)],
        ("rec", "callee", "bar"): [incl(s, 6, j) for j in range(NLOC)],
    }
    assert set(got) == set(per_loc)
    for key, values in per_loc.items():
        assert got[key] == pytest.approx(expected_stats([float(v) for v in values])), key
    assert [r["routine"] + r["view"] + r["callee"] for r in rows][:5] == \
        ["mainincl", "mainexcl", "maincalleefoo", "maincalleebar", "maincalleerec"]


def test_stat_text_labels_and_default_routine():
    e, plain = build(7)
    text = stat.run(e, metrics=["time"])
    lines = text.splitlines()
    assert lines[0].split() == ["MetricRoutine", *stat.HEADINGS]
    assert [line.split()[1] for line in lines[1:]] == ["INCL(main)", "EXCL(main)", "foo", "bar", "rec"]
    shown = plain["time"]
    total = sum(incl(shown, 0, j) for j in range(NLOC))
    assert float(lines[1].split()[3]) == pytest.approx(total, rel=1e-8)
    assert int(lines[1].split()[2]) == NLOC


def test_stat_derived_per_location():
    e, plain = build(8)
    rows = json.loads(stat.run(e, metrics=["rate"], fmt="json"))["rows"]
    first = rows[0]
    assert (first["routine"], first["view"]) == ("main", "incl")
    ratios = [incl(plain["samples"], 0, j) / incl(plain["time"], 0, j) for j in range(NLOC)]
    assert [first[k] for k in stat.STATISTICS] == pytest.approx(expected_stats(ratios))


def test_stat_top_flat_profile():
    e, plain = build(9)
    doc = json.loads(stat.run(e, metrics=["samples", "time"], top=2, fmt="json"))
    s = plain["samples"]
    by_region = {"main": [0], "foo": [1], "bar": [2, 3, 6], "rec": [4, 5]}
    excl = {r: sum(sum(s[i]) for i in ids) for r, ids in by_region.items()}
    order = sorted(excl, key=lambda r: -excl[r])[:2]
    assert [x["region"] for x in doc["regions"]] == order
    outer = {"main": [0], "foo": [1], "bar": [2, 3, 6], "rec": [4]}
    for x in doc["regions"]:
        assert x["exclusive"]["samples"] == excl[x["region"]]
        assert x["inclusive"]["samples"] == sum(incl(s, i, j) for i in outer[x["region"]] for j in range(NLOC))
    text = stat.run(e, metrics=["samples"], top=10)
    assert text.splitlines()[0].split() == ["Region", "samples", "excl", "samples", "incl"]
    assert len(text.splitlines()) == 5


def test_stat_refuses_unknown_names():
    e, _ = build()
    with pytest.raises(UsageError, match="no metric 'cycles'.*time, mpi, samples, rate"):
        stat.run(e, metrics=["cycles"])
    with pytest.raises(UsageError, match="no routine 'solve'"):
        stat.run(e, routines=["solve"])


# ---------------------------------------------------------------- dump


def test_dump_selections():
    e, _ = build()
    assert dump.select_callpaths(e, "leafs") == [2, 3, 6]
    assert dump.select_callpaths(e, "roots") == [0]
    assert dump.select_callpaths(e, "level=1") == [1, 3, 4]
    assert dump.select_callpaths(e, "level>1") == [2, 5, 6]
    assert dump.select_callpaths(e, "level<1") == [0]
    assert dump.select_callpaths(e, "name=/^(foo|rec)$/") == [1, 4, 5]
    assert dump.select_callpaths(e, "0,2-4") == [0, 2, 3, 4]
    with pytest.raises(UsageError, match="ids go from 0 to 6"):
        dump.select_callpaths(e, "3-9")
    with pytest.raises(UsageError, match="leafs, roots, level=N"):
        dump.select_callpaths(e, "bar")
    with pytest.raises(UsageError, match="give ids and ranges"):
        dump.select_callpaths(e, "1,,2")
    assert dump.select_locations(e, "aggr") is None
    assert dump.select_locations(e, "0,2") == [0, 2]


def test_dump_csv2_inclusive_per_thread_and_new_metric():
    e, plain = build(10)
    text = "".join(dump.run(e, fmt="csv2", metrics="samples,mpi,spt:metric::samples()/metric::time()",
                            callpaths="1,5", calltree="incl"))
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["Cnode ID", "Thread ID", "samples", "mpi", "spt"]
    assert [(r[0], r[1]) for r in rows[1:]] == [(c, t) for c in ("1", "5") for t in ("0", "1", "2")]
    for r in rows[1:]:
        i, j = int(r[0]), int(r[1])
        assert int(r[2]) == incl(plain["samples"], i, j)
        assert float(r[3]) == pytest.approx(incl(plain["mpi"], i, j))
        t = incl(plain["time"], i, j)
        assert float(r[4]) == pytest.approx(incl(plain["samples"], i, j) / t if t else 0.0)


def test_dump_aggregated_text_and_gnuplot():
    e, plain = build(11)
    text = "".join(dump.run(e, metrics="time", callpaths="roots", threads="aggr", calltree="incl"))
    assert "Print out the data of the metric time (inclusive along the call tree)" in text
    line = next(x for x in text.splitlines() if x.startswith("main(id=0)"))
    assert float(line.split()[1]) == pytest.approx(sum(incl(plain["time"], 0, j) for j in range(NLOC)), rel=1e-8)
    expanded = "".join(dump.run(e, metrics="time", callpaths="1", threads="aggr", metric_tree="excl"))
    line = next(x for x in expanded.splitlines() if x.startswith("foo(id=1)"))
    assert float(line.split()[1]) == pytest.approx(sum(less_children(plain, "time")[1]), rel=1e-8)
    assert "All threads" in text
    gp = "".join(dump.run(e, fmt="gnuplot", metrics="samples", callpaths="leafs"))
    data = [line.split() for line in gp.splitlines() if line and not line.startswith("#")]
    assert len(data) == 3 * NLOC
    for c, t, v in data:
        assert int(v) == plain["samples"][int(c)][int(t)]
    assert gp.count("# Print out the data of the metric samples") == 1


def test_dump_csv_blocks_and_regions():
    e, plain = build(12)
    text = "".join(dump.run(e, fmt="csv", metrics="samples,mpi", regions=True, threads="0"))
    blocks = text.split("\n\n")
    assert len(blocks) == 2
    samples = [row for row in csv.reader(io.StringIO(blocks[0]))]
    s = plain["samples"]
    # regions main(0) foo(1) bar(2) rec(3); exclusive: every call path of the region
    assert samples == [["0", "0", str(s[0][0])], ["1", "0", str(s[1][0])],
                       ["2", "0", str(s[2][0] + s[3][0] + s[6][0])], ["3", "0", str(s[4][0] + s[5][0])]]


def test_dump_r_script():
    e, plain = build(13)
    text = "".join(dump.run(e, fmt="R", metrics="samples", callpaths="0-1", threads="1-2"))
    m = re.search(r"`samples` <- matrix\(c\(([^)]*)\), nrow = 2, ncol = 2, byrow = TRUE,\s*"
                  r'dimnames = list\(c\("main\(id=0\)", "foo\(id=1\)"\), c\("1", "2"\)\)\)', text)
    assert m, text
    assert [int(v) for v in m.group(1).split(", ")] == [plain["samples"][i][j] for i in (0, 1) for j in (1, 2)]


def test_dump_refuses_bad_metrics():
    e, _ = build()
    with pytest.raises(UsageError, match="no metric 'cycles'"):
        dump.compute(e, metrics="cycles")
    with pytest.raises(UsageError, match="no metric 'cyc'"):
        dump.compute(e, metrics="metric::samples()/metric::cyc()")
    with pytest.raises(UsageError, match="CubePL: unexpected"):
        dump.compute(e, metrics="x:metric::samples() / / 2")


# ---------------------------------------------------------------- compare


def test_comparison_report():
    a, _ = build(14, derived=False)
    b, _ = build(14, derived=False)
    b.values["samples"][2, 1] += 7
    b.attributes["source"] = "b.cubex"
    same = algebra.compare(a, a)
    assert experiment_views.render_comparison(same, "a", "a") == "a and a are equal.\n"
    moved = algebra.compare(a, b)
    text = experiment_views.render_comparison(moved, "a.cubex", "b.cubex")
    assert text.splitlines()[0] == "a.cubex and b.cubex are not equal."
    assert "main;foo;bar" in text and "+7" not in text.splitlines()[0]
    tol = [algebra.Tolerance("samples", absolute=10)]
    within = algebra.compare(a, b, tolerances=tol)
    assert experiment_views.render_comparison(within, "a", "b", tol).startswith(
        "a and b differ, within the tolerances (samples 10).")
    doc = json.loads(experiment_views.render_comparison(moved, "a", "b", (), "json"))
    rate = [m for m in doc["moved"] if m["metric"] == "samples"]
    assert len(rate) == 1 and rate[0]["path"] == ["main", "foo", "bar"] and rate[0]["delta"] == 7


def test_least_and_greatest_metrics_aggregate_by_min_and_max():
    """Score-P's min_time and max_time (MINDOUBLE, MAXDOUBLE): over threads
    and call paths their least or greatest value, never a sum."""
    e, _ = build(15, derived=False)
    hi = [[float(1 + (3 * i + 5 * j) % 7) for j in range(NLOC)] for i in range(len(TREE))]
    lo = [[float(1 + (2 * i + j) % 5) for j in range(NLOC)] for i in range(len(TREE))]
    e.add_metric(Metric("max_time", unit="sec", dtype="MAXDOUBLE", kind="INCLUSIVE"))
    e.add_metric(Metric("min_time", unit="sec", dtype="MINDOUBLE", kind="INCLUSIVE"))
    e.values["max_time"] = np.array(hi)
    e.values["min_time"] = np.array(lo)
    doc = json.loads("".join(experiment_views.render(e, "json")))
    for i, cp in enumerate(doc["callpaths"]):
        assert cp["inclusive"]["max_time"] == max(hi[i]) and cp["exclusive"]["max_time"] == max(hi[i])
        assert cp["inclusive"]["min_time"] == min(lo[i])
    totals = {m["name"]: m["total"] for m in doc["metrics"]}
    assert totals["max_time"] == max(hi[0]) and totals["min_time"] == min(lo[0])
    assert [loc["totals"]["max_time"] for loc in doc["locations"]] == [hi[0][j] for j in range(NLOC)]
    flat = json.loads(stat.run(e, metrics=["max_time"], top=4, fmt="json"))["regions"]
    bar = next(r for r in flat if r["region"] == "bar")
    assert bar["exclusive"]["max_time"] == max(hi[2] + hi[3] + hi[6])
    text = "".join(dump.run(e, fmt="csv2", metrics="min_time", callpaths="2", threads="aggr"))
    assert text.splitlines()[1] == f"2,aggr,{min(lo[2]):g}"


def test_deep_call_paths_are_shortened_for_reading_only():
    """compare's text lists a 36-frame path as its root, the count left out
    and its innermost frames; short paths stay whole."""
    from psuite.analysis.experiment_views import _short_path

    deep = ("deep", "_start", "main", *(["level"] * 31), "work")
    assert _short_path(deep) == "deep;...(30);level;level;level;work"
    assert _short_path(("main", "f", "g")) == "main;f;g"
