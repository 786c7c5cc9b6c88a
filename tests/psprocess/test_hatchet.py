"""psuite's profiles in LLNL hatchet and Thicket (psuite.hatchet, the
report's to_hatchet()), with the real hatchet and Thicket from PyPI (the
`test` extra installs them).

A 4-rank Open MPI program is profiled with call paths twice (`mpirun -np 4
psrun --callpath`).  Its GraphFrame must hold, per call path (the function
names from the root), the inclusive and exclusive samples psprocess's own
call-tree reports give: per rank and thread (`psprocess -c --calltree
--per-thread`), per rank (`psprocess --calltree RANK.xml`, its threads
merged) and over the whole run (`psprocess -c --calltree`).  hatchet's
operations run on it, and a Thicket of the two runs holds both."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import psuite
import psuite.hatchet
from psuite.errors import UsageError
from tests.conftest import TARGETS, psrun_command, run_tool

MPI_ENV = {"OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
PERIOD_US = 1000
ROOT = psuite.hatchet.ROOT_NAME

Path_ = tuple[str, ...]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two 4-rank call-path runs of tests/targets/mpi/mpi_work.c, each in
    its directory ("a", "b")."""
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    d = tmp_path_factory.mktemp("hatchet")
    exe = d / "mpi_work"
    subprocess.run([mpicc, "-O1", "-g", "-o", str(exe), str(TARGETS / "mpi" / "mpi_work.c")], check=True)
    out = {}
    for name in ("a", "b"):
        ranks = d / name
        ranks.mkdir()
        p = subprocess.run([mpirun, "-np", "4", "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "self,vader",
                            psrun_command(), "-q", "-d", str(ranks), "--callpath", "--period", str(PERIOD_US),
                            str(exe)], capture_output=True, text=True, timeout=300, env={**os.environ, **MPI_ENV})
        assert p.returncode == 0, p.stdout + p.stderr
        assert len(profiles(ranks)) == 4 and len(list(ranks.glob("*.callpaths.xml"))) == 4
        out[name] = ranks
    return out


