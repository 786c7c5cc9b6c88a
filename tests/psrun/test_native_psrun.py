"""The native psrun launcher (csrc/psrun/psrun.c) through the real,
installed command: the program behaves as it does without psrun (output,
status, signal, dispositions and mask), psrun's own failures never change
the program's status, option errors come before the program runs, and no
Python process is ever started."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lxml import etree

from psuite.psrun import executable
from tests.conftest import one_line_error, run_tool

SIGSTATE = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "hup") == 0) {
        raise(SIGHUP);
        printf("alive after SIGHUP\n");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "pid") == 0) {
        printf("%d\n", (int)getpid());
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "wait") == 0) {
        printf("ready\n");
        fflush(stdout);
        pause();
        return 0;
    }
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "SigIgn:", 7) == 0 || strncmp(line, "SigBlk:", 7) == 0)
            fputs(line, stdout);
    return argc > 1 ? atoi(argv[1]) : 0;
}
"""


def _installed() -> str:
    """The command pip installed next to this interpreter (or on PATH), else
    the package's own copy."""
    beside = Path(sys.executable).parent / "psrun"
    if beside.exists():
        return str(beside)
    return shutil.which("psrun") or executable()


PSRUN = _installed()


def psrun(*args: str, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run([PSRUN, *args], **kw)


@pytest.fixture(scope="session")
def sigstate(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("native") / "sigstate"
    src = out.with_suffix(".c")
    src.write_text(SIGSTATE)
    subprocess.run([shutil.which("cc") or "gcc", "-O1", "-o", str(out), str(src)], check=True)
    return str(out)


def reports(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix == ".xml" and len(p.name.split(".")) >= 4)


def with_dispositions(ignore=(), block=()):
    def setup() -> None:
        for s in ignore:
            signal.signal(s, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, block)
    return setup


# ---- help and options -----------------------------------------------------

# Every option psrun has, with the start of its help text.
OPTIONS = (
    ("-c", "--config", "PerfSuite event list"), ("-e", "--events", "comma-separated event names"),
    (None, "--domain", "count in this domain"), (None, "--backend", "force a counting backend"),
    ("-o", "--output", "report file prefix"), ("-d", "--directory", "directory for the report"),
    ("-q", "--quiet", "only errors; no"), (None, "--profile", "sample instead of counting"),
    (None, "--period", "sampling period: microseconds"), ("-p", "--per-thread", "also one report per thread"),
    ("-R", "--resources", "also a resource report"), (None, "--interval", "with -R: seconds between"),
    ("-f", "--follow", "measure the processes"), ("-h", "--help", "show this help"),
    (None, "--version", "show program's version"),
)


def test_help_is_complete_and_version():
    p = psrun("--help")
    assert p.returncode == 0 and p.stderr == ""
    for short, long, text in OPTIONS:
        for flag in (short, long):
            if flag:
                assert flag in p.stdout, flag
        assert text in " ".join(p.stdout.split()), text
    for text in ("PS_HWPC_CONFIG", "PSUITE_OUTPUT_PREFIX", "PSUITE_OUTPUT_DIR", "PSUITE_PAPI_LIBRARY", "100 us",
                 "kernel tick", "exit status", "examples:"):
        assert text in p.stdout, text
    v = psrun("--version")
    assert v.returncode == 0 and v.stdout.startswith("psrun (psuite) ")


@pytest.mark.parametrize("args,needle", [
    ((), "no program"),
    (("--",), "no program"),
    (("-q", "--"), "no program"),
    (("--bogus", "/bin/true"), "unrecognized"),
    (("-e",), "expected one argument"),
    (("--domain", "nowhere", "/bin/true"), "invalid choice"),
    (("--backend=x", "/bin/true"), "invalid choice"),
    (("-e", "task-clock", "--profile", "ITIMER_PROF", "/bin/true"), "give one"),
    (("--period", "10", "/bin/true"), "goes with --profile"),
    (("--interval", "1", "/bin/true"), "goes with -R"),
    (("-R", "--interval", "0", "/bin/true"), "--interval"),
    (("-e", " , ", "/bin/true"), "at least one event"),
    (("--profile", "task-clock", "/bin/true"), "threshold"),
    (("--profile", "ITIMER_PROF", "--period", "abc", "/bin/true"), "whole number"),
    (("--profile", "ITIMER_PROF", "--period", "-3", "/bin/true"), "positive"),
    (("-d", "/nonexistent-dir", "/bin/true"), "no such directory"),
    (("-c", "nope.xml", "/bin/true"), "nope.xml"),
    (("./nonexistent-program",), "not found"),
    (("/tmp",), "directory"),
])
def test_option_errors_are_one_line(workdir, args, needle):
    assert needle in one_line_error(psrun(*args), "psrun")


def test_output_prefix_errors_come_before_the_program(workdir):
    marker = workdir / "ran"
    prog = ["/usr/bin/touch", str(marker)]
    for args, env in ((["-o", "x" * 5000], {}), (["-o", "a/b"], {}), ([], {"PSUITE_OUTPUT_PREFIX": "a/b"}),
                      ([], {"PSUITE_OUTPUT_PREFIX": "y" * 5000}), (["-d", "d" * 5000], {})):
        p = psrun("-q", "-e", "task-clock", *args, *prog, env={**os.environ, **env})
        one_line_error(p, "psrun")
        assert not marker.exists(), (args, env)


def test_static_binary_refused(targets, workdir):
    assert "statically linked" in one_line_error(psrun(targets["static_hello"]), "psrun")


def test_odd_elf_files_are_left_to_exec(workdir):
    """A 55-byte ELF and one with a huge e_phoff: no crash, exec decides."""
    short = workdir / "short"
    short.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 48)
    data = bytearray(Path("/bin/true").read_bytes())
    data[32:40] = (0xFFFFFFFFFFFF0000).to_bytes(8, "little")
    huge = workdir / "huge"
    huge.write_bytes(bytes(data))
    for f in (short, huge):
        f.chmod(0o755)
        line = one_line_error(psrun("-q", "-e", "task-clock", str(f)), "psrun")  # not a crash
        assert "cannot run" in line and "Exec format error" in line


# ---- the program's own behaviour ------------------------------------------

def test_output_status_and_stdin_as_bare(targets, workdir):
    argv = [targets["work"], "10", "0", "7", "echo"]
    bare = subprocess.run(argv, input="hello\n", capture_output=True, text=True)
    p = psrun("-q", "-e", "task-clock", *argv, input="hello\n")
    assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, bare.stderr) == (7, bare.stdout, "")
    assert len(reports(workdir)) == 1


