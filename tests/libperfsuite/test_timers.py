from __future__ import annotations

import threading
import time

from psuite.libperfsuite import timers


def test_cpu_time_grows_with_work_not_sleep():
    with timers.Stopwatch() as sw:
        t = time.process_time()
        while time.process_time() - t < 0.1:
            pass
        time.sleep(0.1)
    assert sw.elapsed.wall >= 0.2
    assert 0.09 <= sw.elapsed.cpu < sw.elapsed.wall
    assert 0.09 <= sw.elapsed.thread_cpu <= sw.elapsed.cpu + 1e-3


def test_thread_cputime_is_per_thread():
    spent = {}

    def sleeper():
        t = timers.thread_cputime()
        time.sleep(0.2)
        spent["sleeper"] = timers.thread_cputime() - t

    th = threading.Thread(target=sleeper)
    th.start()
    t = time.process_time()
    while time.process_time() - t < 0.15:
        pass
    th.join()
    assert spent["sleeper"] < 0.05


def test_wallclock_is_monotonic_seconds():
    a = timers.wallclock()
    time.sleep(0.05)
    assert 0.04 < timers.wallclock() - a < 1.0
