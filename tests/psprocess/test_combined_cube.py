"""psprocess -c --cube is a merge: the cube of N documents combined is the
cube `psprocess --cube` makes of each, merged by `psprocess merge -c` (the
algebra's merge keeping every process): the same metrics (derived ones with
their expressions), call tree, system tree (rank and thread identities,
run attributes per location) and values, read back by psuite's CUBE reader.
Checked on a real 4-rank `psrun -p --callpath` run (the fixture of
tests/test_formats_agree.py) and on a real 3-rank counting run."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.test_formats_agree import mpi_work_run, psprocess, run  # noqa: F401  (run: the 4-rank profiling fixture)

COUNTING_RANKS = 3


def read(path: Path):
    import psuite

    return psuite.read_experiment(str(path))


def paths(exp) -> list[tuple[str, ...]]:
    """Each call path as its regions' names, outermost first."""
    out: list[tuple[str, ...]] = []
    for c in exp.cnodes:
        above = out[c.parent] if c.parent is not None else ()
        out.append((*above, exp.regions[c.region].name))
    return out


def assert_same_cube(a: Path, b: Path, wallclock: bool = True) -> None:
    """Metrics, call tree, system tree and every value alike (wallclock:
    the locations' run wall clock too)."""
    x, y = read(a), read(b)
    assert x.metrics == y.metrics  # names, kinds, types, units, expressions, tree
    assert paths(x) == paths(y)
    assert [c.line for c in x.cnodes] == [c.line for c in y.cnodes]
    assert x.regions == y.regions
    assert [r.attributes for r in x.regions] == [r.attributes for r in y.regions]  # object files

    def where(exp):
        return [(loc.machine, loc.node, loc.process, loc.rank, loc.thread, loc.thread_rank,
                 {k: v for k, v in loc.attributes.items() if wallclock or k != "wallclock"}) for loc in exp.locations]

    assert where(x) == where(y)
    for m in x.metrics:
        if m.derived:
            got, want = x.derived_values(m.name), y.derived_values(m.name)
        else:
            got, want = x.stored(m.name), y.stored(m.name)
        assert got.dtype == want.dtype, m.name
        np.testing.assert_array_equal(got, want, err_msg=m.name)


def cube_of_each_merged(docs: list[str], tmp: Path) -> Path:
    cubes = []
    for i, doc in enumerate(docs):
        cubes.append(str(tmp / f"each{i}.cubex"))
        psprocess("--cube", cubes[-1], doc)
    psprocess("merge", "-c", *cubes, "-o", str(tmp / "merged.cubex"))
    return tmp / "merged.cubex"


def test_combined_profiles_are_each_ranks_cube_merged(run, tmp_path):  # noqa: F811
    """The ranks' process reports with their call paths."""
    docs = [run.process[r] for r in sorted(run.process)]
    psprocess("-c", "--cube", str(tmp_path / "c.cubex"), *docs)
    assert_same_cube(tmp_path / "c.cubex", cube_of_each_merged(docs, tmp_path))
    exp = read(tmp_path / "c.cubex")
    assert max(len(p) for p in paths(exp)) > 2  # call paths, not program > function
    assert {(loc.rank, loc.thread_rank) for loc in exp.locations} == set(run.truth)
    for loc in exp.locations:  # the run attributes of each location
        assert loc.attributes["rank"] == str(loc.rank) and loc.attributes["thread"] == str(loc.thread_rank)
        assert loc.attributes["pid"].isdigit() and loc.attributes["host"] == loc.node
        assert "mpi_work" in loc.attributes["command"] and loc.attributes["date"]
        assert "build-ids" in loc.attributes


def test_combined_cube_of_every_document_is_the_process_reports(run, tmp_path):  # noqa: F811
    """With psrun -p's per-thread reports given too (their samples are the
    call paths' flat view), the same cube: nothing counted twice."""
    docs = [run.process[r] for r in sorted(run.process)]
    psprocess("-c", "--cube", str(tmp_path / "all.cubex"), *run.docs)
    psprocess("-c", "--cube", str(tmp_path / "ranks.cubex"), *docs)
    # the run's wall clock is that of the document the call paths come with: with the per-thread reports
    # the combination leaves out the process total and gives its call paths to the first thread's report
    assert_same_cube(tmp_path / "all.cubex", tmp_path / "ranks.cubex", wallclock=False)
    for loc in read(tmp_path / "all.cubex").locations:
        assert float(loc.attributes["wallclock"]) > 0


@pytest.fixture(scope="module")
def counting(tmp_path_factory) -> list[str]:
    """A real counting run (psrun without profiling) of 3 MPI ranks."""
    docs, _ = mpi_work_run(tmp_path_factory.mktemp("counting"), COUNTING_RANKS)
    out = sorted(str(x) for x in docs.glob("*.xml"))
    assert len(out) == COUNTING_RANKS
    return out


