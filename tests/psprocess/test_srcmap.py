"""The C DWARF decoder against addr2line -f -i -C on every few bytes of a
binary's text: DWARF 4 and 5, -O0 and -O2 (inlined subroutines, address
ranges, cold parts), the executable and a shared library."""

from __future__ import annotations

import os
import subprocess

import pytest

from psuite.analysis import srcmap
from tests.psprocess.test_profiles import PROFILE_SRC, addr2line

SOURCE = """
#include <stdlib.h>
struct point { double x, y; };
static inline double sq(double v) { return v * v; }
static inline double norm2(struct point p) { return sq(p.x) + sq(p.y); }
__attribute__((noinline)) double far_away(struct point *ps, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        if (__builtin_expect(ps[i].x < 0, 0))
            s -= norm2(ps[i]) / (i + 1);   /* cold path */
        else
            s += norm2(ps[i]);
    }
    return s;
}
__attribute__((noinline)) int sum_to(int n) { int t = 0; for (int i = 0; i < n; i++) t += i % 7; return t; }
int main(int argc, char **argv) {
    struct point ps[4] = {{1, 2}, {3, 4}, {-5, 6}, {7, 8}};
    return (int)far_away(ps, argc + 3) + sum_to(argc * 100);
}
"""


def settled_addr2line(path: str, addrs: list[int]) -> dict[int, tuple[str, str, int]]:
    """addr2line's answers once its caches are warm: BFD names a DWARF
    function without a linkage name by the nearest ELF symbol the first time
    it is hit, and by its DWARF name afterwards (so an inlined atol first
    reads "main").  Each address is asked twice; the second answer counts."""
    return addr2line(path, addrs + addrs)


def text_range(path: str) -> tuple[int, int]:
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 5 and parts[1] == ".text":
            addr, size = int(parts[3], 16), int(parts[5], 16)
            return addr, addr + size
    raise AssertionError(f"no .text in {path}")


@pytest.mark.parametrize("flags", [["-O0", "-gdwarf-4"], ["-O2", "-gdwarf-4"], ["-O2", "-gdwarf-5"],
                                   ["-O3", "-gdwarf-5"]])
def test_decoder_agrees_with_addr2line_everywhere(tmp_path, flags):
    src = tmp_path / "inl.c"
    src.write_text(SOURCE)
    exe = tmp_path / "inl"
    lib = tmp_path / "libprof_lib.so"
    subprocess.run(["cc", *flags, "-o", str(exe), str(src)], check=True)
    subprocess.run(["cc", *flags, "-shared", "-fPIC", "-o", str(lib), str(PROFILE_SRC / "prof_lib.c")],
                   check=True)
    for path in (str(exe), str(lib)):
        lo, hi = text_range(path)
        addrs = list(range(lo, hi, 3))
        theirs = settled_addr2line(path, addrs)
        mmap = srcmap.module_map(path)
        assert isinstance(mmap, srcmap.NativeMap)
        ours = mmap.lookup_many(addrs)
        mismatches = [(hex(a), o, theirs[a]) for a, o in zip(addrs, ours, strict=True) if o != theirs[a]]
        assert not mismatches, mismatches[:5]


def test_cxx_names_everywhere(tmp_path):
    """Demangled C++ names (DWARF linkage names) on every few bytes."""
    exe = tmp_path / "cxx_work"
    subprocess.run(["g++", "-O2", "-g", "-o", str(exe), str(PROFILE_SRC / "cxx_work.cpp")], check=True)
    lo, hi = text_range(str(exe))
    addrs = list(range(lo, hi, 3))
    theirs = settled_addr2line(str(exe), addrs)
    ours = srcmap.module_map(str(exe)).lookup_many(addrs)
    mismatches = [(hex(a), o, theirs[a]) for a, o in zip(addrs, ours, strict=True) if o != theirs[a]]
    assert not mismatches, mismatches[:5]


def test_the_c_library_functions():
    """libc: a separate, compressed debug file when libc6-dbg is installed,
    the dynamic symbol table otherwise.  Function names agree with binutils
    except where it picks another alias at the same address (__GI_fchdir
    for fchdir) or its own file for code #included from another source;
    at least 97 % must agree."""
    libc = os.path.realpath(subprocess.run(["cc", "-print-file-name=libc.so.6"], capture_output=True, text=True,
                                           check=True).stdout.strip())
    lo, hi = text_range(libc)
    addrs = list(range(lo, hi, 997))
    theirs = settled_addr2line(libc, addrs)
    ours = srcmap.module_map(libc).lookup_many(addrs)
    same = sum(1 for a, o in zip(addrs, ours, strict=True) if o[1] == theirs[a][1])
    assert same >= 0.97 * len(addrs), (same, len(addrs))
