"""GNU gprof's gmon.out (glibc's gmon/sys/gmon_out.h, as binutils' gprof
reads it in gmon_io.c): the "gmon" header, version 1; one time-histogram
record over the exported module's sampled address range, at the profile's
sampling rate; and, for profiles recorded with call paths (psrun
--callpath), call-graph arc records.  `gprof ./app gmon.out` then prints
the flat profile and the call graph, which gprof2dot reads.  Written from
one profile document's experiment: its sampled addresses and recorded
frames (psuite.model.experiment.Addresses).

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
from psuite.model.experiment import Addresses, Experiment, depths, scatter_add

EXTENSION = ".out"
BIN_BYTES = 2
GMON_TAG_TIME_HIST, GMON_TAG_CG_ARC = 0, 1
COUNT_MAX = 2**32 - 1  # an arc's count is 32 bits
# The histogram has a bin per BIN_BYTES of the sampled address range: a
# program's text is far below this, samples spread wider are not one
# executable's (and would make a file as large as the span).
MAX_SPAN = 256 * 1024**2
INT64_MAX = 2**63 - 1
# gmon's and vprof's refusal of anything but one profile document (option: --gmon or --vprof)
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


def sampled(exp: Experiment, module: int, option: str) -> tuple[Addresses, str, str, np.ndarray, np.ndarray]:
    """The profile's address table, its source and the module's file (what
    messages name), and the module's samples (module_samples); one line
    when it has none."""
    a = addresses(exp, option)
    source, file = exp.attributes.get("source", ""), a.modules[module].file
    addrs, counts = module_samples(exp, module)
    if not len(addrs):
        raise UsageError(f"{source}: no samples in {file}")
    return a, source, file, addrs, counts


def histogram(exp: Experiment, module: int) -> bytes:
    """The time-histogram record (tag 0) of the module's samples."""
    a, source, file, addrs, counts = sampled(exp, module, "--gmon")
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
    from_pc, self_pc, count = arc_columns(exp, module)
    return dict(zip(zip(from_pc.tolist(), self_pc.tolist(), strict=True), count.tolist(), strict=True))