def test_combined_counts_are_each_ranks_cube_merged(counting, tmp_path):
    psprocess("-c", "--cube", str(tmp_path / "c.cubex"), *counting)
    assert_same_cube(tmp_path / "c.cubex", cube_of_each_merged(counting, tmp_path))
    exp = read(tmp_path / "c.cubex")
    assert sorted(loc.rank for loc in exp.locations) == list(range(COUNTING_RANKS))
    # derived metrics survive as derived metrics, their values each rank's own
    derived = [m for m in exp.metrics if m.derived]
    assert any(m.display == "CPUs utilized" for m in derived), [m.display for m in exp.metrics]
    for m in derived:
        values = exp.derived_values(m.name)[0]
        for k, loc in enumerate(exp.locations):
            own = read(tmp_path / f"each{k}.cubex")  # rank k's document, the k-th
            assert own.locations[0].rank == loc.rank
            assert values[k] == pytest.approx(own.derived_values(m.name)[0][0]), (m.name, loc.rank)
    for loc in exp.locations:
        assert {"host", "pid", "rank", "thread", "machine", "command", "date"} <= set(loc.attributes), loc.attributes
        assert "CPUs" in loc.attributes["machine"] and "MHz" in loc.attributes["machine"], loc.attributes


def test_two_runs_of_the_same_ranks_are_kept_apart(counting, tmp_path):
    """Two runs of one job (ranks 0..2 twice): -c counts six reports, and
    the combined cube holds six locations, the second run's processes named
    as such, every report's counts kept (none merged into another's)."""
    again = tmp_path / "again"
    again.mkdir()
    copies = []
    for doc in counting:  # the same ranks, other pids: what a second run writes
        text = re.sub(r"<pid>(\d+)</pid>", lambda m: f"<pid>{int(m.group(1)) + 100000}</pid>", Path(doc).read_text())
        copies.append(again / Path(doc).name)
        copies[-1].write_text(text)
    psprocess("-c", "--cube", str(tmp_path / "c.cubex"), *counting, *map(str, copies))
    exp = read(tmp_path / "c.cubex")
    assert len(exp.locations) == 2 * COUNTING_RANKS
    assert len({(loc.process, loc.rank) for loc in exp.locations}) == 2 * COUNTING_RANKS
    assert sum(loc.process.endswith("(run 2)") for loc in exp.locations) == COUNTING_RANKS
    psprocess("-c", "--cube", str(tmp_path / "once.cubex"), *counting)
    once = read(tmp_path / "once.cubex")
    for m in once.metrics:
        if not m.derived and m.name in exp.values:
            assert exp.stored(m.name).sum() == pytest.approx(2 * once.stored(m.name).sum()), m.name


def test_combined_counts_keep_a_derived_metric_the_ranks_compute_apart(counting):
    """A derived metric one document's values do not agree with (its
    formula differs there) cannot stand for them all: every rank keeps its
    own value, stored and named as having no formula, as when the reports
    are converted together; the metrics the documents agree on stay
    derived."""
    from psuite.analysis import experiments, inputs, metrics, prepare
    from psuite.model.report import MultiReport

    reports = [prepare.prepare(inputs.load(doc), metrics.derive_standard) for doc in counting]
    [odd] = [d for d in reports[0].metrics if d.name == "CPUs utilized"]
    odd.value *= 2  # rank 0's value is not the formula's any more
    exp = experiments.from_report(MultiReport(reports=reports))
    m = exp.metric(next(x.name for x in exp.metrics if x.display == "CPUs utilized"))
    assert not m.derived and m.name in exp.attributes[experiments.NO_FORMULA].split("\n")
    own = [next(d.value for d in r.metrics if d.name == "CPUs utilized") for r in reports]
    assert exp.stored(m.name)[0].tolist() == pytest.approx([own[loc.rank] for loc in exp.locations])
    assert any(x.derived for x in exp.metrics)  # the others still derived


def test_combined_page_shows_the_merged_call_tree(run, tmp_path):  # noqa: F811
    """psprocess -c --html builds its view from the same experiment: the
    page's call paths, locations and samples are the merged cube's."""
    import json
    import re

    from psuite.psprocess.html import viewdoc

    docs = [run.process[r] for r in sorted(run.process)]
    psprocess("-c", "--html", str(tmp_path / "c.html"), *docs)
    m = re.search(r'<script type="application/json" id="psuite-view">(.*?)</script>',
                  (tmp_path / "c.html").read_text(), re.S)
    view = json.loads(m.group(1))
    exp = read(cube_of_each_merged(docs, tmp_path))
    names = [r["name"] for r in view["regions"]]
    shown: list[tuple[str, ...]] = []
    for region, parent in zip(view["cnodes"]["region"], view["cnodes"]["parent"], strict=True):
        shown.append((*(shown[parent] if parent >= 0 else ()), names[region]))
    assert shown == paths(exp)
    assert [(loc["rank"], loc["thread"]) for loc in view["locations"]] == [loc.key for loc in exp.locations]
    samples = np.asarray(viewdoc.decode(view["values"]["samples"]["exclusive"]))  # stored sparse
    samples = samples.reshape(len(shown), len(view["locations"]))
    np.testing.assert_array_equal(samples, exp.exclusive("samples"))
