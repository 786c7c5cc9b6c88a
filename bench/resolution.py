"""Resolution speed: 20,000 distinct sampled PCs in a generated binary with
more than 10 MB of DWARF, resolved to function, file and line by psprocess
and by `addr2line -f -i -C` in batch mode (all addresses in one run).
Prints both times, their ratio and psprocess's peak memory.  Targets:

    psprocess / addr2line <= 2.0
    psprocess peak memory <= 1 GB

    python bench/resolution.py [--functions N] [--pcs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

FUNCTION = """struct s{i} {{ int a{i}; double b{i}; char c{i}[{n}]; }};
static inline int helper{i}(int x) {{ return x * {i} + {m}; }}
__attribute__((noinline)) int fn{i}(int n) {{
    struct s{i} v = {{0}};
    int acc = 0;
    for (int k = 0; k < n; k++) {{
        acc += helper{i}(k);
        v.a{i} += acc;
        v.b{i} += acc * 0.5;
    }}
    return acc + v.a{i} + (int)v.b{i};
}}
"""


def build(directory: str, functions: int, parts: int = 8) -> str:
    """A binary of `functions` small functions in `parts` files, -O1 -g."""
    per = functions // parts
    sources = []
    for p in range(parts):
        path = os.path.join(directory, f"part{p}.c")
        with open(path, "w") as f:
            for i in range(p * per, (p + 1) * per):
                f.write(FUNCTION.format(i=i, n=i % 13 + 1, m=i % 7))
        sources.append(path)
    with open(os.path.join(directory, "main.c"), "w") as f:
        f.write("".join(f"int fn{i}(int);\n" for i in range(parts * per)))
        f.write("int main(int argc, char **argv) { int t = 0;\n")
        f.write("".join(f"  t += fn{i}(argc);\n" for i in range(parts * per)))
        f.write("  return t == 42; }\n")
    sources.append(os.path.join(directory, "main.c"))
    objects = [s[:-2] + ".o" for s in sources]
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(lambda so: subprocess.run(["cc", "-O1", "-g", "-c", "-o", so[1], so[0]], check=True),
                      zip(sources, objects, strict=False)))
    exe = os.path.join(directory, "big")
    subprocess.run(["cc", "-o", exe, *objects], check=True)
    return exe


def binary(keep: str | None, functions: int) -> tuple[str, str]:
    """(work folder, generated binary): built there, or reused from --keep DIR."""
    directory = keep or tempfile.mkdtemp(prefix="psuite-bench-")
    os.makedirs(directory, exist_ok=True)
    exe = os.path.join(directory, "big")
    if not os.path.exists(exe):
        print(f"building {functions} functions in {directory} ...", file=sys.stderr)
        build(directory, functions)
    return directory, exe


def dwarf_bytes(exe: str) -> int:
    out = subprocess.run(["size", "-A", exe], capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith(".debug_"))


def text_range(exe: str) -> tuple[int, int]:
    out = subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 5 and parts[1] == ".text":
            addr, size = int(parts[3], 16), int(parts[5], 16)
            return addr, addr + size
    raise SystemExit("no .text in the generated binary")


def profile_document(exe: str, pcs: list[int], path: str) -> None:
    samples = "".join(f'<sample pc="{pc:x}">1</sample>' for pc in pcs)
    with open(path, "w") as f:
        f.write('<?xml version="1.0"?><hwpcreport version="0.3" mode="profile"><date>now</date>'
                "<hostname>h</hostname><domainname/><wallclock units='seconds'>1</wallclock>"
                "<cputime><usertime>1</usertime><systemtime>0</systemtime></cputime>"
                "<hwpcprofiledata class='itimer'><profileinfo><profileevent domain='user' type='native' "
                "name='ITIMER_PROF' derived='no'><threshold>1000</threshold></profileevent></profileinfo>"
                f"<totalsamples>{len(pcs)}</totalsamples><module file='{exe}' offset='0x0'>"
                f"<samples pcbase='16'>{samples}</samples></module></hwpcprofiledata></hwpcreport>")


def timed(argv: list[str], stdin: str | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, text=True, check=True)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--functions", type=int, default=20000, help="functions in the generated binary")
    ap.add_argument("--pcs", type=int, default=20000, help="distinct PCs to resolve (default 20000)")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (reused when present)")
    args = ap.parse_args()
    psprocess = shutil.which("psprocess", path=os.path.dirname(sys.executable))
    if not psprocess or not shutil.which("addr2line"):
        print("resolution: needs psprocess (pip install .) and addr2line (binutils)", file=sys.stderr)
        return 2
    directory, exe = binary(args.keep, args.functions)
    size = dwarf_bytes(exe)
    lo, hi = text_range(exe)
    pcs = sorted(random.Random(1).sample(range(lo, hi), args.pcs))
    doc = os.path.join(directory, "profile.xml")
    profile_document(exe, pcs, doc)
    a2l = min(timed(["addr2line", "-f", "-i", "-C", "-e", exe], "\n".join(hex(pc) for pc in pcs) + "\n")
              for _ in range(3))
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    ours = timed([psprocess, "-f", "json", doc])
    peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    ratio = ours / a2l
    print(f"binary: {exe}: {size / 1e6:.1f} MB of DWARF; {len(pcs)} distinct PCs")
    print(f"addr2line -f -i -C (batch)  {a2l:8.2f} s")
    print(f"psprocess                   {ours:8.2f} s   peak memory {peak_mb:.0f} MB")
    print(f"psprocess / addr2line       {ratio:8.2f}     target <= 2.0  {'ok' if ratio <= 2.0 else 'MISSED'}")
    print(f"peak memory                 {peak_mb:8.0f} MB  target <= 1024  {'ok' if peak_mb <= 1024 else 'MISSED'}")
    if not args.keep:
        shutil.rmtree(directory)
    return 0 if ratio <= 2.0 and peak_mb <= 1024 else 1


if __name__ == "__main__":
    sys.exit(main())
