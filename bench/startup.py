"""Start-up cost of the commands, side by side and alternated round by round
in one run: `/bin/true`, `perf stat /bin/true`, `psrun /bin/true`, and the
same three on a 300 MB executable made here (a small C program with a
300 MB section added by objcopy, as large statically linked HPC codes are).
Targets:

    median psrun /bin/true / perf stat /bin/true        <= 1.00
    psrun's extra cost on the 300 MB executable over
    its extra cost on /bin/true                          <= 5 ms
    psinv answers in under 1 s

psrun is the installed command (the native launcher beside this
interpreter, else on PATH); --psrun PATH picks another.

    python bench/startup.py [--rounds N] [--big-mb MB] [--psrun PATH]
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

SMALL_C = "int main(void) { return 0; }\n"






def big_executable(cwd: str, megabytes: int) -> str:
    """A dynamically linked do-nothing program carrying `megabytes` MB of
    data in a section the loader never maps."""
    src, small, blob, big = (os.path.join(cwd, n) for n in ("small.c", "small", "blob", "big"))
    with open(src, "w") as f:
        f.write(SMALL_C)
    subprocess.run(["cc", "-O2", "-o", small, src], check=True)
    with open(blob, "wb") as f:
        chunk = os.urandom(1 << 20)
        for _ in range(megabytes):
            f.write(chunk)
    subprocess.run(["objcopy", "--add-section", f".big={blob}", "--set-section-flags", ".big=noload,readonly",
                    small, big], check=True)
    os.unlink(blob)
    return big


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=21, help="alternated rounds (default 21)")
    ap.add_argument("--big-mb", type=int, default=300, help="size of the large executable (default 300)")
    ap.add_argument("--psrun", help="the psrun command to measure")
    args = ap.parse_args()
    psrun = native_psrun(args.psrun)
    perf = shutil.which("perf")
    if not perf or not shutil.which("objcopy"):
        sys.exit("bench: needs perf (apt install linux-perf) and objcopy (binutils)")
    tool = os.path.dirname(sys.executable)
    psinv = shutil.which("psinv", path=tool)
    true = shutil.which("true")
    with tempfile.TemporaryDirectory() as cwd:
        big = big_executable(cwd, args.big_mb)
        size_mb = os.path.getsize(big) / 1e6
        commands = {
            "/bin/true": [true],
            "perf stat /bin/true": [perf, "stat", "-o", os.devnull, true],
            "psrun /bin/true": [psrun, "-q", true],
            "big": [big],
            "perf stat big": [perf, "stat", "-o", os.devnull, big],
            "psrun big": [psrun, "-q", big],
        }
        for argv in commands.values():  # warm the page cache and the reports' directory
            wall(argv, cwd)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, argv in commands.items():
                times[name].append(wall(argv, cwd))
            for f in os.listdir(cwd):
                if f.endswith(".xml"):
                    os.unlink(os.path.join(cwd, f))
        psinv_time = statistics.median(wall([psinv], cwd) for _ in range(5)) if psinv else None
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"psrun: {psrun}; {args.rounds} alternated rounds; big: {size_mb:.0f} MB")
    print(f"{'command':<24} {'median':>10} {'min':>10} {'max':>10}")
    for name, sec in med.items():
        print(f"{name:<24} {sec * 1e3:>7.2f} ms {min(times[name]) * 1e3:>7.2f} ms {max(times[name]) * 1e3:>7.2f} ms")
    ok = True
    ratio = med["psrun /bin/true"] / med["perf stat /bin/true"]
    ok &= ratio <= 1.00
    print(f"psrun/perf stat on /bin/true: {ratio:.3f}  target <= 1.00  {'ok' if ratio <= 1.00 else 'MISSED'}")
    ratio_big = med["psrun big"] / med["perf stat big"]
    print(f"psrun/perf stat on big:       {ratio_big:.3f}")
    extra_true = med["psrun /bin/true"] - med["/bin/true"]
    extra_big = med["psrun big"] - med["big"]
    diff = extra_big - extra_true
    ok &= diff <= 0.005
    print(f"psrun's cost: {extra_true * 1e3:.2f} ms on /bin/true, {extra_big * 1e3:.2f} ms on big: "
          f"{diff * 1e3:+.2f} ms  target <= 5 ms  {'ok' if diff <= 0.005 else 'MISSED'}")
    if psinv_time is not None:
        ok &= psinv_time < 1.0
        print(f"psinv: {psinv_time * 1e3:.0f} ms  target < 1 s  {'ok' if psinv_time < 1.0 else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
