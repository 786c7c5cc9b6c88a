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

import bisect
import os
import struct

import numpy as np

from psuite.cli_common import size_text
from psuite.errors import UsageError
from psuite.model.calltree import KIND_BLOCKED, KIND_CALL, KIND_TRUNCATED
from psuite.model.experiment import Addresses, Experiment

EXTENSION = ".out"
BIN_BYTES = 2
GMON_TAG_TIME_HIST, GMON_TAG_CG_ARC = 0, 1
COUNT_MAX = 2**32 - 1  # an arc's count is 32 bits
# The histogram has a bin per BIN_BYTES of the sampled address range: a
# program's text is far below this, samples spread wider are not one
# executable's (and would make a file as large as the span).
MAX_SPAN = 256 * 1024**2
INT64_MAX = 2**63 - 1
# what gmon.out and vmon.out say of anything but one profile document (format's option=--gmon ...)
ONE_PROFILE = "{option} exports one profile (psrun --profile ...); for combined reports use --cube"


def addresses(exp: Experiment, option: str) -> Addresses:
    """The experiment's sampled addresses, which only one profile document
    has (not a CUBE file, a combination or a counting report)."""
    if exp.addresses is None:
        raise UsageError(ONE_PROFILE.format(option=option))
    return exp.addresses


def executable_module(exp: Experiment, wanted: str | None = None) -> int:
    """The module gprof describes (its index in the sampled addresses'
    modules): the one named, else the program's own."""
    modules = addresses(exp, "--gmon").modules
    if wanted:
        for i, m in enumerate(modules):
            if m.file == wanted or os.path.basename(m.file) == os.path.basename(wanted):
                return i
        raise UsageError(f"no samples in module {wanted}; the profile has {', '.join(m.file for m in modules)}")
    command = exp.attributes.get("command", "")
    program = os.path.basename(command.split()[0]) if command else ""
    for i, m in enumerate(modules):
        if os.path.basename(m.file) == program:
            return i
    for i, m in enumerate(modules):
        if m.file.startswith("/") and not os.path.basename(m.file).startswith(("lib", "ld-")):
            return i
    raise UsageError(f"{exp.attributes.get('source', '')}: no executable among the profiled modules; "
                     "name one with --module")


def module_samples(exp: Experiment, module: int) -> tuple[np.ndarray, np.ndarray]:
    """The module's sampled addresses (pc less its load offset), ascending
    and each once, and the samples at each summed over the locations (a
    sum beyond int64 held at its greatest); a pc below the load offset
    comes out as a negative address (as int64) where it fits, which the
    exporters refuse."""
    a = exp.addresses
    assert a is not None
    rows = np.flatnonzero(a.module == module)
    pcs, counts = a.pc[rows], a.samples[rows]
    offset = a.modules[module].offset
    order = np.argsort(pcs, kind="stable")
    pcs, counts = pcs[order], counts[order]
    starts = np.flatnonzero(np.r_[True, pcs[1:] != pcs[:-1]]) if len(pcs) else np.zeros(0, dtype=np.int64)
    if len(starts) < len(pcs):  # one pc at several locations: summed
        summed = np.add.reduceat(counts, starts)
        summed[np.add.reduceat(counts.astype(np.float64), starts) >= 2.0**63] = INT64_MAX
        pcs, counts = pcs[starts], summed
    if len(pcs) and int(pcs[0]) < offset:  # not the module's: said by the caller as an address below 0
        return np.asarray([int(pc) - offset for pc in pcs.tolist()], dtype=object), counts
    return pcs - np.uint64(offset), counts


