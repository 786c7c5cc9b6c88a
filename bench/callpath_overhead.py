"""Call-path sampling overhead: a CPU-bound program whose samples land
about 30 calls deep (-O2 -fomit-frame-pointer, about 2 s bare), run bare,
under `psrun --callpath` at 1000 Hz, under `perf record --call-graph dwarf
-F 1000` and under `perf record --call-graph fp -F 1000`, alternated round
by round (with psrun's flat profile at the same rate, to show what the
call paths add to sampling itself); prints median wall times, ratios, and the memory psrun's
calling-context trees took per thread.  Each run's CPU time (user + system
of the command and what it waited for: perf's own processing included) is
shown beside the wall time: on a machine shared with other work it is the
steadier of the two.  Targets:

    psrun --callpath / bare            <= 1.03
    psrun --callpath / perf dwarf, fp  <= 1.00 (no slower than either)

Memory per thread is what the library reports with PSUITE_VERBOSE: the
resident bytes of each thread's tree mapping (mincore), with its node count.
perf samples the cpu-clock software event (no PMU in a VM); psrun's
ITIMER_PROF uses the per-thread task clock.

    python bench/callpath_overhead.py [--rounds N] [--seconds S] [--baseline PSRUN]
"""

from __future__ import annotations

import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile

from _common import alternate, arguments, timed, tools, wall

DEPTH = 30

DEEP_C = r"""
#include <stdlib.h>
#include <stdio.h>
#define NOINLINE __attribute__((noinline, noclone))
#define KEEP(x) __asm__ volatile("" : "+x"(x))
NOINLINE double work(long n)
{
    double x = 0;
    for (long i = 0; i < n; i++) {
        x += (double)i * 0.5;
        KEEP(x);
    }
    return x;
}
/* each level works a little itself, the leaf most: samples at every depth */
NOINLINE double level(int d, long n)
{
    double x = work(n / 64);
    if (d > 1)
        x += level(d - 1, n);
    else
        x += work(n);
    KEEP(x);
    return x;
}
int main(int argc, char **argv)
{
    long reps = atol(argv[1]), n = 100000;
    double s = 0;
    for (long r = 0; r < reps; r++)
        s += level(DEPTH, n);
    printf("%g\n", s);
    return 0;
}
"""


def build(cwd: str, seconds: float) -> list[str]:
    src, exe = os.path.join(cwd, "deep.c"), os.path.join(cwd, "deep")
    with open(src, "w") as f:
        f.write(DEEP_C)
    subprocess.run(["cc", "-O2", "-fomit-frame-pointer", f"-DDEPTH={DEPTH}", "-o", exe, src], check=True)
    probe = 200
    t = wall([exe, str(probe)], cwd)
    return [exe, str(max(1, round(probe * seconds / t)))]


def perf_record(perf: str, call_graph: str, data: str, program: list[str]) -> list[str]:
    """perf record of the CPU clock at 1000 Hz with --call-graph call_graph."""
    return [perf, "record", "-q", "-e", "cpu-clock", "-F", "1000", "--call-graph", call_graph, "-o", data, "--",
            *program]


def tree_memory(psrun: str, program: list[str], cwd: str) -> tuple[str, str]:
    """One more psrun run with PSUITE_VERBOSE: its memory lines and end line."""
    env = dict(os.environ, PSUITE_VERBOSE="1")
    p = subprocess.run(
        [psrun, "--callpath", "--period", "1000", *program],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    memory = [line for line in p.stderr.splitlines() if "call paths: memory:" in line]
    end = next((line for line in p.stderr.splitlines() if re.search(r"call paths: \d+ samples", line)), "")
    return "\n".join(memory), end


def main() -> int:
    args = arguments(__doc__)
    psrun, perf = tools()
    ok = True
    with tempfile.TemporaryDirectory() as cwd:
        program = build(cwd, args.seconds)
        data = os.path.join(cwd, "perf.data")
        commands = {
            "bare": program,
            "psrun --callpath": [psrun, "-q", "--callpath", "--period", "1000", *program],
            # the same sampling without call paths: what the unwinding and the trees add
            "psrun flat": [psrun, "-q", "--profile", "ITIMER_PROF", "--period", "1000", *program],
            "perf dwarf": perf_record(perf, "dwarf", data, program),
            "perf fp": perf_record(perf, "fp", data, program),
        }
        if args.baseline:
            commands["baseline --callpath"] = [args.baseline, *commands["psrun --callpath"][1:]]
        times = alternate(commands, args.rounds, cwd, measure=timed)
        for path in glob.glob(os.path.join(cwd, "deep.*.xml")):
            os.unlink(path)
        memory, end = tree_memory(psrun, program, cwd)
        med = {n: statistics.median(w for w, _ in v) for n, v in times.items()}
        cpu = {n: statistics.median(c for _, c in v) for n, v in times.items()}
        print(f"\n1000 Hz, call depth {DEPTH}: " + ", ".join(f"{n} {med[n]:.3f} s ({cpu[n]:.3f} s cpu)" for n in med))
        print(f"  {end}")
        p = "psrun --callpath"
        checks = [
            ("psrun / bare", p, "bare", 1.03),
            ("psrun / perf dwarf", p, "perf dwarf", 1.00),
            ("psrun / perf fp", p, "perf fp", 1.00),
            ("psrun / psrun flat", p, "psrun flat", None),
            ("psrun flat / bare", "psrun flat", "bare", None),
            ("perf dwarf / bare", "perf dwarf", "bare", None),
            ("perf fp / bare", "perf fp", "bare", None),
        ]
        if args.baseline:
            checks.append(("psrun / baseline", p, "baseline --callpath", None))
        print(f"  {'':<20}{'wall':>8}{'cpu':>8}")
        for label, a, b, target in checks:
            ratio = med[a] / med[b]
            verdict = ""
            if target is not None:
                ok &= ratio <= target
                verdict = f"   target <= {target:.2f} (wall): {'ok' if ratio <= target else 'MISSED'}"
            print(f"  {label:<20}{ratio:>8.4f}{cpu[a] / cpu[b]:>8.4f}{verdict}")
        print("  memory of the calling-context trees (resident bytes of each thread's tree mapping, mincore):")
        print("  " + memory.replace("\n", "\n  "))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
