"""The issue's case end to end: counting and profile runs of an MPI program
at 1, 2 and 4 ranks measured by psrun and filed by psprocess (`psprocess -c
--archive`: one run per mpirun job), then one psbase query gives task clock
against ranks, its mean and standard deviation over 3 repetitions equal to
the values computed here from the XML.  Both backends (db_url)."""

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

from tests.conftest import TARGETS
from tests.psbase.test_cli import ok, psbase

MPI_ENV = {"OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
RANKS = (1, 2, 4)
REPETITIONS = 3


def mpirun_psrun(exe: Path, ranks: int, out: Path, *psrun_args: str) -> list[Path]:
    """One mpirun job under psrun; its per-rank reports."""
    mpirun = shutil.which("mpirun")
    assert mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    out.mkdir()
    cmd = [mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(ranks), "--mca", "btl", "self,vader",
           sys.executable, "-m", "psuite.psrun", "-q", "-d", str(out), *psrun_args, str(exe)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, **MPI_ENV})
    assert p.returncode == 0, p.stdout + p.stderr
    docs = sorted(out.glob("*.xml"))
    assert len(docs) == ranks
    return docs


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> dict[str, dict[int, list[list[Path]]]]:
    """kind ("count", "profile") -> ranks -> the per-rank reports of each job."""
    mpicc = shutil.which("mpicc")
    assert mpicc, "Open MPI's mpicc is needed (tests/run.sh installs libopenmpi-dev)"
    d = tmp_path_factory.mktemp("psbase_filing_ranks")
    exe = d / "mpi_work"
    subprocess.run([mpicc, "-O1", "-g", "-o", str(exe), str(TARGETS / "mpi" / "mpi_work.c")], check=True)
    out: dict[str, dict[int, list[list[Path]]]] = {"count": {}, "profile": {}}
    for ranks in RANKS:
        for rep in range(REPETITIONS):
            docs = mpirun_psrun(exe, ranks, d / f"count{ranks}_{rep}", "-e", "task-clock")
            out["count"].setdefault(ranks, []).append(docs)
        docs = mpirun_psrun(exe, ranks, d / f"profile{ranks}", "--profile", "ITIMER_PROF")
        out["profile"][ranks] = [docs]
    return out


def xml_sum(docs: list[Path], element: str, name: str | None = None) -> float:
    """An element's text summed over a job's reports (hwpcevent: the one named `name`)."""
    return sum(
        float(e.text)
        for doc in docs
        for e in etree.parse(str(doc)).getroot().iter(element)
        if name is None or e.get("name") == name
    )


def test_counting_and_profile_runs_filed_by_psprocess_then_task_clock_against_ranks(jobs, db_url, tmp_path):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "mpi", cwd=tmp_path, env=env))
    filed = 0
    for kind in ("count", "profile"):
        for ranks in RANKS:
            for docs in jobs[kind][ranks]:
                p = subprocess.run(
                    [sys.executable, "-m", "psuite.psprocess", "-c", "--archive", "mpi", "--db", db_url,
                     *map(str, docs)],
                    capture_output=True, text=True, cwd=tmp_path,
                )
                filed += 1
                assert p.returncode == 0, p.stderr
                assert p.stderr.strip().startswith(f"psprocess: filed run {filed} in experiment mpi")

    # one query: task clock against ranks over the three repetitions (the
    # profile runs have no task clock and are left out)
    doc = json.loads(ok(psbase("query", "mpi", "task_clock", "--by", "ranks", "-f", "json", cwd=tmp_path, env=env)))
    assert [r["ranks"] for r in doc["rows"]] == list(RANKS)
    for row in doc["rows"]:
        xs = [xml_sum(docs, "hwpcevent", "task-clock") for docs in jobs["count"][row["ranks"]]]
        assert row["task_clock count"] == REPETITIONS
        assert row["task_clock mean"] == pytest.approx(statistics.mean(xs), rel=1e-12)
        assert row["task_clock stddev"] == pytest.approx(statistics.stdev(xs), rel=1e-9)

    # the profile runs are there too, one per job, with their ranks and samples
    doc = json.loads(ok(psbase("query", "mpi", "total_samples", "--by", "ranks", "--stat", "mean,count", "-f", "json",
                               cwd=tmp_path, env=env)))
    assert [r["ranks"] for r in doc["rows"]] == list(RANKS)
    for row in doc["rows"]:
        [docs] = jobs["profile"][row["ranks"]]
        assert row["total_samples count"] == 1
        assert row["total_samples mean"] == xml_sum(docs, "totalsamples")
