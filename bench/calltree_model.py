"""A call-path profile into the analysis model: experiments.from_report on
a real `psrun --callpath` profile whose thread trees are replaced by
synthetic ones of --nodes calling contexts in all (one thread, then four
threads sharing the functions, whose trees the conversion merges), best of
--runs each.  The reference, measured in the same run on the same trees,
is one pass of Python over every node (CallTree.inclusive_values, what
any tree view pays).  The conversion feeds --cube, --folded, --speedscope,
--pprof, -c's statistics and the HTML page.  Target: at most 3 times the
reference (a converter walking the tree in Python once more than it must
misses it).

    python bench/calltree_model.py [--nodes N] [--runs N]
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

TARGET_RATIO = 3.0
PROGRAM = "volatile double x; void f(int n){for(int i=0;i<n;i++)x+=i;}\n" \
          "int main(void){for(int k=0;k<100;k++)f(1000000);return 0;}\n"


def synthetic_tree(nodes: int, seed: int):
    """A tree of `nodes` calling contexts over 5,000 functions in 50 files,
    each new context under one of the 2,000 made last (deep and bushy
    alike), with 0 to 3 samples of its own."""
    from psuite.model.calltree import CallTree, Frame

    rng = random.Random(seed)
    frames = [Frame(f"fn{i}", "/opt/app/bin/app", f"src{i % 50}.c", i % 300 + 1) for i in range(5000)]
    tree = CallTree()
    made = [tree.root]
    while len(made) <= nodes:
        child = made[rng.randrange(max(0, len(made) - 2000), len(made))].child(rng.choice(frames))
        if child is not made[-1]:
            made.append(child)
        child.exclusive += rng.randint(0, 3)
    return tree


def best(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1_000_000, help="calling contexts in all (default 1,000,000)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each (the fastest is taken)")
    args = ap.parse_args()
    psrun = shutil.which("psrun", path=os.path.dirname(sys.executable))
    if not psrun or not shutil.which("cc"):
        print("calltree_model: needs psrun (pip install .) and cc", file=sys.stderr)
        return 2
    import psuite
    from psuite.analysis import experiments

    with tempfile.TemporaryDirectory(prefix="psuite-model-") as d:
        with open(os.path.join(d, "app.c"), "w") as f:
            f.write(PROGRAM)
        subprocess.run(["cc", "-O1", "-g", "-o", os.path.join(d, "app"), os.path.join(d, "app.c")], check=True)
        subprocess.run([psrun, "-q", "--callpath", "-d", d, os.path.join(d, "app")], check=True)
        [doc] = [f for f in os.listdir(d) if f.endswith(".xml") and ".callpaths." not in f]
        report = psuite.read_document(os.path.join(d, doc))
    threads = report.callpaths.threads
    worst = 0.0
    for count in (1, 4):
        trees = [synthetic_tree(args.nodes // count, seed) for seed in range(count)]
        report.callpaths.threads = []
        for k, tree in enumerate(trees):
            t = copy.copy(threads[0])
            t.thread, t.tree = k + 1, tree
            report.callpaths.threads.append(t)
        exp = experiments.from_report(report)
        took = best(args.runs, lambda: experiments.from_report(report))
        ref = best(args.runs, lambda trees=trees: [tree.inclusive_values() for tree in trees])
        ratio = took / ref
        worst = max(worst, ratio)
        print(f"{count} thread{'s' if count > 1 else ''}, {args.nodes:,} contexts -> {len(exp.cnodes):,} call "
              f"paths: {took:.2f} s; one Python pass over the nodes {ref:.2f} s; ratio {ratio:.2f}")
    ok = worst <= TARGET_RATIO
    print(f"target ratio <= {TARGET_RATIO:g}: {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
