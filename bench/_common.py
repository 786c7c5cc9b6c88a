"""Shared pieces of the benchmarks: timing a command, building the
CPU-bound target and sizing it to a wanted run time."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORK_C = os.path.join(HERE, os.pardir, "tests", "targets", "work.c")


def wall(argv: list[str], cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=cwd)
    return time.perf_counter() - t


def native_psrun(given: str | None) -> str:
    """psrun given with --psrun, else the one beside this interpreter, else on PATH."""
    if given:
        return given
    found = shutil.which("psrun", path=os.path.dirname(sys.executable)) or shutil.which("psrun")
    if found:
        return found
    sys.exit("bench: no psrun found (pip install .)")


def tools() -> tuple[str, str]:
    """psrun from this interpreter's environment, and perf; exit 2 if missing."""
    psrun = shutil.which("psrun", path=os.path.dirname(sys.executable))
    perf = shutil.which("perf")
    if not psrun or not perf:
        print("bench: needs psrun (pip install .) and perf (apt install linux-perf)", file=sys.stderr)
        sys.exit(2)
    return psrun, perf


def sized_program(cwd: str, seconds: float) -> list[str]:
    """tests/targets/work.c built in cwd, with a loop of about `seconds`."""
    exe = os.path.join(cwd, "work")
    subprocess.run(["cc", "-O2", "-o", exe, WORK_C], check=True)
    probe = 200
    t = wall([exe, "0", str(probe), "0"], cwd)
    return [exe, "0", str(max(1, round(probe * seconds / t))), "0"]


def timed(argv: list[str], cwd: str) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU: user + system, children included)."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    _, status, ru = os.wait4(p.pid, 0)
    if status:
        sys.exit(f"bench: {argv[0]} failed ({status})")
    return time.perf_counter() - t, ru.ru_utime + ru.ru_stime


def _shown(value: float | tuple[float, float]) -> str:
    return f"{value[0]:.3f} s ({value[1]:.3f} cpu)" if isinstance(value, tuple) else f"{value:.3f} s"


def alternate(commands: dict[str, list[str]], rounds: int, cwd: str, measure=wall) -> dict[str, list]:
    """Run each command once per round, in turn, so drift touches all alike;
    per command the list of measure(argv, cwd): wall seconds, or (wall, CPU)
    with measure=timed."""
    times: dict[str, list] = {name: [] for name in commands}
    for r in range(rounds):
        for name, argv in commands.items():
            times[name].append(measure(argv, cwd))
        print(f"round {r + 1}/{rounds}: " + "  ".join(f"{n} {_shown(v[-1])}" for n, v in times.items()),
              file=sys.stderr)
    return times


def arguments(doc: str) -> argparse.Namespace:
    """--rounds, --seconds and --baseline, the options every overhead benchmark takes."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7, help="alternated rounds (default 7)")
    ap.add_argument("--seconds", type=float, default=2.0, help="bare run time to aim for (default 2)")
    ap.add_argument("--baseline", metavar="PSRUN",
                    help="another build's psrun (a launcher with its libpshwpc.so beside it), run in the same "
                         "rounds: prints psrun / baseline, a comparison the machine's drift cannot skew")
    return ap.parse_args()
