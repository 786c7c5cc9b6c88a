"""Sampling overhead: the same CPU-bound program (about 2 s) bare, under
`perf record -F RATE` and under `psrun --profile ITIMER_PROF` at the same
rate, for 100 Hz and 1000 Hz, alternated round by round; prints median
wall times, ratios, and the rate each tool delivered.  Targets:

    psrun / bare       <= 1.02 at 100 Hz
    psrun / perf record <= 1.00 at either rate (no worse than perf)

perf record samples the cpu-clock software event here (no PMU in a VM);
psrun's ITIMER_PROF uses the per-thread task clock.

    python bench/sampling_overhead.py [--rounds N] [--seconds S] [--baseline PSRUN]
"""

from __future__ import annotations

import glob
import os
import statistics
import sys
import tempfile

from _common import alternate, arguments, sized_program, tools


def psrun_samples(cwd: str) -> int:
    from psuite.analysis.inputs import load

    total = 0
    for path in glob.glob(os.path.join(cwd, "work.*.xml")):
        total += load(path).total_samples
        os.unlink(path)
    return total


def main() -> int:
    args = arguments(__doc__)
    psrun, perf = tools()
    ok = True
    with tempfile.TemporaryDirectory() as cwd:
        program = sized_program(cwd, args.seconds)
        data = os.path.join(cwd, "perf.data")
        for rate in (100, 1000):
            commands = {
                "bare": program,
                "perf record": [perf, "record", "-q", "-e", "cpu-clock", "-F", str(rate), "-o", data, "--", *program],
                "psrun": [psrun, "-q", "--profile", "ITIMER_PROF", "--period", str(1_000_000 // rate), *program],
            }
            if args.baseline:
                commands["baseline"] = [args.baseline, *commands["psrun"][1:]]
            times = alternate(commands, args.rounds, cwd)
            samples = psrun_samples(cwd) / (args.rounds * (2 if args.baseline else 1))
            med = {n: statistics.median(v) for n, v in times.items()}
            print(f"\n{rate} Hz: " + ", ".join(f"{n} {s:.3f} s" for n, s in med.items()))
            print(f"  psrun delivered {samples / med['bare']:.0f} samples per second of run time")
            if args.baseline:
                print(f"  psrun / baseline    {med['psrun'] / med['baseline']:.4f}   ({args.baseline})")
            checks = [("psrun / perf record", med["psrun"] / med["perf record"], 1.00)]
            if rate == 100:
                checks.insert(0, ("psrun / bare", med["psrun"] / med["bare"], 1.02))
            else:
                print(f"  psrun / bare        {med['psrun'] / med['bare']:.4f}   (no target at 1000 Hz)")
            for label, ratio, target in checks:
                ok &= ratio <= target
                print(f"  {label:<19} {ratio:.4f}   target <= {target:.2f}  {'ok' if ratio <= target else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