def test_psrun_execs_the_program(sigstate, workdir):
    """Without -R the program is psrun's own process: same pid."""
    proc = subprocess.Popen([PSRUN, "-q", "-e", "task-clock", sigstate, "pid"], stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=60)
    assert int(out) == proc.pid


@pytest.mark.parametrize("resources", [False, True])
def test_signal_dispositions_and_mask_as_the_caller_set_them(sigstate, workdir, resources):
    extra = ["-R", "--interval", "0.05"] if resources else []
    cases = [
        with_dispositions(),
        with_dispositions(ignore=(signal.SIGHUP, signal.SIGPIPE), block=(signal.SIGUSR1, signal.SIGTERM)),
        with_dispositions(ignore=(signal.SIGINT, signal.SIGQUIT, signal.SIGXFSZ), block=(signal.SIGCHLD,)),
        with_dispositions(ignore=(signal.SIGCHLD, signal.SIGTERM, signal.SIGUSR2)),
    ]
    for setup in cases:
        bare = subprocess.run([sigstate, "4"], capture_output=True, text=True, preexec_fn=setup)
        p = psrun("-q", "-e", "task-clock", *extra, sigstate, "4", preexec_fn=setup)
        assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, "") == (4, bare.stdout, "")


def test_sigpipe_into_head(workdir):
    script = (f"yes | head -1 >/dev/null; a=${{PIPESTATUS[0]}}; "
              f"{PSRUN} -q -e task-clock yes | head -1 >/dev/null; b=${{PIPESTATUS[0]}}; echo $a $b")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60).stdout.split()
    assert out == ["141", "141"], out


