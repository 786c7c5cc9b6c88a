"""Statistical profiles end to end on real programs: psrun samples,
psprocess resolves.  Shares against known work, wall time against CPU
time, samples per thread, and every resolved PC against addr2line."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from psuite.analysis import srcmap
from psuite.analysis.inputs import load
from tests.conftest import one_line_error, run_tool, validate
from tests.psprocess.conftest import PROFILE_SRC


def profile(directory: Path, *args: str) -> list[Path]:
    p = run_tool("psrun", "-q", *args)
    assert p.returncode == 0, p.stderr
    return sorted(directory.glob("*.xml"))


def function_shares(report) -> dict[str, float]:
    resolved = load(str(report))
    total = sum(loc.samples for loc in srcmap.resolve(resolved))
    shares: dict[str, float] = {}
    for loc in srcmap.resolve(resolved):
        shares[loc.function] = shares.get(loc.function, 0) + 100.0 * loc.samples / total
    return shares


def test_shares_match_the_known_split(programs, workdir):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", programs["prof_split"], "150")
    validate(report, "hwpcreport-0.3.dtd")
    shares = function_shares(report)
    for function, truth in (("heavy", 60.0), ("lib_work", 30.0), ("medium", 10.0)):
        assert shares.get(function, 0.0) == pytest.approx(truth, abs=3.0), shares
    text = run_tool("psprocess", str(report))
    assert text.returncode == 0, text.stderr
    assert re.search(r"Function Summary.*heavy.*lib_work.*medium", text.stdout, re.S)
    assert "delivered" in text.stdout  # the rate actually delivered is stated


def test_real_time_sees_sleeping_that_cpu_time_does_not(programs, workdir):
    """0.4 s asleep in libc's nanosleep after the work: ITIMER_REAL (2 ms)
    samples it about 200 times, ITIMER_PROF hardly ever.  Counted in
    samples of the sleep rather than as a share of the run: on a loaded
    machine the work's wall time grows, the sleep's does not."""
    def libc_samples(timer: str) -> tuple[int, int]:
        for old in workdir.glob("*.xml"):
            old.unlink()
        [report] = profile(workdir, "--profile", timer, "--period", "2000", programs["prof_split"], "40", "400")
        r = load(str(report))
        total = sum(sum(m.samples.values()) for m in r.modules)
        in_libc = sum(sum(m.samples.values()) for m in r.modules if "libc" in Path(m.file).name)
        return in_libc, total

    real, _ = libc_samples("ITIMER_REAL")
    assert real >= 100, real  # 400 ms / 2 ms = 200; expiries while a signal is pending are merged
    cpu, total = libc_samples("ITIMER_PROF")
    assert cpu < 0.05 * total, (cpu, total)


def test_samples_land_on_their_threads(programs, workdir):
    reports = profile(workdir, "--profile", "ITIMER_PROF", "--period", "2000", "-p", programs["prof_threads"])
    by_thread = {load(str(r)).thread: r for r in reports}
    assert set(by_thread) == {0, 1, 2, 3}  # the process (thread 0), main, two workers
    for r in reports:
        validate(r, "hwpcreport-0.3.dtd")
    a, b = function_shares(by_thread[2]), function_shares(by_thread[3])
    assert a.get("work_a", 0) > 95 and b.get("work_b", 0) > 95, (a, b)
    assert load(str(by_thread[1])).total_samples < 0.05 * load(str(by_thread[0])).total_samples


def addr2line(path: str, addresses: list[int]) -> dict[int, tuple[str, str, int]]:
    """First (innermost) function and file:line per address, from binutils."""
    tool = shutil.which("addr2line")
    assert tool, "addr2line (binutils) is needed; tests/run.sh installs it"
    out = subprocess.run([tool, "-a", "-f", "-i", "-C", "-e", path, *(hex(a) for a in addresses)],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    result, i = {}, 0
    while i < len(out):
        addr = int(out[i], 16)
        function, where = out[i + 1], out[i + 2]
        file, _, line = where.rpartition(":")
        line = line.split()[0]  # "12 (discriminator 3)"
        result[addr] = (file, function, int(line) if line.isdigit() else 0)
        i += 3
        while i < len(out) and not out[i].startswith("0x"):
            i += 2  # the inline chain's outer frames
    return result


def test_every_pc_agrees_with_addr2line(programs, workdir):
    reports = profile(workdir, "--profile", "ITIMER_PROF", "--period", "500", programs["prof_split"], "60")
    r = load(str(reports[0]))
    checked = 0
    for module in r.modules:
        if module.file not in (programs["prof_split"], programs["lib"]):
            continue
        ours = srcmap.resolve_module_pcs(module)
        theirs = addr2line(module.file, [pc - module.offset for pc in module.samples])
        for pc in module.samples:
            assert ours[pc] == theirs[pc - module.offset], hex(pc - module.offset)
            checked += 1
    assert checked >= 3


def test_profiling_errors(programs, workdir, tmp_path_factory):
    assert "goes with --profile" in one_line_error(run_tool("psrun", "--period", "10", programs["prof_split"]),
                                                   "psrun")
    assert "each choose" in one_line_error(run_tool("psrun", "--profile", "ITIMER_PROF", "-e", "task-clock",
                                                    programs["prof_split"]), "psrun")
    assert "overflow threshold" in one_line_error(run_tool("psrun", "--profile", "task-clock",
                                                           programs["prof_split"]), "psrun")
    bad = tmp_path_factory.mktemp("configs") / "bad.xml"
    bad.write_text('<ps_hwpc_profile class="itimer"><ps_hwpc_event name="ITIMER_FOO" threshold="100"/>'
                   "</ps_hwpc_profile>")
    assert "ITIMER_FOO" in one_line_error(run_tool("psrun", "-c", str(bad), programs["prof_split"]), "psrun")
    assert list(workdir.glob("*.xml")) == []


def test_profile_configuration_file_and_event_overflow(programs, workdir, tmp_path_factory):
    cfg = tmp_path_factory.mktemp("configs") / "prof.xml"
    cfg.write_text('<ps_hwpc_profile class="perfmon"><ps_hwpc_event type="native" name="task-clock" '
                   'threshold="2000000"/></ps_hwpc_profile>')
    [report] = profile(workdir, "-c", str(cfg), programs["prof_split"], "60")
    root = validate(report, "hwpcreport-0.3.dtd")
    assert root.find("hwpcprofiledata/profileinfo/profileevent").get("name") == "task-clock"
    shares = function_shares(report)
    assert shares.get("heavy", 0) == pytest.approx(60, abs=8)


def test_processed_profile_round_trip(programs, workdir):
    [raw] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", programs["prof_split"], "40")
    processed = workdir / "processed.out"
    p = run_tool("psprocess", "-x", "-o", str(processed), str(raw))
    assert p.returncode == 0, p.stderr
    root = validate(processed, "hwpcprofilereport-0.3.dtd")
    assert root.find("hwpcprofile").get("mapper") == srcmap.MAPPER
    again = run_tool("psprocess", "-f", "json", str(processed))
    direct = run_tool("psprocess", "-f", "json", str(raw))
    import json

    def functions(doc: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for loc in json.loads(doc)["reports"][0]["locations"]:
            out[loc["function"]] = out.get(loc["function"], 0) + loc["samples"]
        return out

    assert functions(again.stdout) == functions(direct.stdout)


ORIGINAL_PROCESSED = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE hwpcprofilereport SYSTEM "/usr/share/perfsuite/dtds/pshwpc/hwpcprofilereport-0.2.dtd">
<hwpcprofilereport version="0.2" generator="psprocess">
<date>Tue Mar  7 10:00:00 2006</date><hostname>node1</hostname><domainname>ncsa.uiuc.edu</domainname>
<executioninfo><date>Tue Mar  7 09:59:00 2006</date><hostname>node1</hostname><domainname>x</domainname>
<pid>4242</pid><command>./a.out</command><wallclock units="seconds">2.0</wallclock>
<cputime units="seconds"><usertime>1.9</usertime><systemtime>0.1</systemtime></cputime>
<machineinfo><cpucount>2</cpucount><cpuinfo><vendor>GenuineIntel</vendor><family>15</family><model>2</model>
<revision>7</revision><clockspeed units="MHz">2400</clockspeed></cpuinfo><memoryinfo units="MB">1024</memoryinfo>
<syspagesize units="KB">4</syspagesize></machineinfo></executioninfo>
<hwpcprofile mapper="binutils"><hwpcevent class="itimer" name="ITIMER_PROF" domain="user"/>
<period>10000</period><totalsamples>200</totalsamples>
<module name="/home/u/a.out"><file name="main.c"><function name="compute"><line lineno="12">150</line>
<line lineno="13">20</line></function></file>
<file name="??"><function name="??"><line lineno="0">30</line></function></file></module>
</hwpcprofile></hwpcprofilereport>"""


