"""Resolution speed, in one run against `addr2line -f -i -C` in batch mode
(all addresses in one run, start-up included on both sides):

1. flat profile: 20,000 distinct sampled PCs in a generated binary with
   more than 10 MB of DWARF.  Target: psprocess end to end, as users run
   it (start-up, reading the profile document, resolving, writing the
   report), at most 1.0x addr2line, both `psprocess -f json doc.xml` and
   the text report `psprocess doc.xml`.  Printed beside them: the
   resolution alone, the same PCs resolved to their frames (function,
   file and line, inlined calls included, as addr2line -f -i) by a fresh
   Python process through psuite.analysis.srcmap, printed as addr2line
   prints them.
2. call paths: 100,000 distinct return addresses spread over the generated
   binary and libc, resolved through srcmap.resolve_frames by a fresh
   process.  Target: at most 5 s (addr2line on the same addresses shown).

Peak memory (max RSS of the resolving process): target at most 1 GB.

    python bench/resolution.py [--functions N] [--pcs N] [--ras N] [--keep DIR]
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
from concurrent.futures import ThreadPoolExecutor

RATIO_TARGET = 1.0
CALLPATH_SECONDS = 5.0
MEMORY_MB = 1024

# The resolving process: addresses on stdin as "module address" lines,
# frames out as addr2line -f -i prints them (function, then file:line).
RESOLVER = """
import sys
from psuite.analysis.srcmap import resolve_frames
words = sys.stdin.buffer.read().split()
by_module = {}
for module, addr in zip(words[0::2], words[1::2]):
    by_module.setdefault(module.decode(), []).append(int(addr, 16))
out = []
for module, addrs in by_module.items():
    for frames in resolve_frames(module, addrs):
        out.extend(f"{f.function}\\n{f.file}:{f.line}" for f in frames)
