"""psuite's collector (csrc/runtime/collector.c): the process that writes a
measured process's reports, seen from the program and from psrun's user."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from lxml import etree

from tests.conftest import one_line_error, psrun_command, run_tool

MODES = {"count": ["-e", "task-clock"], "profile": ["--profile", "ITIMER_PROF"], "callpath": ["--callpath"]}


@pytest.mark.parametrize("mode", list(MODES))
def test_the_collector_is_not_the_programs_child(targets, workdir, mode):
    """wait() and the kernel's list of children show the program no child
    of psuite's, in every mode."""
    exe = targets["collector_view"]
    bare = subprocess.run([exe, "children"], capture_output=True, text=True, timeout=60)
    p = run_tool("psrun", "-q", *MODES[mode], exe, "children")
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert "children: []" in bare.stdout
    assert len(list(workdir.glob("collector_view.*.xml"))) >= 1


def _annotation(path):
    return etree.parse(str(path)).getroot().findtext("annotation") or ""


@pytest.mark.parametrize("mode", ["count", "profile"])
def test_checkpoints_are_replaced_then_the_final_report_takes_their_place(targets, workdir, mode):
    """--checkpoint 0.2: while the program runs its report is there, marked
    a checkpoint; when it ends, the one report at that name is the final
    one, and no temporary file is left."""
    exe = targets["collector_view"]
    proc = subprocess.Popen([psrun_command(), "-q", "--checkpoint", "0.2", *MODES[mode], exe, "spin", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = set()
    while proc.poll() is None:
        for report in workdir.glob("collector_view.*.xml"):
            try:
                if "checkpoint: the process was still running" in _annotation(report):
                    seen.add(report.name)
            except (OSError, etree.XMLSyntaxError) as e:  # replaced whole: never half written
                raise AssertionError(f"{report.name} read while being replaced: {e}") from e
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (0, "spun\n"), err
    reports = sorted(workdir.glob("collector_view.*.xml"))
    assert seen and {r.name for r in reports} == seen, (seen, [r.name for r in reports])
    assert "checkpoint" not in _annotation(reports[0])
    assert not [f for f in os.listdir(workdir) if f.startswith(".psuite-")]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "1e9"])
def test_a_checkpoint_period_that_is_not_one_is_refused(targets, workdir, value):
    one_line_error(run_tool("psrun", "--checkpoint", value, targets["collector_view"], "children"), "psrun")
    one_line_error(run_tool("psrun", targets["collector_view"], "children",
                            env={**os.environ, "PSUITE_CHECKPOINT": value}), "psrun")
    assert not list(workdir.glob("*.xml"))


def test_followed_children_say_their_reports_on_psruns_stderr(targets, workdir):
    """-f: a child with its stderr on a file, which then execs: the file
    stays empty as without psrun, and psrun's stderr names all three
    reports (the parent, the child before its exec, the exec'd image)."""
    exe = targets["collector_view"]
    bare_file, file = workdir / "bare.err", workdir / "child.err"
    bare = subprocess.run([exe, "forkexec", str(bare_file)], capture_output=True, text=True, timeout=60)
    p = run_tool("psrun", "-f", "-e", "task-clock", exe, "forkexec", str(file))
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert file.read_bytes() == bare_file.read_bytes() == b""
    reports = sorted(workdir.glob("*.xml"))
    assert len(reports) == 3, [r.name for r in reports]
    said = [line for line in p.stderr.splitlines() if line.startswith("psrun: report: ")]
    assert sorted(line.removeprefix("psrun: report: ") for line in said) == [r.name for r in reports], p.stderr