def test_reads_original_perfsuite_processed_profiles(tmp_path):
    doc = tmp_path / "orig.xml"
    doc.write_text(ORIGINAL_PROCESSED)
    p = run_tool("psprocess", str(doc))
    assert p.returncode == 0, p.stderr
    assert re.search(r"170\s+85\.00%\s+85\.00%\s+compute", p.stdout), p.stdout
    assert re.search(r"30\s+15\.00%\s+100\.00%\s+\?\?", p.stdout)
    assert "binutils" in p.stdout


def test_program_with_its_own_sigprof_keeps_working(programs, workdir):
    bare = subprocess.run([programs["own_sigprof"]], capture_output=True, text=True)
    p = run_tool("psrun", "--profile", "ITIMER_PROF", "--period", "1000", programs["own_sigprof"])
    assert bare.returncode == 0 and p.returncode == 0, p.stderr
    own = int(p.stdout.split(":")[1])
    assert own >= 0.5 * int(bare.stdout.split(":")[1])  # its 10 ms timer still reaches its handler
    assert "own SIGPROF handler" in p.stderr and "interval timer" in p.stderr
    [report] = workdir.glob("*.xml")
    assert load(str(report)).total_samples > 150  # and the profile is unaffected (1 kHz over ~0.3 s)


def test_libraries_loaded_with_dlopen_are_covered(programs, workdir):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", programs["dlopen_main"],
                       programs["lib"])
    shares = function_shares(report)
    assert shares.get("lib_work", 0) > 90, shares


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "xml"])
def test_every_output_format_takes_a_profile(programs, workdir, fmt):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "2000", programs["prof_split"], "20")
    p = run_tool("psprocess", "-f", fmt, str(report))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "heavy" in p.stdout


