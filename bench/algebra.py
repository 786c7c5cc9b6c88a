"""The performance algebra at scale: two cubes of 1,024 threads (8 hosts x
32 ranks x 4 threads) x 10,000 call paths x 8 metrics (UINT64 and DOUBLE
alternating), written with psuite's CUBE writer, then `psprocess diff A B
-o OUT.cubex` and `psprocess mean A B -o OUT.cubex`, each in a process of
its own: reading both cubes from disk, the operation, writing the result.
Prints each one's wall time and peak memory (the child's maximum resident
set, from wait4).  Targets: at most 30 s and 2 GB each.

    python bench/algebra.py [--paths N] [--python]

--python times the same work through the library (experiments.load,
algebra.diff/mean, exporters.cube.write) instead of the command."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HOSTS, RANKS, THREADS, METRICS = 8, 32, 4, 8
TARGET_S, TARGET_MB = 30.0, 2048.0

LIBRARY = """
import sys
from psuite.analysis import algebra
from psuite.analysis.experiments import load
from psuite.formats.exporters import cube
op, out, *inputs = sys.argv[1:]
experiments = [load(p) for p in inputs]
if op == "diff":
    result = algebra.diff(*experiments, consume=True)
else:
    result = algebra.mean(experiments, consume=True)
del experiments
cube.write(result, out)
"""


def experiment(paths: int, seed: int):
    """A synthetic experiment: a call tree of `paths` call paths (each
    call path i > 0 called from (i - 1) // 8, so the tree is 5 levels deep
    for 10,000), 1,024 locations, 8 metrics of pseudo-random values."""
    import numpy as np

    from psuite.model.experiment import Experiment, Location, Metric, Region

    e = Experiment(attributes={"Creator": "psuite bench/algebra.py"})
    for k in range(METRICS):
        e.add_metric(Metric(f"metric{k}", f"Metric {k}", "sec" if k % 2 else "occ",
                            "DOUBLE" if k % 2 else "UINT64", description="synthetic"))
    for i in range(paths):
        e.add_region(Region(f"function_{i:05d}", module=f"src/file_{i % 97}.c", begin=i, end=i + 20))
    for i in range(paths):
        e.add_cnode(i, None if i == 0 else (i - 1) // 8)
    for h in range(HOSTS):
        for r in range(RANKS):
            rank = h * RANKS + r
            for t in range(THREADS):
                e.locations.append(Location(node=f"node{h:02d}", process=f"rank {rank}", rank=rank,
                                            thread=f"thread {t}", thread_rank=t))
    rng = np.random.default_rng(seed)
    shape = (paths, len(e.locations))
    for m in e.metrics:
        if m.integer:
            e.values[m.name] = rng.integers(0, 1_000_000, size=shape, dtype=np.int64)
        else:
            e.values[m.name] = rng.random(shape)
    return e


def run(argv: list[str], cwd: str) -> tuple[float, float]:
    """Wall seconds and peak resident MB of one command."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    took = time.perf_counter() - t
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    if status:
        sys.exit(f"bench: {' '.join(argv[:3])} ... failed ({status}): {err.strip()}")
    return took, ru.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paths", type=int, default=10000, help="call paths per cube (default 10000)")
    ap.add_argument("--python", action="store_true", help="time the library calls instead of psprocess")
    args = ap.parse_args()
    from psuite.formats.exporters import cube

    psprocess = shutil.which("psprocess", path=os.path.dirname(sys.executable))
    if not args.python and not psprocess:
        print("bench: needs psprocess (pip install .)", file=sys.stderr)
        return 2
    ok = True
    with tempfile.TemporaryDirectory(prefix="psuite-algebra-") as d:
        inputs = [os.path.join(d, "a.cubex"), os.path.join(d, "b.cubex")]
        t = time.perf_counter()
        for seed, path in enumerate(inputs):
            e = experiment(args.paths, seed)
            cube.write(e, path)
            del e
        size_mb = os.path.getsize(inputs[0]) / 1e6
        print(f"two cubes of {HOSTS * RANKS * THREADS:,} threads x {args.paths:,} call paths x {METRICS} metrics: "
              f"{size_mb:,.0f} MB each (written in {time.perf_counter() - t:.1f} s)")
        for op in ("diff", "mean"):
            out = os.path.join(d, f"{op}.cubex")
            if args.python:
                argv = [sys.executable, "-c", LIBRARY, op, out, *inputs]
                how = f"library {op}"
            else:
                argv = [psprocess, op, *inputs, "-o", out]
                how = f"psprocess {op} A B -o OUT.cubex"
            took, peak = run(argv, d)
            good = took <= TARGET_S and peak <= TARGET_MB and os.path.getsize(out) >= os.path.getsize(inputs[0])
            ok &= good
            print(f"{how}: {took:.1f} s (target <= {TARGET_S:.0f} s)   peak memory {peak:,.0f} MB "
                  f"(target <= {TARGET_MB:.0f} MB)   {'ok' if good else 'MISSED'}")
            os.unlink(out)
            stat = os.path.splitext(out)[0] + ".stat"
            if os.path.exists(stat):
                os.unlink(stat)
    print("ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