out.append("")
sys.stdout.write("\\n".join(out))
"""

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
    raise SystemExit(f"no .text in {exe}")


def libc_path() -> str:
    out = subprocess.run(["cc", "-print-file-name=libc.so.6"], capture_output=True, text=True, check=True).stdout
    return os.path.realpath(out.strip())


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


def run(argv: list[str], stdin: str | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one command, its output discarded."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else None,
                            stdout=subprocess.DEVNULL, text=True)
    if stdin is not None:
        proc.stdin.write(stdin)
        proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode})")
    return wall, usage.ru_maxrss / 1024


def best(runs: int, *commands: tuple[list[str], str | None]) -> list[tuple[float, float]]:
    """Each command's fastest of `runs` runs (and its peak memory), the
    commands interleaved so that a busy machine slows them alike."""
    results: list[list[tuple[float, float]]] = [[] for _ in commands]
    for _ in range(runs):
        for i, (argv, stdin) in enumerate(commands):
            results[i].append(run(argv, stdin))
    return [min(r) for r in results]


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def byte_compile() -> None:
    """psuite timed as installed: pip byte-compiles a package when it
    installs it, so a run reads bytecode.  A checkout run with
    PYTHONDONTWRITEBYTECODE set never gets any, and every run would
    compile psuite's sources first (tens of milliseconds)."""
    import psuite

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(psuite.__file__)], env=env,
                   stdout=subprocess.DEVNULL, check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--functions", type=int, default=20000, help="functions in the generated binary")
    ap.add_argument("--pcs", type=int, default=20000, help="distinct PCs to resolve (default 20000)")
    ap.add_argument("--ras", type=int, default=100000, help="distinct return addresses (default 100000)")
    ap.add_argument("--runs", type=int, default=5, help="runs of each command; the fastest counts")
    ap.add_argument("--keep", metavar="DIR", help="build in DIR and keep it (reused when present)")
    args = ap.parse_args()
    psprocess = shutil.which("psprocess", path=os.path.dirname(sys.executable))
    addr2line = shutil.which("addr2line")
    if not psprocess or not addr2line:
        print("resolution: needs psprocess (pip install .) and addr2line (binutils)", file=sys.stderr)
        return 2
    directory, exe = binary(args.keep, args.functions)
    byte_compile()
    size = dwarf_bytes(exe)
    lo, hi = text_range(exe)
    rng = random.Random(1)
    pcs = sorted(rng.sample(range(lo, hi), args.pcs))
    doc = os.path.join(directory, "profile.xml")
    profile_document(exe, pcs, doc)
    ours_cmd = [sys.executable, "-c", RESOLVER]

    # 1. flat: 20,000 PCs
    (a2l, _), (ours, peak), (e2e, e2e_peak), (e2e_text, text_peak) = best(
        args.runs,
        ([addr2line, "-f", "-i", "-C", "-e", exe], "".join(f"{pc:x}\n" for pc in pcs)),
        (ours_cmd, "".join(f"{exe} {pc:x}\n" for pc in pcs)),
        ([psprocess, "-f", "json", doc], None),
        ([psprocess, doc], None))
    ratio = max(e2e, e2e_text) / a2l
    ratio_alone = ours / a2l

    # 2. call paths: return addresses in the binary and in libc
    libc = libc_path()
    llo, lhi = text_range(libc)
    in_exe = args.ras * 3 // 5
    ras = {exe: sorted(rng.sample(range(lo, hi), in_exe)), libc: sorted(rng.sample(range(llo, lhi), args.ras - in_exe))}
    (a2l_exe, _), (a2l_libc, _), (cp, cp_peak) = best(
        max(1, args.runs // 2),
        ([addr2line, "-f", "-i", "-C", "-e", exe], "".join(f"{a:x}\n" for a in ras[exe])),
        ([addr2line, "-f", "-i", "-C", "-e", libc], "".join(f"{a:x}\n" for a in ras[libc])),
        (ours_cmd, "".join(f"{m} {a:x}\n" for m, addrs in ras.items() for a in addrs)))
    cp_a2l = a2l_exe + a2l_libc
    peak_mb = max(peak, cp_peak, e2e_peak, text_peak)

    print(f"binary: {exe}: {size / 1e6:.1f} MB of DWARF; {len(pcs)} distinct PCs; fastest of {args.runs} runs")
    print(f"addr2line -f -i -C (batch)  {a2l:8.3f} s")
    print(f"psprocess -f json doc.xml   {e2e:8.3f} s   ({e2e / a2l:.2f}x)   peak memory {e2e_peak:.0f} MB   end to end")
    print(f"psprocess doc.xml (text)    {e2e_text:8.3f} s   ({e2e_text / a2l:.2f}x)   peak memory {text_peak:.0f} MB   "
          "end to end")
    print(f"psprocess / addr2line       {ratio:8.2f}     target <= {RATIO_TARGET}  {verdict(ratio <= RATIO_TARGET)}"
          "   (the slower of the two)")
    print(f"psuite resolution alone     {ours:8.3f} s   ({ratio_alone:.2f}x)   peak memory {peak:.0f} MB   "
          "(srcmap in a fresh process, for information)")
    print(f"call paths: {args.ras} distinct return addresses ({in_exe} in the binary, {args.ras - in_exe} in {libc})")
    print(f"addr2line -f -i -C (batch)  {cp_a2l:8.3f} s")
    print(f"psuite resolve_frames       {cp:8.3f} s   peak memory {cp_peak:.0f} MB   ({cp / cp_a2l:.2f}x addr2line)")
    print(f"call-path resolution        {cp:8.3f} s   target <= {CALLPATH_SECONDS:.0f} s  "
          f"{verdict(cp <= CALLPATH_SECONDS)}")
    print(f"peak memory                 {peak_mb:8.0f} MB  target <= {MEMORY_MB}  {verdict(peak_mb <= MEMORY_MB)}")
    if not args.keep:
        shutil.rmtree(directory)
    return 0 if ratio <= RATIO_TARGET and cp <= CALLPATH_SECONDS and peak_mb <= MEMORY_MB else 1


if __name__ == "__main__":
    sys.exit(main())
