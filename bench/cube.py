"""Writing a large cube: 1,024 threads (8 hosts x 32 ranks x 4 threads) x
10,000 regions x 8 metrics through psuite's CUBE writer, with the
statistics file; prints the time and the peak memory, and checks the
cube's size.  Targets: at most 30 s and 2 GB.

    python bench/cube.py [--regions N] [--keep FILE.cubex]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from array import array


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--regions", type=int, default=10000)
    ap.add_argument("--keep", metavar="FILE.cubex", help="write here and keep it")
    args = ap.parse_args()
    from psuite.formats.exporters import cube

    hosts, ranks, threads, nmetrics = 8, 32, 4, 8
    tree, loc = [], 0
    for h in range(hosts):
        groups = []
        for r in range(ranks):
            rank = h * ranks + r
            groups.append((f"rank {rank}", rank, [(loc + t, f"thread {t}", t) for t in range(threads)]))
            loc += threads
        tree.append((f"node{h:02d}", groups))
    nloc = loc
    names = [f"function_{i:05d}" for i in range(args.regions)]
    regions = {n: {"file": f"src/file_{i % 97}.c", "begin": i, "end": i + 20} for i, n in enumerate(names)}
    metrics = [cube._Metric(f"metric{k}", f"Metric {k}", "DOUBLE" if k % 2 else "UINT64", "occ", "synthetic")
               for k in range(nmetrics)]
    ncnodes = args.regions + 1
    row_d = array("d", (float(i % 13) for i in range(nloc)))  # one call path's values, repeated
    row_q = array("Q", (i % 13 for i in range(nloc)))
    grids = [(row_d if m.dtype == "DOUBLE" else row_q) * ncnodes for m in metrics]
    directory = None if args.keep else tempfile.mkdtemp(prefix="psuite-cube-")
    path = args.keep or os.path.join(directory, "big.cubex")
    t = time.perf_counter()
    stat = cube.write_grids(path, metrics, grids, names, regions, "bench", tree, force=True)
    took = time.perf_counter() - t
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size_mb = os.path.getsize(path) / 1e6
    expected_mb = nmetrics * (10 + 8 * ncnodes * nloc) / 1e6
    print(f"cube of {nloc:,} threads x {args.regions:,} regions x {nmetrics} metrics: {size_mb:,.0f} MB "
          f"(data {expected_mb:,.0f} MB)")
    print(f"write time {took:.1f} s (target <= 30 s)   peak memory {peak_mb:,.0f} MB (target <= 2048 MB)")
    if directory:
        os.unlink(path)
        os.unlink(stat)
        os.rmdir(directory)
    ok = took <= 30 and peak_mb <= 2048 and size_mb >= expected_mb
    print("ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
