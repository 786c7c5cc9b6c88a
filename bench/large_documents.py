"""Large documents: psprocess on a counting report of 1,000,000 events and
on a raw profile of 1,000,000 distinct sampled PCs (in a generated binary
with DWARF, as bench/resolution.py builds it), each to its text report.
Prints wall time and peak memory of each, and as the reference measured
in the same run, the time lxml alone takes to parse the same document
into a tree.  Targets (issue: documents in and out):

    each run <= 10 s and <= 500 MB

    python bench/large_documents.py [--events N] [--pcs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from resolution import binary, profile_document, text_range

TARGET_S = 10.0
TARGET_MB = 500.0


def counting_document(psrun: str, directory: str, events: int) -> str:
    """A real psrun report with its event list replaced by `events` events."""
    with tempfile.TemporaryDirectory(dir=directory) as run:
        subprocess.run([psrun, "-q", "-d", run, "-e", "task-clock", "/bin/true"], check=True)
        [name] = os.listdir(run)
        text = open(os.path.join(run, name)).read()
    head, rest = text.split("<hwpcevent ", 1)
    tail = rest[rest.index("</hwpceventdata>"):]
    path = os.path.join(directory, "count.xml")
    rng = random.Random(1)
    with open(path, "w") as f:
        f.write(head)
        for i in range(events):
            f.write(f'<hwpcevent type="native" name="event_{i}" derived="no">{rng.randrange(1 << 40)}</hwpcevent>\n')
        f.write(tail)
    return path


def measured(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB of one run (wait4's rusage)."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"large_documents: {' '.join(argv)} exited {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024


def lxml_parse(path: str) -> float:
    code = "import sys; from lxml import etree; etree.parse(sys.argv[1])"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, path], check=True)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000, help="events in the counting report")
    ap.add_argument("--pcs", type=int, default=1_000_000, help="distinct PCs in the profile")
    ap.add_argument("--functions", type=int, default=20000, help="functions in the generated binary")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (the binary is reused)")
    args = ap.parse_args()
    bindir = os.path.dirname(sys.executable)
    psrun, psprocess = shutil.which("psrun", path=bindir), shutil.which("psprocess", path=bindir)
    if not psrun or not psprocess:
        print("large_documents: needs psrun and psprocess (pip install .)", file=sys.stderr)
        return 2
    directory, exe = binary(args.keep, args.functions)
    lo, hi = text_range(exe)
    if hi - lo < args.pcs:
        print(f"large_documents: the binary's text has {hi - lo} bytes, fewer than {args.pcs} PCs; "
              "raise --functions", file=sys.stderr)
        return 2
    cases = {
        f"counting report, {args.events:,} events": counting_document(psrun, directory, args.events),
        f"raw profile, {args.pcs:,} distinct PCs": os.path.join(directory, "profile.xml"),
    }
    profile_document(exe, sorted(random.Random(2).sample(range(lo, hi), args.pcs)),
                     cases[f"raw profile, {args.pcs:,} distinct PCs"])
    ok = True
    print(f"{'document':<36} {'MB':>6} {'lxml parse':>11} {'psprocess':>10} {'ratio':>6} {'peak MB':>8}")
    for label, path in cases.items():
        reference = lxml_parse(path)
        seconds, peak = measured([psprocess, "-o", os.path.join(directory, "out.txt"), "--force", path])
        good = seconds <= TARGET_S and peak <= TARGET_MB
        ok &= good
        print(f"{label:<36} {os.path.getsize(path) / 1e6:>6.0f} {reference:>10.2f}s {seconds:>9.2f}s "
              f"{seconds / reference:>6.2f} {peak:>8.0f}  {'ok' if good else 'MISSED'}")
    print(f"targets: each <= {TARGET_S:g} s and <= {TARGET_MB:g} MB")
    if not args.keep:
        shutil.rmtree(directory)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
