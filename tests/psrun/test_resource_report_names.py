"""psrun -R names the resource report as the counting report beside it:
the same program name (the file the kernel runs, as the runtime takes it)
and, under MPI, the same rank part.  psprocess -c on the directory
combines the counting reports and says, in one line, which resource
reports it left out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from lxml import etree

from tests.conftest import TARGETS, one_line_error, psrun_command, run_tool


def pairs(directory) -> dict[str, str]:
    """resource report -> the counting report named like it, for every resource report."""
    out = {}
    for resource in sorted(directory.glob("*.resource.xml")):
        counting = directory / resource.name.replace(".resource.xml", ".xml")
        assert counting.exists(), (resource.name, sorted(p.name for p in directory.iterdir()))
        out[resource.name] = counting.name
    return out


def test_open_mpi_ranks_name_their_resource_reports(workdir, tmp_path_factory):
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    exe = tmp_path_factory.mktemp("mpi") / "mpi_work"
    subprocess.run([mpicc, "-O1", "-o", str(exe), str(TARGETS / "mpi" / "mpi_work.c")], check=True)
    out = workdir / "ranks"
    out.mkdir()
    env = {**os.environ, "OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
    p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "2", "--mca", "btl", "self,vader",
                        psrun_command(), "-q", "-R", "-d", str(out), "-e", "task-clock,page-faults", str(exe)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ranks 2 done" in p.stdout
    named = pairs(out)
    assert sorted(name.split(".")[:2] for name in named) == [["mpi_work", "r0"], ["mpi_work", "r1"]]
    assert all(etree.parse(str(out / resource)).getroot().tag == "resourcereport" for resource in named)

    c = run_tool("psprocess", "-c", "-f", "json", str(out))
    assert c.returncode == 0, c.stderr
    assert len(json.loads(c.stdout)["reports"]) == 2  # the ranks' counting reports
    lines = c.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("psprocess: warning: left out 2 resource reports ("), c.stderr
    assert all(name in lines[0] for name in named), lines[0]


def test_program_name_is_the_file_the_kernel_runs(workdir):
    python = shutil.which("python3")
    real = os.path.basename(os.path.realpath(python))
    p = run_tool("psrun", "-q", "-R", "-e", "task-clock", python, "-c", "pass")
    assert p.returncode == 0, p.stderr
    [(resource, counting)] = pairs(workdir).items()
    assert resource.startswith(f"{real}.") and counting.startswith(f"{real}.")


def test_script_is_named_by_its_interpreter_as_its_counting_report(workdir):
    script = workdir / "job.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    script.chmod(0o755)
    p = run_tool("psrun", "-q", "-R", "-e", "task-clock", str(script))
    assert p.returncode == 0, p.stderr
    [(resource, counting)] = pairs(workdir).items()
    assert resource.split(".")[0] == os.path.basename(os.path.realpath("/bin/sh"))


def test_prefix_names_both(workdir):
    p = run_tool("psrun", "-q", "-R", "-o", "mine", "-e", "task-clock", "true")
    assert p.returncode == 0, p.stderr
    [(resource, counting)] = pairs(workdir).items()
    assert resource.startswith("mine.") and counting.startswith("mine.")


def test_combining_only_resource_reports_is_refused(workdir):
    p = run_tool("psrun", "-q", "-R", "-e", "task-clock", "true")
    assert p.returncode == 0, p.stderr
    for counting in pairs(workdir).values():
        (workdir / counting).unlink()
    line = one_line_error(run_tool("psprocess", "-c", str(workdir)), "psprocess")
    assert "only resource reports" in line, line
