"""psrun -R, PerfSuite's resource monitor: while the program runs, psrun
samples the system load and the program's memory; at its end it adds the
kernel's totals (wait4) and writes a <resourcereport>.

Peak memory comes from the program's own VmHWM/VmPeak, which the library
in it writes at its end to PSUITE_RESOURCE_FILE (a child's ru_maxrss would
also count psrun's memory from before the exec); the samples are the
fallback when the program was killed outright."""

from __future__ import annotations

import os
import time

LOAD_RESOLUTION = 0.5
LOAD_MAX = 64.0


class ResourceMonitor:
    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.samples = 0
        self.loads: dict[float, int] = {}
        self.outofrange = 0
        self.maxloads = {1: 0.0, 5: 0.0, 15: 0.0}
        self.hwm_kb = 0
        self.peak_kb = 0
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")

    def tick(self, pid: int) -> None:
        """One sample: the load averages and the program's memory."""
        self.samples += 1
        try:
            with open("/proc/loadavg") as f:
                one, five, fifteen = (float(x) for x in f.read().split()[:3])
        except (OSError, ValueError):
            return
        for interval, value in zip((1, 5, 15), (one, five, fifteen), strict=True):
            self.maxloads[interval] = max(self.maxloads[interval], value)
        if one >= LOAD_MAX:
            self.outofrange += 1
        else:
            start = (one // LOAD_RESOLUTION) * LOAD_RESOLUTION
            self.loads[start] = self.loads.get(start, 0) + 1
        self._memory(f"/proc/{pid}/status")

    def _memory(self, path: str) -> None:
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.hwm_kb = max(self.hwm_kb, int(line.split()[1]))
                    elif line.startswith("VmPeak:"):
                        self.peak_kb = max(self.peak_kb, int(line.split()[1]))
        except (OSError, ValueError, IndexError):
            pass

    def report(self, outcome, command: str, exact_file: str):
        from psuite.report import ResourceReport

        try:  # "VmHWM VmPeak" in KB, from the program itself at its end
            with open(exact_file) as f:
                hwm, peak = (int(x) for x in f.read().split()[:2])
            self.hwm_kb, self.peak_kb = max(self.hwm_kb, hwm), max(self.peak_kb, peak)
        except (OSError, ValueError):
            pass
        ru = outcome.rusage
        signalled = os.WIFSIGNALED(outcome.status)
        return ResourceReport(
            pid=outcome.pid, starttime=self.started, command=command, hostname=os.uname().nodename,
            exit_type="signal" if signalled else "exit",
            exit_code=os.WTERMSIG(outcome.status) if signalled else os.waitstatus_to_exitcode(outcome.status),
            frequency=1.0 / self.interval, samples=self.samples, load_min=0.0, load_max=LOAD_MAX,
            load_resolution=LOAD_RESOLUTION, load_outofrange=self.outofrange, loads=dict(self.loads),
            maxloads=dict(self.maxloads), maxrss_mb=self.hwm_kb / 1024, maxvm_mb=self.peak_kb / 1024,
            usertime=ru.ru_utime if ru else 0.0, systemtime=ru.ru_stime if ru else 0.0,
            major_faults=ru.ru_majflt if ru else 0, minor_faults=ru.ru_minflt if ru else 0,
            swaps=ru.ru_nswap if ru else 0)
