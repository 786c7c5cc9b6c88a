"""GNU gprof's gmon.out (glibc's gmon/sys/gmon_out.h, as binutils' gprof
reads it in gmon_io.c): the "gmon" header, version 1; one time-histogram
record over the exported module's sampled address range, at the profile's
sampling rate; and, for profiles recorded with call paths (psrun
--callpath), call-graph arc records.  `gprof ./app gmon.out` then prints
the flat profile and the call graph, which gprof2dot reads.

The histogram: bins are 2 bytes wide, as glibc's own profiling makes them;
a bin holds at most 65,535 samples (the format's 16-bit counts).

The arcs (tag 1: from_pc, self_pc as 8-byte addresses, a 4-byte count,
in the executable's byte order) come from every thread's calling-context
tree, one for each edge caller -> callee of the tree:

- from_pc is the call site in the caller: the return address the
  companion recorded, less one (the call instruction itself, as perf and
  addr2line resolve a return address; the return address can be the first
  byte of the next function after a call that does not return);
- self_pc is the callee's entry, from the module's ELF symbol table (the
  address inside the callee itself where no symbol covers it: gprof then
  looks it up as it can);
- the count is the number of samples taken under that edge (the callee's
  inclusive samples in that context), summed over contexts and threads.
  Samples are not calls, and gprof's "called" columns show these samples;
  but gprof shares a callee's time among its callers in proportion to the
  counts, so its call graph then charges each caller with the time the
  profile measured under it (a count of 1 per edge would share it evenly);
- addresses are the module's own (pc minus the load offset, as for the
  histogram), so position-independent executables and fixed-address ones
  alike match the addresses gprof reads from the file;
- gprof knows only the exported module: frames of other modules (shared
  libraries, the loader) are folded away.  A callee in the module whose
  caller is in a library is charged to the module's nearest frame above it
  (qsort's comparison function called by the function that called qsort);
  a callee with no frame of the module above it (main, a thread's start
  routine) has no caller, as gprof shows it (<spontaneous>); calls from the
  module into a library make no arc (their samples are in no bin of the
  histogram either).  Frames below a truncated stack's gap have no caller."""

from __future__ import annotations

import array
import bisect
import os
import struct
import sys

from psuite.cli_common import size_text
from psuite.errors import UsageError
from psuite.model.report import ModuleSamples, ProfileReport

TYPE_CHECKING = False
if TYPE_CHECKING:  # psuite.model.calltree is imported where arcs are made: a flat export does without it
    from psuite.model.calltree import ThreadCallPaths

EXTENSION = ".out"
BIN_BYTES = 2
GMON_TAG_TIME_HIST, GMON_TAG_CG_ARC = 0, 1
COUNT_MAX = 2**32 - 1  # an arc's count is 32 bits
# The histogram has a bin per BIN_BYTES of the sampled address range: a
# program's text is far below this, samples spread wider are not one
# executable's (and would make a file as large as the span).
MAX_SPAN = 256 * 1024**2


def executable_module(report: ProfileReport, wanted: str | None = None) -> ModuleSamples:
    """The module gprof describes: the one named, else the program's own."""
    if wanted:
        for m in report.modules:
            if m.file == wanted or os.path.basename(m.file) == os.path.basename(wanted):
                return m
        raise UsageError(f"no samples in module {wanted}; the profile has {', '.join(m.file for m in report.modules)}")
    program = os.path.basename(report.command.split()[0]) if report.command else ""
    for m in report.modules:
        if os.path.basename(m.file) == program:
            return m
    for m in report.modules:
        if m.file.startswith("/") and not os.path.basename(m.file).startswith(("lib", "ld-")):
            return m
    raise UsageError(f"{report.source}: no executable among the profiled modules; name one with --module")


