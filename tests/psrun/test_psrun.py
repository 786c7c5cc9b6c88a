"""psrun on real programs: pass-through of status, output and signals;
reports valid against hwpcreport-0.3.dtd; configuration errors."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_tool, validate


def reports(directory) -> list:
    """Reports psrun wrote (<prefix>.<pid>.<host>.xml), not other XML there."""
    return sorted(p for p in directory.iterdir() if p.suffix == ".xml" and len(p.name.split(".")) >= 4)


def test_exit_status_and_output_pass_through(targets, workdir):
    p = run_tool("psrun", "-e", "task-clock,page-faults", targets["work"], "10", "0", "7", "echo",
                 input="hello from stdin\n")
    assert p.returncode == 7, p.stderr
    assert p.stdout == "hello from stdin\nwork done: 10 pages\n"
    assert all(line.startswith("psrun: ") for line in p.stderr.splitlines())
    [report] = reports(workdir)
    assert report.name.startswith("work.")
    root = validate(report, "hwpcreport-0.3.dtd")
    names = [e.get("name") for e in root.iter("hwpcevent")]
    assert len(names) == 2


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT])
def test_signal_death_is_passed_on(targets, workdir, sig):
    """psrun execs the program: a parent waiting for psrun sees it killed by
    the same signal (WIFSIGNALED, returncode -N) as for the bare program,
    with the same output and nothing added on stderr under -q."""
    bare = subprocess.run([targets["killself"], str(int(sig))], capture_output=True, text=True)
    p = run_tool("psrun", "-q", "-e", "task-clock", targets["killself"], str(int(sig)))
    assert bare.returncode == -sig
    assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, bare.stderr)
    assert not list(workdir.glob("core*"))  # the program's core behaviour: none here, as bare
    [report] = reports(workdir)
    assert signal.Signals(sig).name in validate(report, "hwpcreport-0.3.dtd").findtext("annotation")


def test_default_configuration_reports_what_it_dropped(targets, workdir):
    p = run_tool("psrun", targets["work"], "0", "0", "0")
    assert p.returncode == 0, p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    counted = {e.get("name") for e in root.iter("hwpcevent")}
    from psuite.hwpc.events import probe

    if probe("PAPI_TOT_CYC")[0] != 0:  # no PMU here: the preset must be reported as dropped
        assert "PAPI_TOT_CYC" in p.stderr and "not counted" in p.stderr
        assert "PAPI_TOT_CYC" not in counted
        assert "PAPI_TOT_CYC" in root.findtext("annotation")
    assert any("TASK-CLOCK" in n.upper() for n in counted)


@pytest.mark.parametrize("backend,cls", [("PAPI", "PAPI"), ("perf_event", "perfmon")])
def test_backends_write_their_class(targets, workdir, backend, cls):
    p = run_tool("psrun", "--backend", backend, "-e", "task-clock", targets["work"])
    assert p.returncode == 0, p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert root.find("hwpceventdata").get("class") == cls


def test_unknown_event_stops_before_launch(targets, workdir):
    p = run_tool("psrun", "-e", "task-clock,NO_SUCH_EVENT", targets["ctor_hello"])
    line = one_line_error(p, "psrun")
    assert "NO_SUCH_EVENT" in line
    assert p.stdout == ""  # none of the program's code ran, not even its constructors
    assert reports(workdir) == []
    ok = run_tool("psrun", "-q", "-e", "task-clock", targets["ctor_hello"])
    assert ok.stdout == "constructor ran\nmain ran\n"


def test_nothing_countable_falls_back_to_software_events(targets, workdir):
    """Hardware events on a machine without a PMU (this VM): psrun says so,
    counts software events instead and records both in the report.  Where a
    PMU exists the events are simply counted."""
    from psuite.hwpc.events import probe

    p = run_tool("psrun", "-e", "PAPI_TOT_CYC,PAPI_TOT_INS", targets["work"], "0", "0", "3")
    assert p.returncode == 3
    if probe("PAPI_TOT_CYC")[0] == 0:
        [report] = reports(workdir)
        assert [e.get("name") for e in validate(report, "hwpcreport-0.3.dtd").iter("hwpcevent")] == \
            ["PAPI_TOT_CYC", "PAPI_TOT_INS"]
        return
    lines = p.stderr.splitlines()
    assert any(ln.startswith("psrun: not counted: PAPI_TOT_CYC, PAPI_TOT_INS: ") for ln in lines), p.stderr
    assert any("counting task-clock, page-faults, context-switches instead" in ln for ln in lines)
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert "PAPI_TOT_CYC, PAPI_TOT_INS" in root.findtext("annotation")
    assert "counted instead: task-clock, page-faults, context-switches" in root.findtext("annotation")
    assert len(list(root.iter("hwpcevent"))) == 3


def test_quiet_says_nothing_but_errors(targets, workdir):
    p = run_tool("psrun", "-q", targets["work"], "0", "0", "0")
    assert p.returncode == 0 and p.stderr == ""
    assert len(reports(workdir)) == 1


def test_malformed_configuration(targets, workdir):
    bad = workdir / "bad.xml"
    bad.write_text("<ps_hwpc_eventlist class='PAPI'><ps_hwpc_event name='x'>")
    line = one_line_error(run_tool("psrun", "-c", str(bad), targets["work"]), "psrun")
    assert "bad.xml" in line and "well-formed" in line
    missing = one_line_error(run_tool("psrun", "-c", "nope.xml", targets["work"]), "psrun")
    assert "nope.xml" in missing


def test_configuration_from_environment(targets, workdir):
    cfg = workdir / "list.xml"
    cfg.write_text('<ps_hwpc_eventlist class="PAPI"><ps_hwpc_event type="native" name="perf::PAGE-FAULTS"/>'
                   "</ps_hwpc_eventlist>")
    p = run_tool("psrun", targets["work"], env={**os.environ, "PS_HWPC_CONFIG": str(cfg)})
    assert p.returncode == 0, p.stderr
    [report] = reports(workdir)
    assert [e.get("name") for e in validate(report, "hwpcreport-0.3.dtd").iter("hwpcevent")] == \
        ["perf::PAGE-FAULTS"]


def test_unwritable_directory_still_runs_the_program(targets, workdir):
    """The program runs and keeps its status; psrun says what was not saved.
    sysfs refuses new files even to root, so this holds as root too."""
    if os.geteuid() == 0:
        target = "/sys"
    else:
        target = workdir / "locked"
        target.mkdir()
        target.chmod(0o500)
    p = run_tool("psrun", "-e", "task-clock", "-d", str(target), targets["work"], "0", "0", "5")
    assert p.returncode == 5
    assert "work done" in p.stdout
    assert "could not save the report" in p.stderr
    assert all(line.startswith("psrun: ") for line in p.stderr.splitlines())


def test_report_directory_and_prefix(targets, workdir):
    out = workdir / "out"
    out.mkdir()
    p = run_tool("psrun", "-e", "task-clock", "-d", str(out), "-o", "myrun", targets["work"])
    assert p.returncode == 0, p.stderr
    [report] = reports(out)
    assert report.name.startswith("myrun.")


def test_program_not_found_and_static_binary(targets, workdir):
    assert "not found" in one_line_error(run_tool("psrun", "./nonexistent-program"), "psrun")
    assert "statically linked" in one_line_error(run_tool("psrun", targets["static_hello"]), "psrun")


def test_no_program_given():
    assert "no program" in one_line_error(run_tool("psrun"), "psrun")


def test_script_without_interpreter_line_is_refused(workdir):
    """A file without #! that the kernel will not run: a shell would hand it
    to /bin/sh, which psrun would measure instead, so it is refused (see
    test_program_checks.py); a file that cannot be run at all is a one-line
    error."""
    script = workdir / "steps"
    script.write_text("echo step one\nexit 6\n")
    script.chmod(0o755)
    p = run_tool("psrun", "-q", "-e", "task-clock", str(script))
    assert "without a #! line" in one_line_error(p, "psrun")
    assert p.stdout == "" and not reports(workdir)
    # A program whose dynamic loader does not exist: the kernel refuses it.
    data = Path(shutil.which("true")).read_bytes()
    loader = re.search(rb"/lib[^\0]*/ld-linux[^\0]*", data).group(0)
    broken = workdir / "broken"
    broken.write_bytes(data.replace(loader, b"/nonexistent/ld".ljust(len(loader), b"x"), 1))
    broken.chmod(0o755)
    line = one_line_error(run_tool("psrun", str(broken)), "psrun")
    assert "cannot run" in line and "No such file" in line
