"""psuite.hatchet's GraphFrames render the analysis model: for real
profiles (flat, `--callpath`, a `psrun -p --callpath` threaded run, runs
of two ranks and of two processes without ranks combined), the frame of
the document equals the one psuite built from the document model before
(tests/psprocess/hatchet_documents.py), the frame of psuite.
read_experiment(path) equals it too, and a frame follows its experiment
when a value in it changes."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import psuite
import psuite.hatchet
from psuite.analysis.experiments import from_report
from psuite.errors import UsageError
from tests.conftest import TARGETS, run_tool
from tests.psprocess import hatchet_documents

PERIOD_US = "1000"
SECOND = ("time", "time (inc)")  # the experiment's time: summed per call path, not samples x period


@pytest.fixture(scope="module")
def inputs(programs, tmp_path_factory) -> dict[str, Path]:
    """Real profiles, each a directory: "flat", "callpath" (one document
    each), "per-thread" (psrun -p --callpath: the process total and its
    threads' reports), "ranks" (two MPI ranks with call paths), "flat-ranks"
    (two MPI ranks without) and "processes" (two runs without a rank)."""
    d = tmp_path_factory.mktemp("hatchet_model")
    split, threads = programs["prof_split"], programs["prof_threads"]
    runs = {"flat": [(["--profile", "ITIMER_PROF"], split, None)],
            "callpath": [(["--callpath"], split, None)],
            "per-thread": [(["-p", "--callpath"], threads, None)],
            "ranks": [(["--callpath"], threads, rank) for rank in (0, 1)],
            "flat-ranks": [(["--profile", "ITIMER_PROF"], split, rank) for rank in (0, 1)],
            "processes": [(["--callpath"], threads, None) for _ in (0, 1)]}
    out = {}
    for name, commands in runs.items():
        out[name] = d / name
        out[name].mkdir()
        for args, program, rank in commands:
            env = {**os.environ, "OMPI_COMM_WORLD_RANK": str(rank)} if rank is not None else None
            p = run_tool("psrun", "-q", "-d", str(out[name]), *args, "--period", PERIOD_US, program,
                         *(["30"] if program == split else []), env=env)
            assert p.returncode == 0, p.stderr
    return out


def document(directory: Path) -> Path:
    """The one profile of a run (the process total of a psrun -p run)."""
    [doc] = [p for p in directory.glob("*.xml") if not re.search(r"\.callpaths\.xml$|\.t\d+\.", p.name)]
    return doc


def table(gf) -> pd.DataFrame:
    """The dataframe with each node as the names from the root to it (two
    GraphFrames' nodes are different objects), and the graph's shape: each
    node's parent the same way."""
    paths = {}
    for node in gf.graph.traverse():  # parents first
        parent = paths[node.parents[0]] if node.parents else ()
        paths[node] = (*parent, node.frame["name"])
    assert len(paths) == len(gf.graph) and gf.graph.is_tree()
    df = gf.dataframe.reset_index()
    df["node"] = [paths[n] for n in df["node"]]
    return df


def assert_same(model, documents, without: tuple[str, ...] = ()) -> None:
    """The same rows in the same order, the same columns and types; the
    time exactly what the experiment holds (its inclusive time sums the
    call paths' times, where the document builder multiplied summed samples
    by the period: the last bit may differ), the rest exactly equal."""
    a, b = table(model).drop(columns=list(without)), table(documents).drop(columns=list(without))
    assert list(a.columns) == list(b.columns) and len(a) == len(b) > 0
    pd.testing.assert_frame_equal(a.drop(columns=list(SECOND)), b.drop(columns=list(SECOND)), check_exact=True)
    for column in SECOND:
        assert a[column].dtype == b[column].dtype == np.float64
        np.testing.assert_allclose(a[column], b[column], rtol=1e-12, atol=0)
    assert (model.exc_metrics, model.inc_metrics, model.default_metric) == \
        (documents.exc_metrics, documents.inc_metrics, documents.default_metric)


def test_documents_give_the_frames_they_gave(inputs):
    for name in ("flat", "callpath", "per-thread"):
        report = psuite.read_document(str(document(inputs[name])))
        gf = psuite.hatchet.to_graphframe(report)
        assert_same(gf, hatchet_documents.to_graphframe(report))
        assert gf.metadata == hatchet_documents.to_graphframe(report).metadata, name
    # the -p run's process total: its three threads at rank 0 from the call paths
    places = table(psuite.read_document(str(document(inputs["per-thread"]))).to_hatchet())[["rank", "thread"]]
    assert sorted(set(map(tuple, places.to_numpy().tolist()))) == [(0, 1), (0, 2), (0, 3)]
    for name in ("ranks", "flat-ranks", "processes"):
        gf = psuite.hatchet.from_psuite(inputs[name])
        report = psuite.hatchet._read(inputs[name])  # the same combination, for the reference
        before = hatchet_documents.to_graphframe(report)
        assert_same(gf, before)
        assert gf.metadata == before.metadata and gf.metadata["ranks"] == 2, name
        ranks = sorted(set(table(gf)["rank"]))
        assert ranks == [0, 1], name  # the MPI ranks; without them, the processes' positions


def test_read_experiment_gives_the_documents_frame(inputs):
    for name in ("callpath", "per-thread", "flat"):
        path = str(document(inputs[name]))
        gf = psuite.read_experiment(path).to_hatchet()
        before = hatchet_documents.to_graphframe(psuite.read_document(path))
        # a flat profile's experiment keeps each function's source file (its region's module), not the object
        # file the document's source lines name: the module column is the documents' alone
        assert_same(gf, before, without=("module",) if name == "flat" else ())
        for key in ("command", "hostname", "date", "event", "threshold", "ranks", "samples", "source", "reader"):
            assert gf.metadata[key] == before.metadata[key], (name, key)


def test_the_frame_follows_the_model(inputs):
    path = str(document(inputs["callpath"]))
    exp = psuite.read_experiment(path)
    before = table(exp.to_hatchet())
    samples = exp.values["samples"]
    leaf = max(range(len(exp.cnodes)), key=lambda c: samples[c, 0])  # where most samples fell
    samples[leaf, 0] += 7
    exp.values["time"][leaf, 0] += 0.5
    after = table(psuite.hatchet.to_graphframe(exp))
    changed = after["samples"] != before["samples"]
    [path_to_leaf] = after.loc[changed, "node"].tolist()
    assert (after.loc[changed, "samples"] - before.loc[changed, "samples"]).tolist() == [7]
    # its callers' inclusive samples and time too, the program root's included, and nothing else
    raised = after["samples (inc)"] - before["samples (inc)"]
    callers = after["node"].map(lambda p: path_to_leaf[:len(p)] == p)
    assert set(raised[callers]) == {7} and set(raised[~callers]) == {0}
    assert np.allclose((after["time (inc)"] - before["time (inc)"])[callers], 0.5)
    assert len(path_to_leaf) > 2 and callers.sum() == len(path_to_leaf)

    # a flat profile's nodes follow its samples by source line
    report = psuite.read_document(str(document(inputs["flat"])))
    exp = from_report(report, for_reports=True)
    first = table(psuite.hatchet.to_graphframe(exp))
    exp.lines.samples[0] += 3
    moved = table(psuite.hatchet.to_graphframe(exp))
    row = (moved["node"] == (psuite.hatchet.ROOT_NAME, exp.lines.functions[0]))
    assert (moved.loc[row, "samples"] - first.loc[row, "samples"]).tolist() == [3]


def test_refusals_are_kept(inputs, tmp_path):
    # a counting report's experiment is no profile, as the report is not
    tiny = tmp_path / "tiny"
    subprocess.run(["cc", "-O1", "-g", "-o", str(tiny), str(TARGETS / "tiny.c")], check=True)
    p = run_tool("psrun", "-q", "-d", str(tmp_path), "-e", "task-clock", str(tiny))
    assert p.returncode == 0, p.stderr
    [counts] = tmp_path.glob("*.xml")
    for given in (psuite.read_document(str(counts)), psuite.read_experiment(str(counts))):
        with pytest.raises(UsageError, match=r"^.*tiny.*: a hatchet GraphFrame is made of profiles"):
            psuite.hatchet.to_graphframe(given)
    # profiles with and without call paths
    mixed = [document(inputs["flat"]), document(inputs["callpath"])]
    with pytest.raises(UsageError, match="has no call paths and others have"):
        psuite.hatchet.from_psuite(mixed)
    # a psrun -p --callpath run's directory: its threads' reports have no call paths of their own (the
    # process's companion goes with the first), so it is refused as before; its process total is the profile
    for builder in (psuite.hatchet.to_graphframe, hatchet_documents.to_graphframe):
        with pytest.raises(UsageError, match="has no call paths and others have"):
            builder(psuite.hatchet._read(inputs["per-thread"]))


def test_thicket_of_experiments(inputs):
    paths = [str(document(inputs["callpath"])), str(document(inputs["per-thread"]))]
    th = psuite.hatchet.to_thicket([psuite.read_experiment(p) for p in paths])
    assert sorted(th.profile_mapping.values()) == sorted(paths)  # named by their sources
    by_name = {name: profile for profile, name in th.profile_mapping.items()}
    [root] = th.graph.roots
    for p in paths:
        rows = th.dataframe.xs(by_name[p], level="profile")
        assert rows.xs(root, level="node")["samples (inc)"].sum() == psuite.read_document(p).total_samples > 0


def test_unknown_functions_in_two_objects_are_two_nodes(inputs):
    """Samples no symbol names ("??") in two objects are one function of the
    flat profile's model and two nodes of the frame, named by the object
    as psprocess lists them, the function's time shared by their samples."""
    report = psuite.read_document(str(document(inputs["flat"])))
    objects = {loc.module for loc in report.locations}
    assert len(objects) >= 2 and all(loc.samples for loc in report.locations)
    for loc in report.locations:  # as if neither the program nor the library had symbols
        loc.function = "??"
    gf = psuite.hatchet.to_graphframe(report)
    assert_same(gf, hatchet_documents.to_graphframe(report))
    names = {n.frame["name"] for n in gf.graph.roots[0].children}
    assert names == {f"?? ({os.path.basename(m)})" for m in objects}
    df = table(gf)
    assert np.allclose(df["time"], df["samples"] * int(PERIOD_US) / 1e6)