def test_file_size_limit_gives_sigxfsz(workdir):
    dd = "dd if=/dev/zero of=big bs=1024 count=1000 2>/dev/null"
    script = f"ulimit -f 100; {dd}; a=$?; {PSRUN} -q -e task-clock {dd}; b=$?; echo $a $b"
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60).stdout.split()
    assert out == [str(128 + signal.SIGXFSZ)] * 2, out


def test_nohup_survives_sighup(sigstate, workdir):
    ign = with_dispositions(ignore=(signal.SIGHUP,))
    for extra in ([], ["-R"]):
        p = psrun("-q", "-e", "task-clock", *extra, sigstate, "hup", preexec_fn=ign)
        assert (p.returncode, p.stdout) == (0, "alive after SIGHUP\n"), p.stderr
    p = psrun("-q", "-e", "task-clock", sigstate, "hup")
    assert p.returncode == -signal.SIGHUP


@pytest.mark.parametrize("resources", [False, True])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGSEGV])
def test_waiting_parent_sees_the_signal(targets, workdir, resources, sig):
    extra = ["-R", "--interval", "0.05"] if resources else []
    bare = subprocess.run([targets["killself"], str(int(sig))])
    p = psrun("-q", "-e", "task-clock", *extra, targets["killself"], str(int(sig)))
    assert bare.returncode == p.returncode == -sig, p.stderr
    if resources:
        [path] = workdir.glob("*.resource.xml")
        code = etree.parse(str(path)).getroot().find("exitcode")
        assert (code.get("type"), code.text) == ("signal", str(int(sig)))
        assert signal.Signals(sig).name in p.stderr
    assert not list(workdir.glob("core*"))