def test_calibration_gives_the_rate_asked_for(programs, workdir):
    [counting] = profile(workdir, "-e", "task-clock", programs["prof_split"], "60")
    cfg = workdir / "calibrated.cfg"
    p = run_tool("psprocess", "--calibrate", "--rate", "500", "--write-config", str(cfg), str(counting))
    assert p.returncode == 0, p.stderr
    assert "ITIMER_PROF" in p.stdout and "2,000 us" in p.stdout
    counting.rename(workdir / "counting.keep")
    [prof] = profile(workdir, "-c", str(cfg), programs["prof_split"], "60")
    r = load(str(prof))
    assert r.event == "task-clock"
    assert r.total_samples == pytest.approx(500 * r.cputime, rel=0.2)
    assert "not a counting report" in one_line_error(run_tool("psprocess", "--calibrate", str(prof)), "psprocess")


def _pcs_agree(module_file: str, report) -> int:
    [module] = [m for m in report.modules if Path(m.file).name == Path(module_file).name]
    ours = srcmap.resolve_module_pcs(module)
    theirs = addr2line(module_file, [pc - module.offset for pc in module.samples])
    for pc in module.samples:
        assert ours[pc] == theirs[pc - module.offset], hex(pc - module.offset)
    return len(module.samples)


def test_cxx_names_are_demangled(workdir, tmp_path_factory):
    exe = tmp_path_factory.mktemp("cxx") / "cxx_work"
    subprocess.run(["g++", "-O1", "-g", "-o", str(exe), str(PROFILE_SRC / "cxx_work.cpp")], check=True)
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "500", str(exe), "3000")
    shares = function_shares(report)
    assert {"work::Worker<long>::run(long)", "work::spin(long)", "work::spin(double)"} <= set(shares), shares
    assert _pcs_agree(str(exe), load(str(report))) >= 3


def test_stripped_binary_with_separate_debug_file(programs, workdir, tmp_path_factory):
    """Debug information in a separate file found through .gnu_debuglink;
    and the same binary without any: symbols only, file ?? and line 0."""
    d = tmp_path_factory.mktemp("stripped")
    exe, debug, bare = d / "prof_threads", d / "prof_threads.debug", d / "bare_threads"
    subprocess.run(["objcopy", "--only-keep-debug", programs["prof_threads"], str(debug)], check=True)
    subprocess.run(["objcopy", "--strip-debug", f"--add-gnu-debuglink={debug}", programs["prof_threads"],
                    str(exe)], check=True)
    subprocess.run(["objcopy", "--strip-debug", programs["prof_threads"], str(bare)], check=True)
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", str(exe))
    shares = function_shares(report)
    assert shares.get("work_a", 0) > 25 and shares.get("work_b", 0) > 50, shares
    assert all(loc.line > 0 for loc in srcmap.resolve(load(str(report))) if loc.module == str(exe))
    report.unlink()
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", str(bare))
    locs = [loc for loc in srcmap.resolve(load(str(report))) if loc.module == str(bare)]
    assert {loc.function for loc in locs} >= {"work_a", "work_b"}  # from the symbol table
    assert all(loc.file == "??" and loc.line == 0 for loc in locs)
    assert _pcs_agree(str(bare), load(str(report))) >= 2


def test_virtual_timer_and_threshold(programs, workdir):
    """ITIMER_VIRTUAL (user CPU time) samples the same work; --threshold
    leaves out what is below it and says how much it left out."""
    [report] = profile(workdir, "--profile", "ITIMER_VIRTUAL", "--period", "1000", programs["prof_split"], "60")
    r = load(str(report))
    assert r.event == "ITIMER_VIRTUAL" and r.total_samples > 100
    shares = function_shares(report)
    assert shares.get("heavy", 0) == pytest.approx(60, abs=5), shares
    cut = run_tool("psprocess", "--threshold", "20", str(report))
    assert cut.returncode == 0, cut.stderr
    summary = cut.stdout.split("Function Summary")[1].split("Function:File:Line Summary")[0]
    assert "heavy" in summary and "lib_work" in summary and "medium" not in summary
    assert "more below 20%" in summary


def test_progress_on_a_terminal_only(programs, workdir):
    import os
    import pty
    import sys

    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", programs["prof_split"], "20")
    quiet = run_tool("psprocess", "-o", str(workdir / "a.txt"), str(report))
    assert quiet.returncode == 0 and quiet.stderr == ""
    pid, fd = pty.fork()
    if pid == 0:  # the child: stderr is a terminal
        os.execv(sys.executable, [sys.executable, "-m", "psuite.psprocess", "-o", str(workdir / "b.txt"),
                                  str(report)])
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"psprocess: resolving" in seen and b"PCs" in seen
