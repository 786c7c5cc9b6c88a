"""Resource usage of real child processes."""

from __future__ import annotations

import signal
import sys

from psuite.libperfsuite import rusage

ALLOC = "import sys; b = bytearray({mb} * 1024 * 1024); sys.exit({code})"


def test_child_memory_peaks_and_faults():
    mb = 150
    r = rusage.run([sys.executable, "-c", ALLOC.format(mb=mb, code=3)])
    assert r.exit_code == 3
    u = r.usage
    assert u.max_rss_kb >= mb * 1024
    assert u.max_vm_kb is not None and u.max_vm_kb >= u.max_rss_kb
    # bytearray zero-fills: every page of the buffer is touched once.
    assert u.minor_faults >= mb * 1024 // 4
    assert u.user_time + u.system_time > 0


def test_child_cpu_time_and_switches():
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(0.05)"
    u = rusage.run([sys.executable, "-c", busy]).usage
    assert u.user_time + u.system_time >= 0.25
    assert u.voluntary_switches >= 1  # the sleep gives up the CPU


def test_child_killed_by_signal_is_reported():
    r = rusage.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"])
    assert r.signal == signal.SIGTERM
    assert r.exit_code is None


def test_self_usage_is_consistent():
    u = rusage.of_self()
    assert u.max_rss_kb > 0 and u.max_vm_kb >= u.max_rss_kb
    assert rusage.of_children().max_vm_kb is None
