"""dlopen/dlclose cost under sampling: a program that loads and unloads a
small plugin N times (tests/targets/dlclose/loop.c, 2,000 by default), bare
and under `psrun --profile ITIMER_PROF`, alternated round by round; prints
the median CPU time (user + system) of each and their ratio, and the share
of the profile's samples in psuite's own library; besides, where the
difference goes: psrun's start-up (the program with no loads) and counting
mode (no module map kept).  Targets:

    psrun / bare CPU   <= 1.05
    samples in psuite  0

    python bench/dlopen_loop.py [--rounds N] [--loads N] [--libraries N]

With --libraries N the program is linked against N small shared libraries
besides (as Python with its extension modules, or an MPI stack): psuite's
part of each dlopen and dlclose must not grow with what else is loaded.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile

from _common import HERE, alternate, timed

SRC = os.path.join(HERE, os.pardir, "tests", "targets", "dlclose")


def psuite_share(cwd: str) -> tuple[int, int]:
    """(samples in libpshwpc, all samples) over the profiles psrun wrote in cwd."""
    from psuite.analysis.inputs import load

    mine = total = 0
    for path in glob.glob(os.path.join(cwd, "loop.*.xml")):
        for module in getattr(load(path), "modules", ()):  # the counting runs' reports have none
            n = sum(module.samples.values())
            total += n
            mine += n if "libpshwpc" in module.file else 0
        os.unlink(path)
    return mine, total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15, help="alternated rounds (default 15)")
    ap.add_argument("--loads", type=int, default=2000, help="dlopen/dlclose pairs per run (default 2000)")
    ap.add_argument("--libraries", type=int, default=0,
                    help="shared libraries the program is linked against besides libc (default 0)")
    args = ap.parse_args()
    psrun = os.path.join(os.path.dirname(sys.executable), "psrun")
    if not os.path.exists(psrun):
        sys.exit("bench: no psrun beside this interpreter (pip install .)")
    with tempfile.TemporaryDirectory() as cwd:
        libs = []
        for i in range(args.libraries):
            with open(os.path.join(cwd, f"l{i}.c"), "w") as f:
                f.write(f"int lib{i}(int x) {{ return x + {i}; }}\n")
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", f"libl{i}.so", f"l{i}.c"], check=True, cwd=cwd)
            libs.append(f"-ll{i}")
        linked = ["-L.", "-Wl,--no-as-needed", *libs, f"-Wl,-rpath,{cwd}"] if libs else []
        subprocess.run(["cc", "-O2", "-o", "loop", os.path.join(SRC, "loop.c"), "-ldl", *linked], check=True, cwd=cwd)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", "step.so", os.path.join(SRC, "step.c")], check=True,
                       cwd=cwd)
        program = ["./loop", os.path.join(cwd, "step.so"), str(args.loads)]
        idle = ["./loop", os.path.join(cwd, "step.so"), "0"]
        # besides the target pair, where the difference goes: psrun's fixed
        # start-up (the same program with no loads) and counting, which
        # keeps no module map
        times = alternate({"bare": program, "psrun": [psrun, "-q", "--profile", "ITIMER_PROF", *program],
                           "count": [psrun, "-q", "-e", "task-clock", *program],
                           "bare, 0 loads": idle, "psrun, 0 loads": [psrun, "-q", "--profile", "ITIMER_PROF", *idle]},
                          args.rounds, cwd, measure=timed)
        mine, total = psuite_share(cwd)
    cpu = {name: statistics.median(c for _, c in v) for name, v in times.items()}
    bare, measured = cpu["bare"], cpu["psrun"]
    ratio = measured / bare
    print(f"where it goes: psrun's start-up {1e3 * (cpu['psrun, 0 loads'] - cpu['bare, 0 loads']):.1f} ms CPU; "
          f"counting (no module map) {cpu['count'] / bare:.3f} of bare")
    besides = f" ({args.libraries} libraries linked besides)" if args.libraries else ""
    print(f"{args.loads} dlopen/dlclose pairs{besides}: bare {bare:.4f} s CPU, psrun --profile {measured:.4f} s CPU, "
          f"ratio {ratio:.3f} (target <= 1.05)")
    print(f"samples in psuite's library: {mine} of {total} over {2 * args.rounds} profiled runs (target 0)")
    return 0 if ratio <= 1.05 and mine == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
