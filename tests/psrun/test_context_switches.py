"""Context switches are counted where the kernel counts them: a task's
switches happen in the scheduler, in kernel mode, so the user domain (the
default) counts them in every domain and the report's annotation says so.
The count equals the program's own getrusage (voluntary + involuntary)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import psrun_command, run_tool, validate
from tests.psrun.test_psrun import reports

SWITCHER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    struct timespec brief = {0, 1000};
    for (int i = 0; i < n; i++)
        nanosleep(&brief, NULL); /* one voluntary switch each */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%ld\n", ru.ru_nvcsw + ru.ru_nivcsw);
    return 0;
}
"""

NOTE = ": in every domain, not the user domain alone"


@pytest.fixture(scope="module")
def switcher(tmp_path_factory) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    out = tmp_path_factory.mktemp("switcher")
    (out / "switcher.c").write_text(SWITCHER_C)
    subprocess.run([cc, "-O1", "-o", str(out / "switcher"), str(out / "switcher.c")], check=True)
    return str(out / "switcher")


def switches(root) -> int:
    [value] = [int(e.text) for e in root.iter("hwpcevent") if "CONTEXT-SWITCHES" in e.get("name").upper()
               or e.get("name") == "context-switches"]
    return value


def measure(switcher: str, workdir, *options: str):
    p = run_tool("psrun", *options, switcher, "2000")
    assert p.returncode == 0, p.stderr
    rusage = int(p.stdout)
    # a sleep whose timer expires before the thread has gone to sleep (on a
    # loaded machine) switches nothing: most of them switch all the same
    assert rusage >= 1800
    [report] = [r for r in reports(workdir) if ".t" not in r.name]
    return rusage, validate(report, "hwpcreport-0.3.dtd")


@pytest.mark.parametrize("backend", ["perf_event", "PAPI"])
def test_default_configuration_counts_context_switches_as_getrusage(switcher, workdir, backend):
    rusage, root = measure(switcher, workdir, "--backend", backend)
    assert root.find("hwpceventdata").get("domain") == "user"
    assert switches(root) == pytest.approx(rusage, rel=0.01)
    assert f"perf::CONTEXT-SWITCHES{NOTE}" in root.findtext("annotation")


@pytest.mark.parametrize("backend", ["perf_event", "PAPI"])
@pytest.mark.parametrize("domain", ["kernel", "all"])
def test_other_domains_count_them_without_a_note(switcher, workdir, backend, domain):
    rusage, root = measure(switcher, workdir, "--backend", backend, "--domain", domain)
    assert switches(root) == pytest.approx(rusage, rel=0.01)
    assert NOTE not in (root.findtext("annotation") or "")


@pytest.mark.parametrize("backend", ["perf_event", "PAPI"])
def test_events_named_on_the_command_line(switcher, workdir, backend):
    rusage, root = measure(switcher, workdir, "--backend", backend, "-e", "task-clock,context-switches,cpu-migrations")
    assert switches(root) == pytest.approx(rusage, rel=0.01)
    assert f"context-switches, cpu-migrations{NOTE}" in root.findtext("annotation")


def test_per_thread_report_counts_them_too(switcher, workdir):
    rusage, _ = measure(switcher, workdir, "-p", "-e", "context-switches")
    [thread] = [validate(r, "hwpcreport-0.3.dtd") for r in reports(workdir) if ".t" in r.name]
    assert switches(thread) == pytest.approx(rusage, rel=0.01)


def test_a_user_kept_from_kernel_mode_is_told_why(switcher, tmp_path):
    """perf_event_paranoid 2 (Debian's default) keeps users from kernel-mode
    counting: the event is dropped with that reason, never a silent 0;
    where it allows it, the user's count is getrusage's."""
    setpriv = shutil.which("setpriv")
    assert setpriv and os.getuid() == 0, "run as root with util-linux's setpriv (as CI does)"
    shared = Path(tempfile.mkdtemp(prefix="psuite-switches-", dir="/tmp"))
    try:
        shared.chmod(0o777)
        exe = shutil.copy(switcher, shared / "switcher")
        p = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", psrun_command(), "-e",
                            "task-clock,context-switches", "-d", str(shared), exe, "2000"],
                           capture_output=True, text=True, timeout=120, cwd=shared)
        assert p.returncode == 0, p.stderr
        [report] = [r for r in shared.glob("*.xml")]
        root = validate(report, "hwpcreport-0.3.dtd")
        paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
        if paranoid > 1:
            assert "not counted: context-switches: not permitted: the kernel counts it only in kernel mode, which " \
                   f"perf_event_paranoid {paranoid} keeps from this user" in root.findtext("annotation")
            assert "context-switches: not permitted" in p.stderr
        else:
            assert switches(root) == pytest.approx(int(p.stdout), rel=0.01)
    finally:
        shutil.rmtree(shared)