def arc_columns(exp: Experiment, module: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arcs as columns, ascending by (from_pc, self_pc): from_pc,
    self_pc and count (each count at most 2^32, what the file's 32-bit
    count holds and one more); int64, or Python integers (object) for
    addresses beyond it."""
    a = addresses(exp, "--gmon")
    empty = np.zeros(0, dtype=np.int64)
    if a.frame_modules is None:
        return empty, empty, empty
    file = a.modules[module].file
    offsets = {i: m.offset for i, m in enumerate(a.frame_modules) if m.file == file}
    if not offsets:  # the companion may name the file as the loader saw it
        offsets = {i: m.offset for i, m in enumerate(a.frame_modules)
                   if os.path.basename(m.file) == os.path.basename(file)}
    if not offsets:
        return empty, empty, empty
    entries = _Entries(file)
    got = _array_arcs(a, offsets, entries)
    if got is not None:
        return got
    out: dict[tuple[int, int], int] = {}  # addresses beyond int64: the walk, over Python's integers
    _frame_arcs(a, offsets, entries, out)
    keys = sorted(out)
    return (np.array([k[0] for k in keys], dtype=object), np.array([k[1] for k in keys], dtype=object),
            np.array([min(out[k], COUNT_MAX + 1) for k in keys], dtype=object))


def _array_arcs(a: Addresses, offsets: dict[int, int],
                entries: _Entries) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The arcs of _frame_arcs computed over the frame columns with numpy,
    one pass per tree level instead of a Python step per frame (a million
    frames: a second, not several); None when a call site or a symbol lies
    beyond int64 (then the walk does it).

    A frame of the module is an arc's callee when a module frame above it
    (through frames of other modules, none truncated or blocked) gives its
    caller's call site and samples were taken under it.  The arc counts
    only for the outermost of its (caller function, callee function) pair
    on the path: in preorder, a frame lies within an earlier frame's span
    of descendants exactly when that frame is its ancestor."""
    parent, kind, n = a.frame_parent, a.frame_kind, len(a.frame_parent)
    if (entries.ends and max(entries.ends) >= 2**63) or any(o >= 2**64 for o in offsets.values()):
        return None
    starts, ends = np.asarray(entries.starts, dtype=np.int64), np.asarray(entries.ends, dtype=np.int64)
    chosen = np.zeros(len(a.frame_modules or ()) + 1, dtype=bool)  # by frame_module + 1: -1 is no module
    offset = np.zeros(len(chosen), dtype=np.uint64)
    for i, o in offsets.items():
        chosen[i + 1], offset[i + 1] = True, o
    cut = (kind == KIND_TRUNCATED) | (kind == KIND_BLOCKED)
    own = chosen[a.frame_module + 1] & ~cut  # the module's frames: their own call site
    folded = ~chosen[a.frame_module + 1] & ~cut  # other modules' frames: the call site above them
    # own call sites, pc - offset - 1 for a call (its call instruction), exact in int64 or refused
    pc, off, call = a.frame_pc[own], offset[a.frame_module[own] + 1], (kind[own] == KIND_CALL).astype(np.uint64)
    above = (pc >= off) & (pc - off >= call)  # a site at or above 0
    d = pc - off - call  # modulo 2^64: the site itself where it fits int64
    if not np.all(np.where(above, d < np.uint64(2**63), d >= np.uint64(2**63))):
        return None
    site = np.zeros(n, dtype=np.int64)
    known = np.zeros(n, dtype=bool)  # a site to give callees (none above a truncated or blocked frame)
    site[own], known[own] = d.view(np.int64), True
    depth = depths(parent)
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(int(depth.max(initial=0)) + 2))
    levels = [order[bounds[k]:bounds[k + 1]] for k in range(len(bounds) - 1)]
    for level in levels[1:]:  # top down: an other module's frame takes its parent's site
        f = level[folded[level]]
        site[f], known[f] = site[parent[f]], known[parent[f]]
    inclusive = np.minimum(a.frame_samples, COUNT_MAX + 1)  # a count is written as at most COUNT_MAX
    size = np.ones(n, dtype=np.int64)  # frames in each subtree
    for level in reversed(levels[1:]):  # bottom up
        scatter_add(inclusive, parent[level], inclusive[level])  # (np.add.at is slow before numpy 1.25)
        scatter_add(size, parent[level], size[level])
    up = np.maximum(parent, 0)
    arc = np.flatnonzero(own & (parent >= 0) & known[up] & (inclusive > 0))
    if not len(arc):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    caller, callee = site[parent[arc]], _entry_or_self(starts, ends, site[arc])
    pair = _entry_or_self(starts, ends, caller)
    # preorder positions: a frame after its parent and its earlier siblings' subtrees
    by_parent = np.lexsort((np.arange(n), parent))
    before = np.cumsum(size[by_parent]) - size[by_parent]
    first = np.flatnonzero(np.r_[True, parent[by_parent][1:] != parent[by_parent][:-1]])
    among = np.empty(n, dtype=np.int64)
    among[by_parent] = before - np.repeat(before[first], np.diff(np.r_[first, n]))
    tin = among.copy()  # the outermost frames one after another
    for level in levels[1:]:
        tin[level] = tin[parent[level]] + 1 + among[level]
    tout = tin + size
    # the outermost of each pair on its path: no earlier frame of the pair spans it
    o = np.lexsort((tin[arc], callee, pair))
    group = np.cumsum(np.r_[True, (pair[o][1:] != pair[o][:-1]) | (callee[o][1:] != callee[o][:-1])]) - 1
    span = 2 * n + 2
    reach = np.maximum.accumulate(group * span + tout[arc][o])
    inner = np.r_[-1, reach[:-1]] - group * span > tin[arc][o]
    kept = o[~inner]
    caller, callee, count = caller[kept], callee[kept], inclusive[arc][kept]
    o = np.lexsort((callee, caller))
    caller, callee, count = caller[o], callee[o], count[o]
    new = np.flatnonzero(np.r_[True, (caller[1:] != caller[:-1]) | (callee[1:] != callee[:-1])])
    return caller[new], callee[new], np.minimum(np.add.reduceat(count, new), COUNT_MAX + 1) if len(new) else count


def _entry_or_self(starts: np.ndarray, ends: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """_Entries.entry(addr) or addr, for each address."""
    if not len(starts):
        return addr
    i = np.searchsorted(starts, addr, side="right") - 1
    j = np.maximum(i, 0)
    start = starts[j]
    return np.where((i >= 0) & (addr < ends[j]) & (start != 0), start, addr)


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


ARC = np.dtype([("tag", "u1"), ("from_pc", "<u8"), ("self_pc", "<u8"), ("count", "<u4")])  # a record, unpadded


def encode(exp: Experiment, module: int) -> tuple[bytes, int]:
    """The gmon.out file and its number of arcs."""
    head = b"gmon" + struct.pack("<I", 1) + bytes(12) + histogram(exp, module)
    from_pc, self_pc, count = arc_columns(exp, module)
    if from_pc.dtype == object:  # addresses beyond int64
        written = [bytes([GMON_TAG_CG_ARC]) + struct.pack("<QQI", f, s, min(c, COUNT_MAX))
                   for f, s, c in zip(from_pc, self_pc, count, strict=True) if 0 <= f < 2**64 and 0 <= s < 2**64]
        return head + b"".join(written), len(written)
    keep = (from_pc >= 0) & (self_pc >= 0)  # else not the module's: below its load offset
    records = np.zeros(int(keep.sum()), dtype=ARC)
    records["tag"] = GMON_TAG_CG_ARC
    records["from_pc"], records["self_pc"] = from_pc[keep], self_pc[keep]
    records["count"] = np.minimum(count[keep], COUNT_MAX)
    return head + records.tobytes(), len(records)


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
