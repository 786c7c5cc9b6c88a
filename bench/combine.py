"""Combining many reports: 4,096 counting reports (one real psrun report
copied with varied counts, pids and ranks) combined by `psprocess -c`
(the text report's statistics) and by `psprocess -c --cube` (each
document's experiment merged by the algebra, as `merge -c` does); prints
each one's time and peak memory.  Target: at most 10 s each on a 2-core
machine.

    python bench/combine.py [--reports N]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

from _common import WORK_C


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reports", type=int, default=4096, help="reports to combine (default 4096)")
    args = ap.parse_args()
    bindir = os.path.dirname(sys.executable)
    psrun, psprocess = shutil.which("psrun", path=bindir), shutil.which("psprocess", path=bindir)
    if not psrun or not psprocess:
        print("combine: needs psrun and psprocess (pip install .)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "work")
        subprocess.run(["cc", "-O2", "-o", exe, WORK_C], check=True)
        subprocess.run([psrun, "-q", "-d", d, exe, "10", "1", "0"], check=True, stdout=subprocess.DEVNULL)
        [template] = [f for f in os.listdir(d) if f.endswith(".xml")]
        text = open(os.path.join(d, template)).read()
        out = os.path.join(d, "reports")
        os.mkdir(out)
        rng = random.Random(1)

        def vary(m: re.Match) -> str:
            return f"{m.group(1)}{int(m.group(2)) * rng.randint(50, 150) // 100}<"

        for rank in range(args.reports):
            doc = re.sub(r"(<hwpcevent [^>]*>)(\d+)<", vary, text)
            doc = re.sub(r"<pid>\d+</pid>", f"<pid>{100000 + rank}</pid>", doc)
            if "<annotation>" in doc:
                doc = doc.replace("<annotation>", f"<annotation>MPI rank {rank}; ", 1)
            else:
                doc = doc.replace("<wallclock", f"<annotation>MPI rank {rank}</annotation>\n  <wallclock", 1)
            with open(os.path.join(out, f"work.r{rank}.{100000 + rank}.host.xml"), "w") as f:
                f.write(doc)
        worst = 0.0
        for what, argv in (("psprocess -c", [psprocess, "-c", out]),
                           ("psprocess -c --cube", [psprocess, "-c", "--cube", os.path.join(d, "all.cubex"), out])):
            took, peak_mb = run(argv)
            worst = max(worst, took)
            print(f"{what} of {args.reports:,} counting reports: {took:.2f} s   peak memory {peak_mb:.0f} MB")
    print(f"target <= 10 s each: {'ok' if worst <= 10 else 'MISSED'}")
    return 0 if worst <= 10 else 1


def run(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB of one command (its own, from wait4)."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    took = time.perf_counter() - t
    if status:
        sys.exit(f"bench: {' '.join(argv[:3])} ... failed ({status})")
    return took, ru.ru_maxrss / 1024


if __name__ == "__main__":
    sys.exit(main())
