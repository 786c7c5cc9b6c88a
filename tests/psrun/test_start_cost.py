"""What the library does in every measured process before main: the
configuration is read once, PAPI is not loaded only to learn that there is
nothing for it to count, and nothing is read that the run does not need."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.conftest import psrun_command, run_tool, validate

CONFIG = """<?xml version="1.0"?>
<ps_hwpc_eventlist class="PAPI">
  <ps_hwpc_event type="preset" name="PAPI_TOT_CYC"/>
  <ps_hwpc_event type="native" name="perf::TASK-CLOCK"/>
</ps_hwpc_eventlist>
"""


SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331, "riscv64": 241}


def hardware_pmu() -> bool:
    """Asked of the kernel directly, as perf would: can this process open
    an instructions counter (user domain, so perf_event_paranoid 2 allows it)?"""
    attr = bytearray(64)  # PERF_ATTR_SIZE_VER0
    attr[0:4] = (0).to_bytes(4, "little")  # PERF_TYPE_HARDWARE
    attr[4:8] = (64).to_bytes(4, "little")
    attr[8:16] = (1).to_bytes(8, "little")  # PERF_COUNT_HW_INSTRUCTIONS
    attr[40:48] = ((1 << 0) | (1 << 5) | (1 << 6)).to_bytes(8, "little")  # disabled, exclude_kernel, exclude_hv
    libc = ctypes.CDLL(None, use_errno=True)
    buf = (ctypes.c_char * 64).from_buffer(attr)
    fd = libc.syscall(SYS_PERF_EVENT_OPEN[os.uname().machine], buf, 0, -1, -1, 0)
    if fd >= 0:
        os.close(fd)
        return True
    return ctypes.get_errno() not in (2, 95, 19)  # ENOENT, EOPNOTSUPP, ENODEV


def maps_of_measured_cat(*psrun_args: str) -> tuple[subprocess.CompletedProcess, str]:
    p = run_tool("psrun", *psrun_args, "cat", "/proc/self/maps")
    assert p.returncode == 0, p.stderr
    return p, p.stdout


def test_papi_is_loaded_only_where_it_can_count(workdir):
    _, maps = maps_of_measured_cat("-q")
    [report] = list(Path(workdir).glob("cat.*.xml"))
    annotation = validate(report, "hwpcreport-0.3.dtd").findtext("annotation") or ""
    if hardware_pmu():
        assert "libpapi" in maps  # PAPI is the default backend where it can count
    else:
        assert "libpapi" not in maps
        assert "no hardware counters on this machine" in annotation
        # PAPI asked for by name is still loaded: the probe decides only the default
        report.unlink()
        _, forced = maps_of_measured_cat("-q", "--backend", "PAPI", "-e", "task-clock")
        assert "libpapi" in forced


def test_configuration_read_once_and_paranoia_not_read(workdir):
    """One open of the configuration in the measured process (the fallback
    backend reuses what was read), and perf_event_paranoid only read to
    explain a refusal - there is none in the user domain."""
    config = workdir / "events.xml"
    config.write_text(CONFIG)
    strace = shutil.which("strace")
    assert strace, "tests/run.sh installs strace"
    log = workdir / "trace"
    command = [psrun_command(), "-q", "-c", str(config), "/bin/true"]
    p = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=openat,execve", "-o", str(log), *command],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    text = log.read_text()
    # the measured image starts at the execve of /bin/true
    program = text[text.index('execve("/bin/true"') :]
    assert len(re.findall(re.escape(str(config)) + r'".*= \d+$', program, re.M)) == 1, program
    uses_papi = "libpapi" in program
    if not uses_papi:
        assert "perf_event_paranoid" not in program
