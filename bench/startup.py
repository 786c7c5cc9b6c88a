"""Start-up cost of the commands, median of repeated runs, printed with the
targets: psinv answers in under 1 s; `psrun /bin/true` adds at most 150 ms
over `/bin/true` (measured against /bin/true in the same run).

    python bench/startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def median_seconds(argv: list[str], runs: int, cwd: str) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=cwd)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    tool = os.path.dirname(sys.executable)
    psinv, psrun = shutil.which("psinv", path=tool), shutil.which("psrun", path=tool)
    true = shutil.which("true")
    with tempfile.TemporaryDirectory() as cwd:
        rows = [("psinv", median_seconds([psinv], args.runs, cwd), 1.0),
                ("psinv -x", median_seconds([psinv, "-x"], args.runs, cwd), 1.0),
                ("psinv -e (probes every event)", median_seconds([psinv, "-e"], args.runs, cwd), 1.0)]
        bare = median_seconds([true], args.runs, cwd)
        measured = median_seconds([psrun, "-q", true], args.runs, cwd)
    print(f"{'command':<34} {'median':>10} {'target':>10}")
    for name, sec, target in rows:
        limit = f"< {target:.0f} s"
        print(f"{name:<34} {sec * 1e3:>8.1f} ms {limit:>10} {'ok' if sec < target else 'MISSED'}")
    extra = measured - bare
    print(f"{'/bin/true':<34} {bare * 1e3:>8.1f} ms")
    print(f"{'psrun /bin/true':<34} {measured * 1e3:>8.1f} ms")
    print(f"{'psrun overhead over /bin/true':<34} {extra * 1e3:>8.1f} ms {'<= 150 ms':>10} "
          f"{'ok' if extra <= 0.150 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
