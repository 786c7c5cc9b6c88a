"""gmon.out and vmon.out as psuite wrote them from the PerfSuite document
(ProfileReport) before they were rendered from the analysis model: the
reference the model's exports must equal byte for byte
(test_addresses_model).  Kept as they were, the UsageError refusals
turned into AssertionErrors (the reference is only given good profiles)."""

from __future__ import annotations

import array
import bisect
import os
import struct
import sys

from psuite.model.calltree import KIND_BLOCKED, KIND_CALL, KIND_TRUNCATED, ThreadCallPaths
from psuite.model.report import ModuleSamples, ProfileReport

BIN_BYTES = 2
GMON_TAG_TIME_HIST, GMON_TAG_CG_ARC = 0, 1
COUNT_MAX = 2**32 - 1


def executable_module(report: ProfileReport, wanted: str | None = None) -> ModuleSamples:
    if wanted:
        for m in report.modules:
            if m.file == wanted or os.path.basename(m.file) == os.path.basename(wanted):
                return m
        raise AssertionError(f"no samples in module {wanted}")
    program = os.path.basename(report.command.split()[0]) if report.command else ""
    for m in report.modules:
        if os.path.basename(m.file) == program:
            return m
    for m in report.modules:
        if m.file.startswith("/") and not os.path.basename(m.file).startswith(("lib", "ld-")):
            return m
    raise AssertionError("no executable among the profiled modules")


def histogram(report: ProfileReport, module: ModuleSamples) -> bytes:
    assert module.samples
    addrs = {pc - module.offset: n for pc, n in module.samples.items()}
    low = min(addrs) // BIN_BYTES * BIN_BYTES
    high = (max(addrs) // BIN_BYTES + 1) * BIN_BYTES
    bins = array.array("H", bytes((high - low) // BIN_BYTES * 2))
    for addr, n in addrs.items():
        i = (addr - low) // BIN_BYTES
        bins[i] = min(65535, bins[i] + n)
    if sys.byteorder != "little":
        bins.byteswap()
    if report.is_timer and report.threshold:
        rate, dimen, abbrev = round(1e6 / report.threshold), b"seconds", b"s"
    else:
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


def gmon(report: ProfileReport, module: ModuleSamples) -> bytes:
    """The gmon.out file."""
    out = bytearray(b"gmon" + struct.pack("<I", 1) + bytes(12))
    out += histogram(report, module)
    for (from_pc, self_pc), count in sorted(arcs(report, module).items()):
        if 0 <= from_pc < 2**64 and 0 <= self_pc < 2**64:
            out += bytes([GMON_TAG_CG_ARC]) + struct.pack("<QQI", from_pc, self_pc, min(count, COUNT_MAX))
    return bytes(out)


def vmon(report: ProfileReport, m: ModuleSamples) -> bytes:
    """The vmon.out file (version 4)."""
    addrs = sorted((pc - m.offset, n) for pc, n in m.samples.items())
    assert addrs
    base = addrs[0][0]
    outside = sum(sum(o.samples.values()) for o in report.modules if o is not m)
    entries = []
    for addr, n in addrs:
        while n > 0:
            chunk = min(n, 0xFFFF)
            entries.append(struct.pack(">Hi", chunk, addr - base))
            n -= chunk
    name = b"REAL" if report.event == "ITIMER_REAL" else b"PROF" if report.is_timer else b"EVNT"
    return (struct.pack(">IBi", 0x766D6F6E, 4, 1) + name + b"\0" +
            struct.pack(">iiiq", outside, 0, len(entries), base) + b"".join(entries))
