"""Machine facts checked against independent sources on this machine."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from psuite.libperfsuite.machine import machine_info


@pytest.fixture(scope="module")
def info():
    return machine_info()


def cpuinfo_field(key: str) -> str | None:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.split(":")[0].strip() == key:
            return line.split(":", 1)[1].strip()
    return None


def test_cpu_count_matches_nproc(info):
    assert info.cpu_count == os.cpu_count()
    nproc = subprocess.run(["nproc", "--all"], capture_output=True, text=True, check=True).stdout
    assert info.cpu_count == int(nproc)


def test_page_size_matches_getconf(info):
    out = subprocess.run(["getconf", "PAGESIZE"], capture_output=True, text=True, check=True).stdout
    assert info.page_size == int(out)


def test_memory_matches_meminfo(info):
    kb = int(re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text()).group(1))
    assert info.memory_mb == kb // 1024


def test_identity_matches_proc_cpuinfo(info):
    assert info.vendor == cpuinfo_field("vendor_id")
    assert info.brand == cpuinfo_field("model name")
    assert info.family == int(cpuinfo_field("cpu family"))
    assert info.model == int(cpuinfo_field("model"))
    assert info.stepping == int(cpuinfo_field("stepping"))


def test_clock_matches_kernel(info):
    freq = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    expected = int(freq.read_text()) / 1000 if freq.exists() else float(cpuinfo_field("cpu MHz"))
    assert info.mhz == pytest.approx(expected, rel=1e-3)


def test_hypervisor_agrees_with_cpu_flags(info):
    flags = cpuinfo_field("flags").split()
    assert bool(info.hypervisor) == ("hypervisor" in flags)


def test_caches_match_sysfs(info):
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    expected = []
    for d in sorted(base.glob("index*")):
        kind = (d / "type").read_text().strip().lower()
        expected.append((
            int((d / "level").read_text()),
            {"data": "data", "instruction": "instruction"}.get(kind, "unified"),
            int((d / "size").read_text().strip().rstrip("K")),
            int((d / "coherency_line_size").read_text()),
        ))
    got = [(c.level, c.type, c.size_kb, c.line_size) for c in info.caches]
    assert got == expected
    assert all(c.associativity >= 0 for c in info.caches)


def test_l2_tlb_agrees_with_kernel_tlb_size(info):
    """On AMD the kernel's "TLB size" is the L2 4K dTLB + iTLB entries."""
    if info.vendor != "AuthenticAMD":
        pytest.skip("the kernel reports 'TLB size' on AMD processors only")
    tlb_size = int(cpuinfo_field("TLB size").split()[0])
    l2 = [t.entries for t in info.tlbs if t.level == 2 and t.page_kb == 4]
    assert sum(l2) == tlb_size