def histogram(exp: Experiment, module: int) -> bytes:
    """The time-histogram record (tag 0) of the module's samples."""
    a = addresses(exp, "--gmon")
    source, file = exp.attributes.get("source", ""), a.modules[module].file
    addrs, counts = module_samples(exp, module)
    if not len(addrs):
        raise UsageError(f"{source}: no samples in {file}")
    low = int(addrs[0]) // BIN_BYTES * BIN_BYTES
    high = (int(addrs[-1]) // BIN_BYTES + 1) * BIN_BYTES
    if low < 0 or high > 2**64 - 1:
        raise UsageError(f"{source}: samples of {file} lie outside its 64-bit address space")
    if high - low > MAX_SPAN:
        raise UsageError(f"{source}: the samples of {file} span {size_text(high - low)} of addresses; "
                         f"a gmon.out histogram covers at most {size_text(MAX_SPAN)} (name another module with "
                         "--module, or use --cube)")
    # a 16-bit count per bin, at most 65,535 samples: each address's capped first, so that a bin's sum (two
    # addresses at most, 131,070) is exact in bincount's doubles
    index = ((addrs - np.uint64(low)) // np.uint64(BIN_BYTES)).astype(np.int64)
    bins = np.bincount(index, weights=np.minimum(counts, 65535), minlength=(high - low) // BIN_BYTES)
    if a.is_timer and a.threshold:
        rate, dimen, abbrev = round(1e6 / a.threshold), b"seconds", b"s"
    else:  # event overflow: one "second" per sample, so gprof's columns read as samples
        rate, dimen, abbrev = 1, b"samples", b"#"
    return (bytes([GMON_TAG_TIME_HIST]) + struct.pack("<QQii", low, high, len(bins), rate) +
            dimen.ljust(15, b"\0") + abbrev + np.minimum(bins, 65535).astype("<u2").tobytes())


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


def arcs(exp: Experiment, module: int) -> dict[tuple[int, int], int]:
    """(from_pc, self_pc) -> samples under that call, over every thread's
    calling-context tree (see the module's description); empty without
    call paths."""
    a = addresses(exp, "--gmon")
    if a.frame_modules is None:
        return {}
    file = a.modules[module].file
    offsets = {i: m.offset for i, m in enumerate(a.frame_modules) if m.file == file}
    if not offsets:  # the companion may name the file as the loader saw it
        offsets = {i: m.offset for i, m in enumerate(a.frame_modules)
                   if os.path.basename(m.file) == os.path.basename(file)}
    out: dict[tuple[int, int], int] = {}
    if offsets:
        _frame_arcs(a, offsets, _Entries(file), out)
    return out


def _frame_arcs(a: Addresses, offsets: dict[int, int], entries: _Entries, out: dict[tuple[int, int], int]) -> None:
    """Add the threads' arcs to out.  A sample counts once for a caller and
    callee even where recursion repeats that call on its path: the count is
    the inclusive samples of the outermost such call."""
    parents, mods, pcs, kinds = (a.frame_parent.tolist(), a.frame_module.tolist(), a.frame_pc.tolist(),
                                 a.frame_kind.tolist())
    n = len(parents)
    inclusive = a.frame_samples.tolist()  # Python's integers: sums of any size
    children: list[list[int]] = [[] for _ in range(n)]
    outermost: list[int] = []
    for i in range(n - 1, -1, -1):  # a frame's parent comes before it; children listed last first, as popped
        up = parents[i]
        if up < 0:
            outermost.append(i)
        else:
            inclusive[up] += inclusive[i]
            children[up].append(i)
    # site[i]: the call site, in the module, through which frame i's callees
    # were called: its own frame's, or its nearest module frame's above it;
    # site[-1], an outermost frame's parent's, stays None (no caller)
    site: list[int | None] = [None] * (n + 1)
    on_path: dict[tuple[int, int], int] = {}  # (caller entry, callee entry) -> times on the current path
    pair_of: dict[int, tuple[int, int]] = {}
    todo = outermost  # depth first: i enters frame i, ~i (negative) leaves it
    while todo:
        i = todo.pop()
        if i < 0:  # leaving a frame that put its call on the path
            on_path[pair_of.pop(~i)] -= 1
            continue
        pair = _visit(i, parents[i], kinds[i], offsets.get(mods[i]), pcs[i], inclusive[i], site, entries, on_path,
                      out)
        if pair is not None:
            pair_of[i] = pair
            todo.append(~i)  # popped after the children pushed next
        todo.extend(children[i])


def _visit(i: int, up: int, kind: int, offset: int | None, addr: int, inclusive: int, site: list[int | None],
           entries: _Entries, on_path: dict[tuple[int, int], int],
           out: dict[tuple[int, int], int]) -> tuple[int, int] | None:
    """Frame i (parent up, -1 for none): its call site, and its arc into
    out; the (caller, callee) pair it puts on the path, None when it makes
    no arc."""
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


def encode(exp: Experiment, module: int) -> tuple[bytes, int]:
    """The gmon.out file and its number of arcs."""
    out = bytearray(b"gmon" + struct.pack("<I", 1) + bytes(12))
    out += histogram(exp, module)
    written = 0
    for (from_pc, self_pc), count in sorted(arcs(exp, module).items()):
        if 0 <= from_pc < 2**64 and 0 <= self_pc < 2**64:  # else not the module's: below its load offset
            out += bytes([GMON_TAG_CG_ARC]) + struct.pack("<QQI", from_pc, self_pc, min(count, COUNT_MAX))
            written += 1
    return bytes(out), written


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(exp: Experiment, path: str, module: str | None = None, force: bool = False) -> str:
    """Write gmon.out data for the profile's executable; says what was written."""
    from psuite.cli_common import atomic_output

    a = addresses(exp, "--gmon")
    m = executable_module(exp, module)
    data, count = encode(exp, m)
    with atomic_output(path, force, binary=True) as f:
        f.write(data)
    if a.frame_modules is None:
        return f"gprof {a.modules[m].file} {path}; a flat profile: record with psrun --callpath for gprof's call graph"
    return f"gprof {a.modules[m].file} {path}; {count:,} call arcs, their counts samples, not calls"
