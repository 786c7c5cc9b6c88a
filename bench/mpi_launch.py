"""Launch cost at scale: 64 ranks of a short program started by mpirun
(oversubscribed), bare against under psrun, alternated round by round; the
median wall time of the whole job each way.  Target: psrun adds at most 5 %
to the job's wall time.

    mpirun --oversubscribe --allow-run-as-root -np 64 ./short
    mpirun --oversubscribe --allow-run-as-root -np 64 psrun -q ./short

psrun is the installed command (the native launcher beside this
interpreter, else on PATH); --psrun PATH picks another.  Each rank writes
its report (<exe>.r<rank>.<pid>.<host>.xml), removed between rounds.

    python bench/mpi_launch.py [--rounds N] [--ranks N] [--psrun PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from _common import native_psrun, wall

# About 20 ms of arithmetic, then exit: the job's time is mostly launching.
SHORT_C = r"""
#include <stdio.h>
int main(void)
{
    volatile double x = 0;
    for (long i = 0; i < 20000000; i++)
        x += i * 0.5;
    return x < 0;
}
"""






def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7, help="alternated rounds (default 7)")
    ap.add_argument("--ranks", type=int, default=64, help="ranks (default 64)")
    ap.add_argument("--psrun", help="the psrun command to measure")
    args = ap.parse_args()
    psrun = native_psrun(args.psrun)
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("bench: needs mpirun (apt install openmpi-bin)")
    launch = [mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(args.ranks)]
    with tempfile.TemporaryDirectory() as cwd:
        src, exe = os.path.join(cwd, "short.c"), os.path.join(cwd, "short")
        with open(src, "w") as f:
            f.write(SHORT_C)
        subprocess.run(["cc", "-O1", "-o", exe, src], check=True)
        commands = {"bare": [*launch, exe], "psrun": [*launch, psrun, "-q", exe]}
        for argv in commands.values():  # warm up
            wall(argv, cwd)
        times: dict[str, list[float]] = {name: [] for name in commands}
        reports = 0
        for r in range(args.rounds):
            for name, argv in commands.items():
                times[name].append(wall(argv, cwd))
                xml = [f for f in os.listdir(cwd) if f.endswith(".xml")]
                if name == "psrun":
                    reports = len(xml)
                for f in xml:
                    os.unlink(os.path.join(cwd, f))
            print(f"round {r + 1}/{args.rounds}: " + "  ".join(f"{n} {v[-1]:.3f} s" for n, v in times.items()),
                  file=sys.stderr)
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"psrun: {psrun}; {args.ranks} ranks, {args.rounds} alternated rounds; "
          f"{reports} reports per psrun job")
    for name, sec in med.items():
        print(f"{name:<8} median {sec:8.3f} s   (min {min(times[name]):.3f}, max {max(times[name]):.3f})")
    added = med["psrun"] / med["bare"] - 1
    ok = added <= 0.05 and reports == args.ranks
    print(f"psrun adds {added * 100:+.1f} % to the job   target <= 5 %  {'ok' if added <= 0.05 else 'MISSED'}")
    if reports != args.ranks:
        print(f"MISSED: {reports} reports for {args.ranks} ranks")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