def test_signal_sent_to_psrun_with_r_reaches_the_program(sigstate, workdir):
    proc = subprocess.Popen([PSRUN, "-q", "-e", "task-clock", "-R", sigstate, "wait"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM


def test_stderr_full_or_closed_does_not_change_the_status(targets, workdir):
    argv = [targets["work"], "0", "0", "3"]
    with open("/dev/full", "w") as full:
        for extra in ([], ["-R"], ["--profile", "ITIMER_PROF", "--period", "5"]):
            p = subprocess.run([PSRUN, *extra, "-d", "/sys", *argv], stderr=full, stdout=subprocess.PIPE,
                               text=True, timeout=120)
            assert p.returncode == 3 and "psrun" not in p.stdout, extra
    for extra in ("", "-R"):
        script = f"{PSRUN} {extra} -d /sys {' '.join(argv)} 2>&-; echo status $?"
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120).stdout
        assert out.endswith("status 3\n") and "psrun" not in out, out


def test_script_without_interpreter_line(workdir):
    """Refused (psrun would measure /bin/sh); with a #! line it runs."""
    script = workdir / "steps"
    script.write_text("echo step one\nexit 6\n")
    script.chmod(0o755)
    assert "without a #! line" in one_line_error(psrun("-q", "-e", "task-clock", str(script)), "psrun")
    script.write_text("#!/bin/sh\necho step one\nexit 6\n")
    p = psrun("-q", "-e", "task-clock", str(script))
    assert (p.returncode, p.stdout) == (6, "step one\n"), p.stderr


# ---- periods ------------------------------------------------------------------

def test_too_small_period_is_raised_with_a_note(targets, workdir):
    start = time.monotonic()
    p = psrun("--profile", "ITIMER_PROF", "--period", "5", targets["work"], "0", "0", "0", timeout=60)
    assert p.returncode == 0, p.stderr
    assert time.monotonic() - start < 30
    assert "--period 5 is too short for ITIMER_PROF" in p.stderr
    q = psrun("-q", "--profile", "task-clock", "--period", "10", targets["work"], "0", "0", "0", timeout=60)
    assert q.returncode == 0 and q.stderr == ""


# ---- environment and report ---------------------------------------------------

def test_environment_set_up_as_documented(sigstate, workdir):
    out = workdir / "out"
    out.mkdir()
    env = {**os.environ, "LD_PRELOAD": "", "PS_HWPC_CONFIG": "/nonexistent.xml"}
    proc = subprocess.Popen([PSRUN, "-q", "-p", "-f", "--domain", "all", "--backend", "perf_event", "-o", "pre",
                             "-d", "out", "-e", " task-clock , page-faults,", "-R", sigstate, "wait"],
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline() == "ready\n"
    [child] = [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
    environ = dict(kv.split("=", 1) for kv in Path(f"/proc/{child}/environ").read_text().split("\0") if "=" in kv)
    os.kill(child, signal.SIGTERM)
    proc.communicate(timeout=60)
    lib = Path(environ["LD_PRELOAD"])
    assert lib.name == "libpshwpc.so" and lib.is_file()
    assert environ["PSUITE_EVENTS"] == "task-clock,page-faults"
    assert (environ["PSUITE_DOMAIN"], environ["PSUITE_BACKEND"]) == ("all", "perf_event")
    assert environ["PSUITE_QUIET"] == environ["PSUITE_PER_THREAD"] == environ["PSUITE_FOLLOW"] == "1"
    assert environ["PSUITE_OUTPUT_DIR"] == str(out) and environ["PSUITE_OUTPUT_PREFIX"] == "pre"
    assert environ["PSUITE_PRELOAD"] == "1" and environ["PSUITE_RESOURCE_FILE"]
    assert [p.name.split(".")[0] for p in out.glob("*.resource.xml")] == ["pre"]


def test_resource_report_read_by_psprocess(targets, workdir):
    p = psrun("-R", "--interval", "0.1", "-e", "task-clock", targets["work"], "2000", "300", "3")
    assert p.returncode == 3, p.stderr
    assert sum(line.startswith("psrun: report: ") for line in p.stderr.splitlines()) == 2, p.stderr
    [path] = workdir.glob("*.resource.xml")
    doc = run_tool("psprocess", "-f", "json", str(path))
    assert doc.returncode == 0, doc.stderr
    import json

    r = json.loads(doc.stdout)["reports"][0]
    assert (r["exit_type"], r["exit_code"]) == ("exit", 3)
    assert r["samples"] >= 1 and r["frequency"] == 10
    assert sum(r["loads"].values()) + r["load_outofrange"] == r["samples"]
    assert r["maxrss_mb"] >= 2000 * 4 / 1024


def test_odd_bytes_in_the_command_make_well_formed_resource_reports(workdir):
    p = psrun("-q", "-R", "-e", "task-clock", "/bin/echo", "a\xff<&>\x01b", "\ufffe", errors="surrogateescape")
    assert p.returncode == 0
    [path] = workdir.glob("*.resource.xml")
    etree.parse(str(path))


def test_no_python_is_started(workdir):
    """Where no Python can start (no PATH, PYTHONHOME pointing nowhere), psrun
    runs the program; strace sees exactly two execve: psrun's and the
    program's."""
    env = {"PATH": "/nonexistent", "PYTHONHOME": "/nonexistent", "PYTHONPATH": "/nonexistent"}
    p = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in env.items()), PSRUN, "-q", "-e", "task-clock",
                        "/bin/echo", "measured"], capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout, p.stderr) == (0, "measured\n", "")
    assert len(reports(workdir)) == 1
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace not installed")
    for extra in ([], ["-R"]):
        log = workdir / "trace"
        t = subprocess.run([strace, "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-o", str(log), PSRUN,
                            "-q", "-e", "task-clock", *extra, "/bin/true"], capture_output=True, text=True,
                           timeout=60)
        if t.returncode != 0 and "ptrace" in t.stderr:
            pytest.skip(f"strace cannot trace here: {t.stderr.strip()}")
        calls = [line for line in log.read_text().splitlines() if "execve(" in line]
        assert len(calls) == 2 and "/bin/true" in calls[1], calls
        assert not any("python" in c for c in calls), calls


def test_python_api_runs_the_native_command(targets, workdir):
    from psuite import psrun as api

    p = api.run(["-q", "-e", "task-clock", targets["work"], "0", "0", "9"], capture_output=True, text=True)
    assert p.returncode == 9 and p.stderr == ""
    assert Path(api.executable()).parent.joinpath("libpshwpc.so").exists()
    assert len(reports(workdir)) == 1