def profiles(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.xml") if not p.name.endswith(".callpaths.xml"))


# -- psprocess's call-tree reports, as printed -----------------------------------
def text_trees(text: str) -> list[tuple[str, dict[Path_, tuple[float, float]]]]:
    """The trees of a `psprocess --calltree` report, in order: the title
    (the line above the rule) and per call path its (inclusive, exclusive)
    samples, summed where two contexts print alike, zeros left out.  The
    call path starts where the header's "Call path" does, indented two
    spaces per level."""
    out = []
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if not line.endswith("Call path") or not lines[k - 1].startswith("====="):
            continue
        col = line.index("Call path")
        tree: dict[Path_, tuple[float, float]] = defaultdict(lambda: (0.0, 0.0))
        stack: list[str] = []
        for row in lines[k + 1:]:
            if not row.strip() or row.startswith("("):
                break
            numbers = row[:col].split()
            rest = row[col:]
            depth = (len(rest) - len(rest.lstrip(" "))) // 2
            stack[depth:] = [rest.strip()]
            incl, excl = tree[tuple(stack)]
            tree[tuple(stack)] = (incl + number(numbers[0]), excl + number(numbers[2]))
        out.append((lines[k - 2], {p: v for p, v in tree.items() if v != (0.0, 0.0)}))
    return out


def number(text: str) -> float:
    return float(text.replace(",", ""))


@functools.lru_cache
def calltree(*args: str) -> list[tuple[str, dict[Path_, tuple[float, float]]]]:
    """The trees `psprocess --calltree ARGS` prints (each run once: psprocess
    resolves every symbol again)."""
    p = run_tool("psprocess", "--calltree", *args)
    assert p.returncode == 0, p.stderr
    trees = text_trees(p.stdout)
    assert trees, p.stdout
    return trees


def combined_tree(run: Path) -> dict[Path_, tuple[float, float]]:
    """`psprocess -c --calltree RUN`: the ranks' and threads' trees merged."""
    [(_, tree)] = calltree("-c", str(run))
    return tree


# -- the GraphFrame's values --------------------------------------------------------
def node_paths(gf) -> dict:
    """hatchet node -> the names from below the root to it."""
    out = {}
    for node in gf.graph.traverse():
        names = []
        n = node
        while n.parents:
            names.append(n.frame["name"])
            n = n.parents[0]
        assert n.frame["name"] == ROOT
        out[node] = tuple(reversed(names))
    return out


def values(gf, where: dict | None = None, metrics=("samples (inc)", "samples"),
           name=lambda path: path) -> dict[Path_, tuple[float, float]]:
    """Per call path (renamed by `name`), the two metrics summed over the
    rows at `where` (index level -> value), zeros left out."""
    df = gf.dataframe
    for level, value in (where or {}).items():
        df = df.xs(value, level=level, drop_level=False)
    paths = node_paths(gf)
    out: dict[Path_, tuple[float, float]] = defaultdict(lambda: (0.0, 0.0))
    for node, row in df.groupby(level="node")[list(metrics)].sum().iterrows():
        path = paths[node]
        if path:
            incl, excl = out[name(path)]
            out[name(path)] = (incl + float(row[metrics[0]]), excl + float(row[metrics[1]]))
    return {p: v for p, v in out.items() if v != (0.0, 0.0)}


def function_names(path: Path_) -> Path_:
    """A path as `psprocess -c --calltree` prints it: the functions, without
    the object of an unknown function or the inlined mark."""
    return tuple(re.sub(r" \[inlined\]$", "", re.sub(r"^(\?\?.*) \([^()]*\)$", r"\1", p)) for p in path)


def rank_of(doc: Path) -> int:
    return int(re.search(r"\.r(\d+)\.", doc.name).group(1))


# -- the tests -------------------------------------------------------------------
def test_graphframe_of_4_rank_run_gives_psprocess_calltree_values(runs):
    gf = psuite.hatchet.from_psuite(runs["a"])
    df = gf.dataframe
    assert list(df.index.names) == ["node", "rank", "thread"]
    assert sorted(df.index.get_level_values("rank").unique()) == [0, 1, 2, 3]
    assert gf.exc_metrics == ["samples", "time"] and gf.inc_metrics == ["samples (inc)", "time (inc)"]
    assert gf.default_metric == "time (inc)"
    assert [r.frame["name"] for r in gf.graph.roots] == [ROOT] and gf.graph.is_tree()
    # every node at every thread: the rows are nodes x locations
    locations = df.reset_index()[["rank", "thread"]].drop_duplicates()
    assert len(df) == len(gf.graph) * len(locations)

    # per rank and thread
    per_thread = calltree("-c", "--per-thread", str(runs["a"]))
    compared = 0
    for title, tree in per_thread:
        rank, thread = map(int, re.fullmatch(r"Rank (\d+) thread (\d+)", title).groups())
        assert values(gf, {"rank": rank, "thread": thread}) == tree, title
        compared += bool(tree)
    assert len(per_thread) == len(locations) and compared >= 4

    # per rank (its threads merged), from each rank's own document, also by the report's to_hatchet()
    docs = profiles(runs["a"])
    per_rank = calltree(*map(str, docs))
    assert len(per_rank) == len(docs)
    total = 0.0
    for doc, (_, tree) in zip(docs, per_rank, strict=True):
        assert values(gf, {"rank": rank_of(doc)}) == tree, doc.name
        own = psuite.read_document(str(doc)).to_hatchet()
        assert values(own) == tree, doc.name
        assert own.metadata["command"].endswith("mpi_work") and own.metadata["event"] == "ITIMER_PROF"
        total += sum(incl for path, (incl, _) in tree.items() if len(path) == 1)

    # the whole run
    combined = combined_tree(runs["a"])
    assert values(gf, name=function_names) == combined
    root = df.xs(gf.graph.roots[0], level="node")
    assert root["samples (inc)"].sum() == total == sum(incl for p, (incl, _) in combined.items() if len(p) == 1)

    # time: samples times the sampling period of the documents
    reports = json.loads(run_tool("psprocess", "-c", "-f", "json", str(runs["a"])).stdout)["reports"]
    [period] = {r["callpaths"]["threshold"] / 1e6 for r in reports}
    assert np.allclose(df["time (inc)"], df["samples (inc)"] * period)
    assert np.allclose(df["time"], df["samples"] * period)
    assert gf.metadata["ranks"] == 4 and gf.metadata["samples"] == sum(r["total_samples"] for r in reports)


def test_hatchet_operations_on_the_graphframe(runs):
    gf = psuite.hatchet.from_psuite(str(runs["a"] / "*.xml"))  # a glob, as psprocess -c takes it
    combined = combined_tree(runs["a"])

    shown = gf.tree(metric_column="samples (inc)", rank=0, thread=1)  # the main thread
    assert ROOT in shown and "main" in shown

    # filter without squashing keeps the (node, rank, thread) rows that pass
    kept = gf.filter(lambda row: row["samples (inc)"] > 0, squash=False)
    assert (kept.dataframe["samples (inc)"] > 0).all() and 0 < len(kept.dataframe) < len(gf.dataframe)

    # hatchet's squash recomputes inclusive values over (node)-indexed frames (on (node, rank, thread)
    # frames it fails, for hatchet's own readers too: hatchet issue #481); summed over ranks and threads
    summed = gf.deepcopy()
    summed.drop_index_levels(function=np.sum)
    assert list(summed.dataframe.index.names) == ["node"]
    recomputed = summed.deepcopy()
    del recomputed.dataframe["samples (inc)"]  # recomputed by hatchet from the exclusive values
    recomputed.update_inclusive_columns()
    assert values(recomputed, name=function_names) == combined

    on_main = summed.filter(lambda row: row["name"] in (ROOT, "_start", "__libc_start_main_impl",
                                                        "__libc_start_call_main", "main"))
    assert [n.frame["name"] for n in on_main.graph.traverse()] == [ROOT, "_start", "__libc_start_main_impl",
                                                                    "__libc_start_call_main", "main"]
    main = {p: v for p, v in combined.items() if p[-1] == "main"}
    [(_, excl)] = main.values()
    # after the squash, main's inclusive value is only what remains in the graph: its exclusive samples
    assert values(on_main)[("_start", "__libc_start_main_impl", "__libc_start_call_main", "main")] == (excl, excl)

    squashed = summed.copy()
    squashed.dataframe = summed.dataframe[summed.dataframe["samples"] > 0]
    squashed = squashed.squash()
    assert {function_names((n.frame["name"],))[0] for n in squashed.graph.traverse()} == \
        {p[-1] for p, (_, excl) in combined.items() if excl > 0}
    assert squashed.dataframe["samples (inc)"].sum() >= squashed.dataframe["samples"].sum() > 0


def test_thicket_of_two_runs(runs):
    import thicket

    th = psuite.hatchet.to_thicket([runs["a"], runs["b"]], names=["a", "b"])
    assert isinstance(th, thicket.Thicket)
    assert list(th.dataframe.index.names) == ["node", "profile", "rank", "thread"]
    assert sorted(th.profile_mapping.values()) == ["a", "b"]
    by_name = {name: profile for profile, name in th.profile_mapping.items()}
    [root] = th.graph.roots
    for name in ("a", "b"):
        combined = combined_tree(runs[name])
        total = sum(incl for p, (incl, _) in combined.items() if len(p) == 1)
        rows = th.dataframe.xs(by_name[name], level="profile")
        assert rows.xs(root, level="node")["samples (inc)"].sum() == total
        assert rows["samples"].sum() == sum(excl for _, excl in combined.values())
        meta = th.metadata.loc[by_name[name]]
        assert meta["command"].endswith("mpi_work") and meta["event"] == "ITIMER_PROF" and meta["ranks"] == 4
        assert meta["hostname"] and meta["date"]
    # one call tree for both: main is one node, with both runs' rows
    [main] = [n for n in th.graph.traverse() if n.frame["name"] == "main"]
    assert set(th.dataframe.xs(main, level="node").index.get_level_values("profile")) == set(th.profile)


def test_flat_profile_is_one_level(programs, tmp_path):
    p = run_tool("psrun", "-q", "-d", str(tmp_path), "--profile", "ITIMER_PROF", "--period", str(PERIOD_US),
                 programs["prof_split"], "30")
    assert p.returncode == 0, p.stderr
    [doc] = tmp_path.glob("*.xml")
    gf = psuite.read_document(str(doc)).to_hatchet()
    [root] = gf.graph.roots
    assert root.frame["name"] == ROOT and all(not c.children for c in root.children)
    assert list(gf.dataframe.index.names) == ["node", "rank", "thread"]
    report = json.loads(run_tool("psprocess", "-f", "json", str(doc)).stdout)["reports"][0]
    expected: dict[Path_, int] = defaultdict(int)
    for loc in report["locations"]:
        name = loc["function"]
        if name.startswith("??") and loc["module"] not in ("", "??"):
            name = f"{name} ({os.path.basename(loc['module'])})"
        expected[(name,)] += loc["samples"]
    assert values(gf) == {path: (n, n) for path, n in expected.items()}
    assert {"heavy", "medium", "lib_work"} <= {c.frame["name"] for c in root.children}
    assert gf.dataframe.xs(root, level="node")["samples (inc)"].sum() == report["total_samples"]


def test_what_is_not_a_profile_and_missing_hatchet(tmp_path):
    tiny = tmp_path / "tiny"
    subprocess.run(["cc", "-O1", "-g", "-o", str(tiny), str(TARGETS / "tiny.c")], check=True)
    (tmp_path / "count").mkdir()
    p = run_tool("psrun", "-q", "-d", str(tmp_path / "count"), "-e", "task-clock", str(tiny))
    assert p.returncode == 0, p.stderr
    [doc] = (tmp_path / "count").glob("*.xml")
    with pytest.raises(UsageError, match="made of profiles"):
        psuite.hatchet.from_psuite(doc)
    with pytest.raises(UsageError, match="no documents"):
        psuite.hatchet.from_psuite([])
    # without hatchet installed: one line naming the extra to install
    code = ("import sys; sys.modules['hatchet'] = None\n"
            "import psuite\n"
            "from psuite.errors import UsageError\n"
            "prof = psuite.read_document(sys.argv[1])\n"
            "try:\n    prof.to_hatchet()\nexcept UsageError as e:\n    print(e)\n")
    (tmp_path / "prof").mkdir()
    p = run_tool("psrun", "-q", "-d", str(tmp_path / "prof"), "--profile", "ITIMER_PROF", str(tiny))
    assert p.returncode == 0, p.stderr
    [prof] = (tmp_path / "prof").glob("*.xml")
    out = subprocess.run([sys.executable, "-c", code, str(prof)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert out.stdout.count("\n") == 1 and "pip install 'psuite[hatchet]'" in out.stdout


def test_runs_of_one_rank_twice_are_refused(runs):
    docs = profiles(runs["a"])[:1] + profiles(runs["b"])[:1]  # rank 0 of each run
    with pytest.raises(UsageError, match="to_thicket"):
        psuite.hatchet.from_psuite(docs)



def test_combined_document_gives_every_rank(runs, tmp_path):
    """A document of `psprocess -c -x` (the ranks' profiles in one
    <multihwpcprofilereport>, their call paths beside it): psuite.read
    gives a MultiReport, whose to_hatchet() has every rank with its call
    tree, as the rank's own document gives it; without the call paths,
    one node per function."""
    doc = tmp_path / "combined.xml"
    p = run_tool("psprocess", "-c", "-x", "-o", str(doc), str(runs["a"]))
    assert p.returncode == 0, p.stderr
    gf = psuite.read_document(str(doc)).to_hatchet()
    for own in profiles(runs["a"]):
        assert values(gf, {"rank": rank_of(own)}) == values(psuite.read_document(str(own)).to_hatchet()), own.name
    (tmp_path / "combined.callpaths.xml").unlink()  # the flat profiles alone
    gf = psuite.read_document(str(doc)).to_hatchet()
    [root] = gf.graph.roots
    assert all(not c.children for c in root.children)
    reports = json.loads(run_tool("psprocess", "-f", "json", str(doc)).stdout)["reports"]
    assert len(reports) == 4
    for r in reports:
        rows = gf.dataframe.xs(r["rank"], level="rank")
        assert rows.xs(root, level="node")["samples (inc)"].sum() == r["total_samples"]
        per_function: dict[str, int] = defaultdict(int)
        for loc in r["locations"]:
            per_function[loc["function"]] += loc["samples"]
        assert values(gf, {"rank": r["rank"]}, name=function_names) == \
            {(f,): (n, n) for f, n in per_function.items() if n}
