"""Every event psinv lists as available here is countable by the real
psrun with both backends (README: "Either spelling works with either
backend"): PAPI's perf:: names (perf::CS, perf::FAULTS, perf::MIGRATIONS,
perf::CGROUP-SWITCHES ...) with perf_event, and perf's names with PAPI.
This machine has no hardware PMU: the available events are the kernel's
software events."""

from __future__ import annotations

import pytest

from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports

PAGES = 300  # fresh pages work touches: at least this many (minor) page faults
# the spellings of the page-fault and minor-fault counts (the program's
# touches), and of the CPU clocks, in both tools' names
FAULTS = {
    "page-faults",
    "minor-faults",
    "perf::PAGE-FAULTS",
    "perf::FAULTS",
    "perf::MINOR-FAULTS",
    "perf::PERF_COUNT_SW_PAGE_FAULTS",
    "perf::PERF_COUNT_SW_PAGE_FAULTS_MIN",
}
CLOCKS = {
    "task-clock",
    "cpu-clock",
    "perf::TASK-CLOCK",
    "perf::CPU-CLOCK",
    "perf::PERF_COUNT_SW_TASK_CLOCK",
    "perf::PERF_COUNT_SW_CPU_CLOCK",
}


def available_events() -> list[tuple[str, str]]:
    """(name, backend) of each event psinv -e --available lists."""
    p = run_tool("psinv", "-e", "--available")
    assert p.returncode == 0, p.stderr
    names = []
    for line in p.stdout.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 4 and fields[3] == "yes":
            names.append((fields[0], fields[1]))
    return names


@pytest.mark.papi
def test_psinv_lists_the_spellings_the_audit_named():
    names = [name for name, _ in available_events()]
    for name in ("perf::CS", "perf::FAULTS", "perf::MIGRATIONS", "perf::CGROUP-SWITCHES", "task-clock"):
        assert name in names, names


@pytest.mark.parametrize("backend", ["perf_event", "PAPI"])
def test_every_available_event_counts_with_either_backend(targets, workdir, backend):
    failures = []
    for name, lister in available_events():
        for old in reports(workdir):
            old.unlink()
        p = run_tool("psrun", "-e", name, "--backend", backend, targets["work"], str(PAGES), "0", "0")
        if (
            backend == "PAPI"
            and lister == "perf_event"
            and f"not counted: {name}: this PAPI does not know it" in p.stderr
        ):
            # a kernel event this PAPI's perf_event component has no name
            # for: said so, with the backend that counts it (checked above)
            assert "--backend perf_event counts it" in p.stderr, p.stderr
            continue
        if p.returncode != 0 or p.stdout != f"work done: {PAGES} pages\n":
            failures.append((name, p.returncode, p.stderr.strip()))
            continue
        [report] = reports(workdir)
        root = validate(report, "hwpcreport-0.3.dtd")
        events = list(root.iter("hwpcevent"))
        if len(events) != 1:
            failures.append((name, "counted", [e.get("name") for e in events], root.findtext("annotation")))
            continue
        value = int(events[0].text)
        if name in FAULTS and value < PAGES:
            failures.append((name, "faults", value))
        elif name in CLOCKS and value <= 0:
            failures.append((name, "clock", value))
        elif value < 0:
            failures.append((name, "value", value))
    assert failures == []


@pytest.mark.papi
@pytest.mark.parametrize("name", ["perf::PAGE-FAULTS-MIN", "perf::MINOR-FAULTS", "minor-faults"])
def test_minor_faults_in_any_spelling_count_with_papi(targets, workdir, name):
    """perf::PAGE-FAULTS-MIN (from PAPI's PERF_COUNT_SW_PAGE_FAULTS_MIN) is no
    name of libpfm4's table: PAPI is given perf::MINOR-FAULTS for it."""
    p = run_tool("psrun", "-q", "-e", name, "--backend", "PAPI", targets["work"], str(PAGES), "0", "0")
    assert p.returncode == 0 and p.stdout == f"work done: {PAGES} pages\n", p.stderr
    [report] = reports(workdir)
    [event] = validate(report, "hwpcreport-0.3.dtd").iter("hwpcevent")
    assert int(event.text) >= PAGES