def histogram(report: ProfileReport, module: ModuleSamples) -> bytes:
    """The time-histogram record (tag 0) of the module's samples."""
    if not module.samples:
        raise UsageError(f"{report.source}: no samples in {module.file}")
    addrs = {pc - module.offset: n for pc, n in module.samples.items()}
    low = min(addrs) // BIN_BYTES * BIN_BYTES
    high = (max(addrs) // BIN_BYTES + 1) * BIN_BYTES
    if low < 0 or high > 2**64 - 1:
        raise UsageError(f"{report.source}: samples of {module.file} lie outside its 64-bit address space")
    if high - low > MAX_SPAN:
        raise UsageError(f"{report.source}: the samples of {module.file} span {size_text(high - low)} of addresses; "
                         f"a gmon.out histogram covers at most {size_text(MAX_SPAN)} (name another module with "
                         "--module, or use --cube)")
    bins = array.array("H", bytes((high - low) // BIN_BYTES * 2))  # a 16-bit count per bin
    for addr, n in addrs.items():
        i = (addr - low) // BIN_BYTES
        bins[i] = min(65535, bins[i] + n)
    if sys.byteorder != "little":
        bins.byteswap()
    if report.is_timer and report.threshold:
        rate, dimen, abbrev = round(1e6 / report.threshold), b"seconds", b"s"
    else:  # event overflow: one "second" per sample, so gprof's columns read as samples
        rate, dimen, abbrev = 1, b"samples", b"#"
    return (bytes([GMON_TAG_TIME_HIST]) + struct.pack("<QQii", low, high, len(bins), rate) +
            dimen.ljust(15, b"\0") + abbrev + bins.tobytes())


class _Entries:
    """Function entries of one ELF file from its symbol table (.symtab, else
    .dynsym), as gprof takes its functions from it: entry(addr) is the
    start of the function symbol that covers addr, None where none does."""

    def __init__(self, path: str) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        try:
            from elftools.common.exceptions import ELFError
            from elftools.elf.elffile import ELFFile

            with open(path, "rb") as f:
                elf = ELFFile(f)
                spans: set[tuple[int, int]] = set()
                for name in (".symtab", ".dynsym"):
                    sec = elf.get_section_by_name(name)
                    if sec is None or not hasattr(sec, "iter_symbols"):
                        continue
                    for sym in sec.iter_symbols():
                        if sym["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and sym["st_value"]:
                            spans.add((sym["st_value"], sym["st_value"] + max(sym["st_size"], 1)))
                    if spans:
                        break
        except (OSError, ELFError, ValueError, KeyError, AttributeError):
            return  # unreadable or not ELF: the callees' own addresses are written
        # the largest symbol first among equal starts: an alias of size 0 does not hide its function
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            if not self.starts or start != self.starts[-1]:
                self.starts.append(start)
                self.ends.append(end)

    def entry(self, addr: int) -> int | None:
        i = bisect.bisect_right(self.starts, addr) - 1
        return self.starts[i] if i >= 0 and addr < self.ends[i] else None


def arcs(report: ProfileReport, module: ModuleSamples) -> dict[tuple[int, int], int]:
    """(from_pc, self_pc) -> samples under that call, over every thread's
    calling-context tree (see the module's description); empty without
    call paths."""
    cp = report.callpaths
    if cp is None:
        return {}
    offsets = {i: m.offset for i, m in cp.modules.items() if m.file == module.file}
    if not offsets:  # the companion may name the file as the loader saw it
        offsets = {i: m.offset for i, m in cp.modules.items()
                   if os.path.basename(m.file) == os.path.basename(module.file)}
    out: dict[tuple[int, int], int] = {}
    if offsets:
        entries = _Entries(module.file)
        for t in cp.threads:
            _thread_arcs(t, offsets, entries, out)
    return out


def _thread_arcs(t: ThreadCallPaths, offsets: dict[int, int], entries: _Entries,
                 out: dict[tuple[int, int], int]) -> None:
    """Add one thread's arcs to out.  A sample counts once for a caller and
    callee even where recursion repeats that call on its path: the count is
    the inclusive samples of the outermost such call."""
    parent, mod, addr, kind = t.parent, t.module, t.addr, t.kind
    n = len(parent)
    inclusive = list(t.exclusive)
    children: list[list[int]] = [[] for _ in range(n)]
    for i in range(n - 1, 0, -1):  # a node's parent comes before it
        inclusive[parent[i]] += inclusive[i]
        children[parent[i]].append(i)
    # site[i]: the call site, in the module, through which node i's callees
    # were called: its own frame's, or its nearest module frame's above it
    site: list[int | None] = [None] * n
    on_path: dict[tuple[int, int], int] = {}  # (caller entry, callee entry) -> times on the current path
    pair_of: dict[int, tuple[int, int]] = {}
    todo = list(children[0])  # depth first: i enters node i, ~i (negative) leaves it
    while todo:
        i = todo.pop()
        if i < 0:  # leaving a node that put its call on the path
            on_path[pair_of.pop(~i)] -= 1
            continue
        pair = _visit(i, parent[i], kind[i], offsets.get(mod[i]), addr[i], inclusive[i], site, entries, on_path, out)
        if pair is not None:
            pair_of[i] = pair
            todo.append(~i)  # popped after the children pushed next
        todo.extend(children[i])


def _visit(i: int, up: int, kind: int, offset: int | None, addr: int, inclusive: int, site: list[int | None],
           entries: _Entries, on_path: dict[tuple[int, int], int],
           out: dict[tuple[int, int], int]) -> tuple[int, int] | None:
    """Node i (parent up): its call site, and its arc into out; the
    (caller, callee) pair it puts on the path, None when it makes no arc."""
    from psuite.model.calltree import KIND_BLOCKED, KIND_CALL, KIND_TRUNCATED

    if kind in (KIND_TRUNCATED, KIND_BLOCKED):
        return None  # the frames above are unknown: what hangs below has no caller
    if offset is None:  # a frame of another module: folded into the module's frame above
        site[i] = site[up]
        return None
    pc = site[i] = addr - offset - (1 if kind == KIND_CALL else 0)
    caller = site[up]
    if caller is None or not inclusive:
        return None
    callee = entries.entry(pc) or pc
    pair = (entries.entry(caller) or caller, callee)
    if not on_path.get(pair):
        out[caller, callee] = out.get((caller, callee), 0) + inclusive
    on_path[pair] = on_path.get(pair, 0) + 1
    return pair


def encode(report: ProfileReport, module: ModuleSamples) -> tuple[bytes, int]:
    """The gmon.out file and its number of arcs."""
    out = bytearray(b"gmon" + struct.pack("<I", 1) + bytes(12))
    out += histogram(report, module)
    written = 0
    for (from_pc, self_pc), count in sorted(arcs(report, module).items()):
        if 0 <= from_pc < 2**64 and 0 <= self_pc < 2**64:  # else not the module's: below its load offset
            out += bytes([GMON_TAG_CG_ARC]) + struct.pack("<QQI", from_pc, self_pc, min(count, COUNT_MAX))
            written += 1
    return bytes(out), written


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(report: ProfileReport, path: str, module: str | None = None, force: bool = False) -> str:
    """Write gmon.out data for the report's executable; says what was written."""
    from psuite.cli_common import atomic_output

    if not isinstance(report, ProfileReport):
        raise UsageError("--gmon exports one profile (psrun --profile ...); for combined reports use --cube")
    m = executable_module(report, module)
    data, count = encode(report, m)
    with atomic_output(path, force, binary=True) as f:
        f.write(data)
    if report.callpaths is None:
        return f"gprof {m.file} {path}; a flat profile: record with psrun --callpath for gprof's call graph"
    return f"gprof {m.file} {path}; {count:,} call arcs, their counts samples, not calls"
