"""Combining many reports: 4,096 counting reports (one real psrun report
copied with varied counts, pids and ranks) combined by `psprocess -c`;
prints the time and peak memory.  Target: at most 10 s on a 2-core
machine.

    python bench/combine.py [--reports N]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
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
        t = time.perf_counter()
        subprocess.run([psprocess, "-c", out], check=True, stdout=subprocess.DEVNULL)
        took = time.perf_counter() - t
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"psprocess -c of {args.reports:,} counting reports: {took:.2f} s   peak memory {peak_mb:.0f} MB")
    print(f"target <= 10 s: {'ok' if took <= 10 else 'MISSED'}")
    return 0 if took <= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
