"""psprocess -c: counting reports combined, statistics checked against
values computed here straight from the XML files; a real Open MPI run
(installed by tests/run.sh) gives one report per rank."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import TARGETS, one_line_error, run_tool, validate


def counts_from_xml(paths: list[Path]) -> dict[str, list[tuple[float, int]]]:
    """event -> [(count, rank)], read with lxml only."""
    out: dict[str, list[tuple[float, int]]] = {}
    for p in paths:
        root = etree.parse(str(p)).getroot()
        rank = int(root.findtext("annotation").split("MPI rank ")[1].split(";")[0])
        for ev in root.iter("hwpcevent"):
            out.setdefault(ev.get("name"), []).append((float(ev.text), rank))
    return out


def check_statistics(doc: dict, paths: list[Path]) -> None:
    stats = {(s["kind"], s["name"]): s for s in doc["statistics"]}
    for name, values in counts_from_xml(paths).items():
        s = stats[("event", name)]
        nums = [v for v, _ in values]
        assert s["count"] == len(nums)
        assert s["sum"] == pytest.approx(sum(nums))
        assert s["mean"] == pytest.approx(statistics.fmean(nums))
        assert s["stddev"] == pytest.approx(statistics.pstdev(nums))
        q1, q2, q3 = statistics.quantiles(nums, n=4, method="inclusive")
        assert (s["q1"], s["median"], s["q3"]) == pytest.approx((q1, q2, q3))
        low, high = min(values), max(values)
        assert (s["min"], s["min_who"]) == (low[0], f"rank {low[1]}")
        assert (s["max"], s["max_who"]) == (high[0], f"rank {high[1]}")
        assert s["imbalance"] == pytest.approx(high[0] / statistics.fmean(nums))


def test_statistics_equal_independent_computation(targets, workdir):
    runs = workdir / "runs"
    runs.mkdir()
    for rank in range(5):
        env = {**os.environ, "OMPI_COMM_WORLD_RANK": str(rank)}
        p = run_tool("psrun", "-q", "-d", str(runs), "-e", "task-clock,page-faults", targets["work"],
                     str(50 * (rank + 1)), str(2 * (rank + 1)), "0", env=env)
        assert p.returncode == 0, p.stderr
    paths = sorted(runs.glob("*.xml"))
    assert [p.name.split(".")[1] for p in paths] == [f"r{r}" for r in range(5)]  # the rank in the name
    p = run_tool("psprocess", "-c", "-f", "json", str(runs))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["schema"] == "psuite.multi/1" and len(doc["reports"]) == 5
    check_statistics(doc, paths)
    assert any(s["kind"] == "metric" for s in doc["statistics"])  # derived metrics too
    text = run_tool("psprocess", "-c", str(runs / "*.xml"))  # a glob psprocess expands itself
    assert "Event Statistics" in text.stdout and "imbalance" in text.stdout and "(rank 4)" in text.stdout
    xml = run_tool("psprocess", "-c", "-x", *map(str, paths))
    root = validate(xml.stdout.encode(), "multihwpcreport-0.3.dtd")
    assert len(root.findall("hwpcreport")) == 5


def test_combine_errors(workdir, tmp_path_factory):
    empty = tmp_path_factory.mktemp("empty")
    assert "no .xml reports" in one_line_error(run_tool("psprocess", "-c", str(empty)), "psprocess")
    assert "no file matches" in one_line_error(run_tool("psprocess", "-c", str(empty / "*.xml")), "psprocess")


def test_open_mpi_run_gives_one_report_per_rank(workdir, tmp_path_factory):
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    exe = tmp_path_factory.mktemp("mpi") / "mpi_work"
    subprocess.run([mpicc, "-O1", "-o", str(exe), str(TARGETS / "mpi" / "mpi_work.c")], check=True)
    out = workdir / "ranks"
    out.mkdir()
    env = {**os.environ, "OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
    p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca", "btl", "self,vader",
                        *run_tool_argv(), "-q", "-d", str(out), "-e", "task-clock,page-faults", str(exe)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ranks 4 done" in p.stdout
    paths = sorted(out.glob("*.xml"))
    assert sorted(validate(x, "hwpcreport-0.3.dtd").findtext("annotation").split(";")[0] for x in paths) == \
        [f"MPI rank {r}" for r in range(4)]
    doc = json.loads(run_tool("psprocess", "-c", "-f", "json", str(out)).stdout)
    check_statistics(doc, paths)
    faults = {s["name"]: s for s in doc["statistics"]}["page-faults"]
    assert faults["max_who"] == "rank 3"  # rank 3 touched the most pages


def test_a_value_several_ranks_share_names_the_lowest_rank(targets, tmp_path):
    """Ranks 2 and 10 count the same: min and max name rank 2, the first of
    them in the system tree (and in the merged cube), although the file of
    rank 10 comes first by name."""
    env = {**os.environ, "OMPI_COMM_WORLD_RANK": "2"}
    p = run_tool("psrun", "-q", "-d", str(tmp_path), "-e", "task-clock,page-faults", targets["work"], "10", "1", "0",
                 env=env)
    assert p.returncode == 0, p.stderr
    [two] = tmp_path.glob("*.xml")
    ten = tmp_path / two.name.replace(".r2.", ".r10.")
    ten.write_text(two.read_text().replace("MPI rank 2", "MPI rank 10"))
    assert sorted(p.name for p in tmp_path.glob("*.xml"))[0] == ten.name
    doc = json.loads(run_tool("psprocess", "-c", "-f", "json", str(tmp_path)).stdout)
    for s in doc["statistics"]:
        assert s["count"] == 2 and s["min"] == s["max"], s
        assert (s["min_who"], s["max_who"]) == ("rank 2", "rank 2"), s


def run_tool_argv() -> list[str]:
    return [sys.executable, "-m", "psuite.psrun"]


def test_profiles_combined_with_each_functions_spread(targets, workdir, tmp_path_factory):
    """Three 'ranks' of a program whose work grows with the rank: the
    combined summary and each function's spread equal what the single
    profiles say, and <multihwpcprofilereport> is DTD-valid."""
    from tests.psprocess.test_profiles import PROFILE_SRC

    d = tmp_path_factory.mktemp("split")
    lib = d / "libprof_lib.so"
    subprocess.run(["cc", "-O1", "-g", "-shared", "-fPIC", "-o", str(lib), str(PROFILE_SRC / "prof_lib.c")],
                   check=True)
    exe = d / "prof_split"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(PROFILE_SRC / "prof_split.c"), f"-L{d}", "-lprof_lib",
                    f"-Wl,-rpath,{d}"], check=True)
    out = workdir / "profiles"
    out.mkdir()
    for rank in range(3):
        env = {**os.environ, "OMPI_COMM_WORLD_RANK": str(rank)}
        p = run_tool("psrun", "-q", "-d", str(out), "--profile", "ITIMER_PROF", "--period", "1000", str(exe),
                     str(30 * (rank + 1)), env=env)
        assert p.returncode == 0, p.stderr
    singles = {}
    for path in sorted(out.glob("*.xml")):
        doc = json.loads(run_tool("psprocess", "-f", "json", str(path)).stdout)["reports"][0]
        per_function: dict[str, int] = {}
        for loc in doc["locations"]:
            per_function[loc["function"]] = per_function.get(loc["function"], 0) + loc["samples"]
        singles[int(doc["annotation"].split("MPI rank ")[1].split(";")[0])] = per_function
    combined = json.loads(run_tool("psprocess", "-c", "-f", "json", str(out)).stdout)
    assert combined["schema"] == "psuite.multiprofile/1"
    spread = {s["name"]: s for s in combined["statistics"]}
    for function in ("heavy", "lib_work", "medium"):
        values = [singles[r].get(function, 0) for r in range(3)]
        s = spread[function]
        assert s["sum"] == sum(values) and s["mean"] == pytest.approx(statistics.fmean(values))
        assert s["stddev"] == pytest.approx(statistics.pstdev(values))
        assert (s["max"], s["max_who"]) == (max(values), f"rank {values.index(max(values))}")
    assert spread["heavy"]["max_who"] == "rank 2"
    root = validate(run_tool("psprocess", "-c", "-x", str(out)).stdout.encode(), "multihwpcprofilereport-0.3.dtd")
    assert len(root.findall("hwpcprofilereport")) == 3
    counts = workdir / "counts"
    counts.mkdir()
    assert run_tool("psrun", "-q", "-d", str(counts), "-e", "task-clock", str(exe), "1").returncode == 0
    mixed = run_tool("psprocess", "-c", str(out), str(counts))
    assert "separately" in one_line_error(mixed, "psprocess")
