"""Reading and resolving call paths costs time linear in the nodes: the
test suite's <callpaths> document of N distinct return addresses in
libc's text (a binary tree of contexts, the deeper half sampled once
each), read and resolved in this process at 10,000 and 100,000 return
addresses, interleaved, best of --runs each.  Target: 100,000 cost at most
25 times 10,000 (linear is 10; a per-node cost growing with the tree
would show as 100).

    python bench/calltree_resolve.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 25.0
SIZES = (10_000, 100_000)


def read_and_resolve(path: Path) -> float:
    """Seconds to read the document and resolve its call paths."""
    from psuite.analysis import calltree_resolve
    from psuite.formats.readers import callpaths as reader

    start = time.perf_counter()
    with open(path, "rb") as f:
        cp = reader.read(f, str(path))
    calltree_resolve.resolve(cp)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs of each size (the fastest is taken)")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    from tests.psprocess.test_calltree_resolve import _big  # the document the test suite resolves

    with tempfile.TemporaryDirectory(prefix="psuite-calltree-") as d:
        docs = {n: _big(Path(d), n) for n in SIZES}
        times: dict[int, list[float]] = {n: [] for n in SIZES}
        for _ in range(args.runs):  # interleaved, so a load on the machine hits each alike
            for n, doc in docs.items():
                times[n].append(read_and_resolve(doc))
    best = {n: min(t) for n, t in times.items()}
    small, big = SIZES
    ratio = best[big] / best[small]
    for n in SIZES:
        print(f"{n:>7,} return addresses: read and resolved in {best[n]:.3f} s (best of {args.runs}), "
              f"{best[n] / n * 1e6:.1f} us per node")
    ok = ratio <= TARGET_RATIO
    print(f"{big:,} / {small:,}: {ratio:.1f} times the time (target <= {TARGET_RATIO:.0f}; linear is "
          f"{big / small:.0f})")
    print("ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
