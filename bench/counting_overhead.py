"""Counting overhead: the same CPU-bound program (about 1 s) run bare, under
`perf stat` and under `psrun`, alternated round by round so that drift in the
machine's load touches all three alike; prints the median wall time of each
and the ratios against the targets:

    psrun / bare       <= 1.01
    psrun / perf stat  <= 1.00

psrun runs with its default configuration (what a user gets with plain
`psrun ./app`); perf stat counts the events psrun ended up counting, so both
tools do the same kernel work.  psrun is the installed command, the native
launcher.

    python bench/counting_overhead.py [--rounds N] [--seconds S (default 1)] [--baseline PSRUN]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

from _common import alternate, arguments, sized_program, tools

# psrun's event names and the perf stat names for the same kernel counters.
PERF_NAMES = {"perf::TASK-CLOCK": "task-clock", "perf::PAGE-FAULTS": "page-faults",
              "perf::CONTEXT-SWITCHES": "context-switches", "perf::CPU-MIGRATIONS": "cpu-migrations",
              "task-clock": "task-clock", "page-faults": "page-faults",
              "context-switches": "context-switches", "PAPI_TOT_CYC": "cycles", "PAPI_TOT_INS": "instructions"}


def counted_events(psrun: str, program: list[str], cwd: str) -> tuple[list[str], str]:
    """Run psrun once and read back which events its report holds, and the
    backend that counted them."""
    from psuite.analysis.inputs import load

    before = set(os.listdir(cwd))
    subprocess.run([psrun, "-q", *program], stdout=subprocess.DEVNULL, check=True, cwd=cwd)
    (report,) = [f for f in os.listdir(cwd) if f not in before and f.endswith(".xml")]
    doc = load(os.path.join(cwd, report))
    return [e.name for e in doc.events], doc.counter_class


def main() -> int:
    args = arguments(__doc__)
    if not any(a.startswith("--seconds") for a in sys.argv[1:]):
        args.seconds = 1.0
    psrun, perf = tools()
    with tempfile.TemporaryDirectory() as cwd:
        program = sized_program(cwd, args.seconds)
        iters = program[2]
        events, counter_class = counted_events(psrun, program, cwd)
        perf_events = sorted({PERF_NAMES.get(e, e) for e in events})
        commands = {
            "bare": program,
            "perf stat": [perf, "stat", "-x,", "-o", os.devnull, "-e", ",".join(perf_events), *program],
            "psrun": [psrun, "-q", *program],
        }
        if args.baseline:
            commands["baseline"] = [args.baseline, "-q", *program]
        times = alternate(commands, args.rounds, cwd)
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"psrun: {psrun}")
    print(f"program: work loop of {iters} M iterations; psrun counted {', '.join(events)} "
          f"(class {counter_class})")
    print(f"perf stat -e {','.join(perf_events)}; {args.rounds} alternated rounds")
    for name, sec in med.items():
        spread = max(times[name]) - min(times[name])
        print(f"{name:<12} median {sec:8.3f} s   (spread {spread * 1e3:.0f} ms)")
    ok = True
    if args.baseline:
        print(f"{'psrun / baseline':<18} {med['psrun'] / med['baseline']:7.4f}   ({args.baseline})")
    for label, num, den, target in (("psrun / bare", "psrun", "bare", 1.01),
                                    ("psrun / perf stat", "psrun", "perf stat", 1.00)):
        ratio = med[num] / med[den]
        ok &= ratio <= target
        print(f"{label:<18} {ratio:7.4f}   target <= {target:.2f}  {'ok' if ratio <= target else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
