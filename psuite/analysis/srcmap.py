"""Mapping sampled PCs to source: module, file, function and line.

For each module (executable or shared library) the file address of a PC is
pc - offset (the load address the capture recorded).  Lines come from the
DWARF line table and functions from DWARF subprograms, the innermost
inlined subroutine winning, as `addr2line -f -i` reports first; without
DWARF, the ELF symbol table names the function; what is unknown is "??"
with line 0, as in the original PerfSuite.  For call paths,
resolve_frames gives every frame at an address, the inlined calls first,
as `addr2line -f -i` lists them.  Each module is read from the binary
binaries.bindings finds for it (the profiled build, never another one:
samples it cannot find are marked instead).  Debug information is also
looked for in separate debug files (build-id, .gnu_debuglink under
/usr/lib/debug and the directories of --binaries and PSUITE_BINARY_PATH).  C++
names are demangled by the C++ runtime's own demangler.  The C decoder
(csrc/decoder/, libpsdwarf.so) does the decoding and the lookups, many
addresses per call; pyelftools is imported only to find separate debug
files and for what the C decoder does not read (ModuleMap)."""

from __future__ import annotations

import atexit
import bisect
import os
from array import array
from collections.abc import Callable, Iterable
from itertools import chain, repeat

TYPE_CHECKING = False
if TYPE_CHECKING:  # psuite.model.report is only needed by resolve(), psuite.model.calltree (Frame) only by the frame
    # lookups: imported there, for a quick start-up of a flat profile's run
    from psuite.model.calltree import Frame
    from psuite.model.report import Location, ModuleSamples, ProfileReport

MAPPER = "psuite-dwarf"
UNKNOWN = "??"
DEBUG_ROOT = "/usr/lib/debug"


def _demangler() -> Callable[[str], str]:
    try:
        from cffi import FFI

        ffi = FFI()
        ffi.cdef("char *__cxa_demangle(const char *, char *, size_t *, int *); void free(void *);")
        cxx, libc = ffi.dlopen("libstdc++.so.6"), ffi.dlopen(None)
    except (ImportError, OSError):
        return lambda name: name

    def demangle(name: str) -> str:
        if not name.startswith("_Z"):
            return name
        status = ffi.new("int *")
        out = cxx.__cxa_demangle(name.encode(), ffi.NULL, ffi.NULL, status)
        if status[0] != 0 or out == ffi.NULL:
            return name
        try:
            return ffi.string(out).decode("utf-8", "replace")
        finally:
            libc.free(out)

    return demangle


_demangle: Callable[[str], str] | None = None


def demangle(name: str) -> str:
    global _demangle
    if _demangle is None:
        _demangle = _demangler()
    return _demangle(name)


def _decode(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _debug_file(elf, path: str) -> str | None:
    """A separate debug file for path: by build-id, then .gnu_debuglink,
    in the directories of binaries.search_path() and /usr/lib/debug."""
    from psuite.formats import binaries

    note = elf.get_section_by_name(".note.gnu.build-id")
    if note is not None:
        for n in note.iter_notes():
            if n["n_type"] == "NT_GNU_BUILD_ID":
                candidate = binaries.debug_by_id(n["n_desc"])
                if candidate:
                    return candidate
    link = elf.get_section_by_name(".gnu_debuglink")
    if link is not None:
        name = link.data().split(b"\0", 1)[0].decode("utf-8", "replace")
        here = os.path.dirname(os.path.realpath(path))
        for candidate in (os.path.join(here, name), os.path.join(here, ".debug", name),
                          os.path.join(DEBUG_ROOT + here, name), *binaries.file_for_debug(name)):
            if os.path.exists(candidate) and os.path.realpath(candidate) != os.path.realpath(path):
                return candidate
    return None


class NativeMap:
    """The C core's decoder (csrc/decoder/, libpsdwarf.so) for one ELF file: line rows,
    functions with their inlined calls, and symbols decoded in C, looked up
    many addresses per call."""

    def __init__(self, path: str) -> None:
        from psuite.libperfsuite.native import load_decoder

        self._ffi, self._lib = load_decoder()
        out = self._ffi.new("ps_dwarf_t **")
        rc = self._lib.ps_dwarf_open(path.encode(), out)
        if rc != 0:
            raise ValueError(f"{path}: the C decoder cannot read it ({rc})")
        # closed by __del__, while self._lib still holds the library: an
        # ffi.gc destructor could run after the library was unloaded at exit
        self._d = out[0]
        self._files: dict[int, str] = {}
        self._funcs: dict[int, str] = {}

    def __del__(self) -> None:
        d, self._d = getattr(self, "_d", None), None
        if d is not None:
            self._lib.ps_dwarf_close(d)

    @property
    def has_dwarf(self) -> bool:
        return bool(self._lib.ps_dwarf_has_dwarf(self._d))

    def _names(self, kind: int, ids: Iterable[int], cache: dict[int, str]) -> None:
        """Names of the ids not in cache yet (function ids: kind 0, demangled;
        file ids: kind 1) into it, from one call into C."""
        distinct = ids if isinstance(ids, set) else set(ids)
        todo = list(distinct.difference(cache.keys()) if cache else distinct)  # set operations: no Python loop
        if not todo:
            return
        ffi = self._ffi
        c_ids, cap = ffi.from_buffer("int[]", array("i", todo)), 64 * len(todo)
        alloc = ffi.new_allocator(should_clear_after_alloc=False)  # written by C before it is read
        while True:
            buf = alloc("char[]", cap)
            total = self._lib.ps_dwarf_names(self._d, kind, c_ids, len(todo), buf, cap)
            if total <= cap:
                break
            cap = total
        names = ffi.buffer(buf, total)[:].decode("utf-8", "replace").split("\0")
        cache.update(zip(todo, names, strict=False))  # a file name is joined as binutils joins it, not normalised

    def lookup(self, addr: int) -> tuple[str, str, int]:
        return self.lookup_many([addr])[0]

    def lookup_many(self, addrs: list[int]) -> list[tuple[str, str, int]]:
        """Like lookup for each address, in one call into C."""
        ffi, n = self._ffi, len(addrs)
        files, lines, funcs = ffi.new("int[]", n), ffi.new("int[]", n), ffi.new("int[]", n)
        self._lib.ps_dwarf_lookup_many(self._d, ffi.new("unsigned long long[]", addrs), n, files, lines, funcs)
        file_ids, func_ids = ffi.unpack(files, n), ffi.unpack(funcs, n)
        self._names(0, func_ids, self._funcs)
        self._names(1, file_ids, self._files)
        line_nos = ffi.unpack(lines, n)
        if n and min(file_ids) < 0:  # no line without DWARF
            line_nos = [line if fi >= 0 else 0 for fi, line in zip(file_ids, line_nos, strict=True)]
        # the tuples made by zip over whole columns: no Python loop per address
        return list(zip(map(self._files.__getitem__, file_ids), map(self._funcs.__getitem__, func_ids), line_nos,
                        strict=True))

    def lookup_summed(self, addrs: list[int], counts: list[int]) -> tuple[list, list, list, list] | None:
        """The distinct (file, function, line) of lookup_many(addrs), in
        first-seen order, with the counts of their addresses summed, as
        columns (files, functions, lines, sums); looked up and summed in C.
        None when a count is not a plain int of 64 bits (then the caller
        sums in Python)."""
        ffi, n = self._ffi, len(addrs)
        try:
            c_counts = ffi.from_buffer("long long[]", array("q", counts))
        except (OverflowError, TypeError):
            return None
        if set(map(type, counts)) - {int}:  # a bool would be summed as an int but kept as True in Python
            return None
        files, lines, funcs = ffi.new("int[]", n), ffi.new("int[]", n), ffi.new("int[]", n)
        self._lib.ps_dwarf_lookup_many(self._d, ffi.from_buffer("unsigned long long[]", array("Q", addrs)), n, files,
                                       lines, funcs)
        g_files, g_funcs, g_lines, g_sums = ffi.new("int[]", n), ffi.new("int[]", n), ffi.new("int[]", n), \
            ffi.new("long long[]", n)
        groups = self._lib.ps_dwarf_group(n, files, funcs, lines, c_counts, g_files, g_funcs, g_lines, g_sums)
        if groups < 0:
            return None
        file_ids, func_ids = ffi.unpack(g_files, groups), ffi.unpack(g_funcs, groups)
        distinct_files, distinct_funcs = set(file_ids), set(func_ids)
        self._names(0, distinct_funcs, self._funcs)
        self._names(1, distinct_files, self._files)
        columns = (list(map(self._files.__getitem__, file_ids)), list(map(self._funcs.__getitem__, func_ids)),
                   ffi.unpack(g_lines, groups), ffi.unpack(g_sums, groups))
        if _one_name_each(distinct_files, self._files) and _one_name_each(distinct_funcs, self._funcs):
            return columns  # distinct ids are distinct names: the groups are the locations
        per_hit: dict[tuple[str, str, int], int] = {}  # ids of the same name (a static function in two units)
        get = per_hit.get
        for file, function, line, count in zip(*columns, strict=True):
            per_hit[file, function, line] = get((file, function, line), 0) + count
        if not per_hit:
            return [], [], [], []
        files_, functions, lines_ = map(list, zip(*per_hit, strict=True))
        return files_, functions, lines_, list(per_hit.values())

    def frames_many(self, addrs: list[int], module: str) -> list[list[Frame]]:
        """Per address, its frames innermost first (see resolve_frames), in
        one call into C (two when the first guess of the frame count was short)."""
        ffi, n = self._ffi, len(addrs)
        c_addrs, counts = ffi.new("unsigned long long[]", addrs), ffi.new("int[]", n)
        cap = 4 * n + 16
        while True:
            funcs, files = ffi.new("int[]", cap), ffi.new("int[]", cap)
            lines, inlined = ffi.new("int[]", cap), ffi.new("unsigned char[]", cap)
            total = self._lib.ps_dwarf_frames_many(self._d, c_addrs, n, counts, funcs, files, lines, inlined, cap)
            if total <= cap:
                break
            cap = total
        func_ids, file_ids = ffi.unpack(funcs, total), ffi.unpack(files, total)
        self._names(0, func_ids, self._funcs)
        self._names(1, file_ids, self._files)
        # built by map() over whole columns: the per-frame work stays in C but for the Frame itself
        flat = list(map(_new_frame(), map(self._funcs.__getitem__, func_ids), repeat(module, total),
                        map(self._files.__getitem__, file_ids), ffi.unpack(lines, total),
                        map(bool, ffi.unpack(inlined, total))))
        if total == n:
            return [[frame] for frame in flat]
        out, at = [], 0
        for count in ffi.unpack(counts, n):
            out.append(flat[at:at + count])
            at += count
        return out


def _one_name_each(distinct: set[int], names: dict[int, str]) -> bool:
    """Whether the ids have distinct names."""
    return len(set(map(names.__getitem__, distinct))) == len(distinct)


def _frame_maker() -> Callable[[str, str, str, int, bool], Frame]:
    """Frame(function, module, file, line, inlined), made twice as fast as
    the frozen dataclass's __init__ by setting its slots directly: call-path
    profiles make hundreds of thousands."""
    from psuite.model.calltree import Frame

    slots = getattr(Frame, "__slots__", ())
    if tuple(slots) != ("function", "module", "file", "line", "inlined"):
        return Frame
    new = object.__new__
    set_function, set_module, set_file, set_line, set_inlined = (getattr(Frame, s).__set__ for s in slots)

    def make(function: str, module: str, file: str, line: int, inlined: bool) -> Frame:
        frame = new(Frame)
        set_function(frame, function)
        set_module(frame, module)
        set_file(frame, file)
        set_line(frame, line)
        set_inlined(frame, inlined)
        return frame

    return make


_frame_made: list = []


def _new_frame() -> Callable[[str, str, str, int, bool], Frame]:
    """_frame_maker(), made once, when the first frames are asked for."""
    if not _frame_made:
        _frame_made.append(_frame_maker())
    return _frame_made[0]


def module_map(path: str):
    """The fastest reader that can decode the file: the C core, else
    pyelftools (compressed debug sections, 32-bit or big-endian ELF), with
    DWARF from a separate debug file when the file has none."""
    from psuite.cli_common import note_read

    note_read(path)  # an input of the run: never replaced by one of its outputs
    try:
        native = NativeMap(path)
    except (ValueError, OSError):
        return ModuleMap(path)
    if native.has_dwarf:
        return native
    try:  # pyelftools only now: notes and .gnu_debuglink name a separate debug file
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile

        with open(path, "rb") as f:
            debug = _debug_file(ELFFile(f), path)
    except (OSError, ELFError, ValueError):
        return native
    if not debug:
        return native
    try:  # symbols of the stripped file itself where DWARF has no function
        return _Combined(NativeMap(debug), native)
    except (ValueError, OSError):
        return ModuleMap(path)  # a debug file the C decoder cannot read: pyelftools


class _Combined:
    def __init__(self, debug: NativeMap, binary: NativeMap) -> None:
        self.debug, self.binary = debug, binary

    def lookup(self, addr: int) -> tuple[str, str, int]:
        return self.lookup_many([addr])[0]

    def lookup_many(self, addrs: list[int]) -> list[tuple[str, str, int]]:
        out = self.debug.lookup_many(addrs)
        missing = [i for i, hit in enumerate(out) if hit[1] == UNKNOWN]
        if missing:
            for i, hit in zip(missing, self.binary.lookup_many([addrs[i] for i in missing]), strict=True):
                out[i] = (out[i][0], hit[1], out[i][2])
        return out

    def frames_many(self, addrs: list[int], module: str) -> list[list[Frame]]:
        out = self.debug.frames_many(addrs, module)
        missing = [i for i, frames in enumerate(out) if frames[0].function == UNKNOWN]
        if missing:
            from psuite.model.calltree import Frame

            for i, hit in zip(missing, self.binary.lookup_many([addrs[i] for i in missing]), strict=True):
                first = out[i][0]
                out[i] = [Frame(hit[1], module, first.file, first.line, first.inlined), *out[i][1:]]
        return out


class ModuleMap:
    """Symbol, line and function tables of one ELF file, read entirely with
    pyelftools: the fallback for what the C decoder does not take."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.sym_lo: list[int] = []
        self.syms: list[tuple[int, int, str]] = []  # (address, size, name)
        self.line_addr: list[int] = []
        self.lines: list[tuple[str, int] | None] = []  # None: end of a sequence
        self.func_lo: list[int] = []
        self.funcs: list[tuple[int, int, int, str]] = []  # (lo, hi, depth, name)
        self.max_span = 0
        self._cache: dict[int, tuple[str, str, int]] = {}
        try:
            from elftools.common.exceptions import ELFError
            from elftools.elf.elffile import ELFFile

            with open(path, "rb") as f:
                elf = ELFFile(f)
                self._symbols(elf)
                debug = _debug_file(elf, path)
                if elf.has_dwarf_info() and elf.get_section_by_name(".debug_info") is not None:
                    self._dwarf(elf)
                elif debug:
                    with open(debug, "rb") as g:
                        delf = ELFFile(g)
                        if not self.syms:
                            self._symbols(delf)
                        if delf.has_dwarf_info():
                            self._dwarf(delf)
        except (OSError, ELFError, ValueError, KeyError, AttributeError):
            pass  # unreadable or not ELF: every PC of it stays "??"

    def _symbols(self, elf) -> None:
        out = []
        for name in (".symtab", ".dynsym"):
            sec = elf.get_section_by_name(name)
            if sec is None or not hasattr(sec, "iter_symbols"):
                continue
            for sym in sec.iter_symbols():
                if sym["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and sym["st_value"] and sym.name:
                    out.append((sym["st_value"], sym["st_size"], sym.name))
            if out:
                break
        out.sort()
        self.syms = out
        self.sym_lo = [s[0] for s in out]

    def _dwarf(self, elf) -> None:
        dwarf = elf.get_dwarf_info()
        rows: list[tuple[int, int, tuple[str, int] | None]] = []
        funcs: list[tuple[int, int, int, str]] = []
        for cu in dwarf.iter_CUs():
            top = cu.get_top_DIE()
            comp_dir = _decode(top.attributes["DW_AT_comp_dir"].value) if "DW_AT_comp_dir" in top.attributes else ""
            lp = dwarf.line_program_for_CU(cu)
            if lp is not None:
                names = self._file_names(lp, comp_dir)
                seq = 0
                for entry in lp.get_entries():
                    st = entry.state
                    if st is None:
                        continue
                    if st.end_sequence:
                        rows.append((st.address, seq, None))
                        seq += 1
                    else:
                        rows.append((st.address, seq, (names.get(st.file, UNKNOWN), st.line)))
            self._functions(dwarf, cu, top, 0, funcs)
        # Within one address, the last row of a sequence wins (as in addr2line);
        # an end-of-sequence row gives way to a sequence starting there.
        rows.sort(key=lambda r: (r[0], r[2] is not None, r[1]))
        self.line_addr = [r[0] for r in rows]
        self.lines = [r[2] for r in rows]
        funcs.sort()
        self.funcs = funcs
        self.func_lo = [f[0] for f in funcs]
        self.max_span = max((f[1] - f[0] for f in funcs), default=0)

    @staticmethod
    def _file_names(lp, comp_dir: str) -> dict[int, str]:
        header = lp.header
        version = header["version"]
        dirs = [_decode(d) for d in header["include_directory"]]
        out = {}
        for i, fe in enumerate(header["file_entry"]):
            name = _decode(fe.name)
            d = fe.dir_index
            if version >= 5:
                directory = dirs[d] if d < len(dirs) else ""
                index = i
            else:
                directory = dirs[d - 1] if 0 < d <= len(dirs) else comp_dir
                index = i + 1
            if not os.path.isabs(name):
                if directory and not os.path.isabs(directory):
                    directory = os.path.join(comp_dir, directory)
                name = os.path.join(directory, name) if directory else name
            out[index] = os.path.normpath(name)
        return out

    def _functions(self, dwarf, cu, die, depth: int, out: list) -> None:
        for child in die.iter_children():
            tag = child.tag
            if tag in ("DW_TAG_subprogram", "DW_TAG_inlined_subroutine"):
                name = self._die_name(child)
                for lo, hi in self._ranges(dwarf, cu, child):
                    out.append((lo, hi, depth, name))
            if child.has_children:
                self._functions(dwarf, cu, child, depth + 1, out)

    @staticmethod
    def _die_name(die, hops: int = 0) -> str:
        attrs = die.attributes
        for key in ("DW_AT_linkage_name", "DW_AT_MIPS_linkage_name"):
            if key in attrs:
                return demangle(_decode(attrs[key].value))
        if "DW_AT_name" in attrs:
            return _decode(attrs["DW_AT_name"].value)
        for key in ("DW_AT_abstract_origin", "DW_AT_specification"):
            if key in attrs and hops < 4:
                try:
                    return ModuleMap._die_name(die.get_DIE_from_attribute(key), hops + 1)
                except (KeyError, ValueError):
                    break
        return UNKNOWN

    @staticmethod
    def _ranges(dwarf, cu, die) -> Iterable[tuple[int, int]]:
        attrs = die.attributes
        if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
            lo = attrs["DW_AT_low_pc"].value
            high = attrs["DW_AT_high_pc"]
            hi = lo + high.value if high.form.startswith("DW_FORM_data") or high.form == "DW_FORM_implicit_const" \
                else high.value
            return [(lo, hi)] if hi > lo else []
        if "DW_AT_ranges" in attrs:
            try:
                rl = dwarf.range_lists()
                if rl is None:
                    return []
                entries = rl.get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu=cu)
            except Exception:  # noqa: BLE001 - pyelftools raises many kinds on odd ranges
                return []
            base = attrs.get("DW_AT_low_pc").value if "DW_AT_low_pc" in attrs else \
                cu.get_top_DIE().attributes.get("DW_AT_low_pc").value \
                if "DW_AT_low_pc" in cu.get_top_DIE().attributes else 0
            out = []
            for e in entries:
                if hasattr(e, "begin_offset"):
                    is_abs = getattr(e, "is_absolute", False)
                    lo, hi = (e.begin_offset, e.end_offset) if is_abs else \
                        (base + e.begin_offset, base + e.end_offset)
                    if hi > lo:
                        out.append((lo, hi))
                elif hasattr(e, "base_address"):
                    base = e.base_address
            return out
        return []

    def lookup_many(self, addrs: list[int]) -> list[tuple[str, str, int]]:
        return [self.lookup(a) for a in addrs]

    def frames_many(self, addrs: list[int], module: str) -> list[list[Frame]]:
        """One frame per address: pyelftools is the fallback, without inlined calls."""
        from psuite.model.calltree import Frame

        return [[Frame(function, module, file, line)] for file, function, line in self.lookup_many(addrs)]

    def lookup(self, addr: int) -> tuple[str, str, int]:
        """(file, function, line) for a file address."""
        hit = self._cache.get(addr)
        if hit is None:
            file, line = self._line(addr)
            hit = self._cache[addr] = (file, self._function(addr), line)
        return hit

    def _line(self, addr: int) -> tuple[str, int]:
        i = bisect.bisect_right(self.line_addr, addr) - 1
        if i < 0 or self.lines[i] is None:
            return UNKNOWN, 0
        return self.lines[i]

    def _function(self, addr: int) -> str:
        best: tuple[int, str] | None = None
        i = bisect.bisect_right(self.func_lo, addr) - 1
        while i >= 0 and addr - self.funcs[i][0] <= self.max_span:
            lo, hi, depth, name = self.funcs[i]
            if lo <= addr < hi and (best is None or depth > best[0]):
                best = (depth, name)
            i -= 1
        if best:
            return best[1]
        j = bisect.bisect_right(self.sym_lo, addr) - 1
        if j >= 0:
            value, size, name = self.syms[j]
            if addr < value + max(size, 1) or (size == 0 and j + 1 < len(self.syms)):
                return demangle(name)
        return UNKNOWN


def _is_file(path: str) -> bool:
    return path.startswith("/") and os.path.isfile(path)


def _lookup(mmap, addrs: list[int]) -> list[tuple[str, str, int]]:
    """mmap.lookup_many(addrs), where an address that is no file address
    (a PC below its module's load address, or beyond 64 bits) is unknown."""
    out = [(UNKNOWN, UNKNOWN, 0)] * len(addrs)
    if mmap is None:
        return out
    valid = [i for i, a in enumerate(addrs) if 0 <= a < 2**64]
    for i, hit in zip(valid, mmap.lookup_many([addrs[i] for i in valid]), strict=True):
        out[i] = hit
    return out


_PENDING: dict[tuple[str, int, int, int], tuple[object, list]] = {}  # file key -> (thread, [map or error])
atexit.register(_PENDING.clear)  # as _MAPS below


def _file_key(path: str) -> tuple[str, int, int, int]:
    st = os.stat(path)
    return path, st.st_ino, st.st_size, st.st_mtime_ns


def prefetch(path: str) -> None:
    """Start decoding path's map (module_map) in a thread, for resolve to
    take up: psprocess calls it when the parser meets a module, so the
    decoding overlaps the reading of the samples.  The C decoder runs
    without the GIL (cffi releases it during the call)."""
    try:
        key = _file_key(path) if _is_file(path) else None
    except OSError:
        return
    if key is None or key in _PENDING:
        return
    import threading

    box: list = []

    def work() -> None:
        try:
            box.append(module_map(path))
        except Exception as exc:  # noqa: BLE001 - raised again where resolve asks for the map
            box.append(exc)

    thread = threading.Thread(target=work, name=f"psuite-prefetch {os.path.basename(path)}", daemon=True)
    thread.start()
    _PENDING[key] = (thread, box)


def _module_map(path: str):
    """module_map(path), from prefetch when it started on this very file."""
    try:
        pending = _PENDING.pop(_file_key(path), None) if _PENDING else None
    except OSError:
        pending = None
    if pending is not None:
        thread, box = pending
        thread.join()
        if box and not isinstance(box[0], Exception):
            return box[0]
    return module_map(path)  # not prefetched, or it failed: here, where its error belongs


def resolve(report: ProfileReport, progress: Callable[[int, int], None] | None = None) -> list[Location]:
    """Every sampled PC of the report as a Location, summed per
    (module, file, function, line)."""
    from psuite.formats.binaries import bindings
    from psuite.model.report import Location

    done, todo = 0, sum(len(m.samples) for m in report.modules)
    per_module = []  # (module file, (files, functions, lines, samples)): its locations in first-seen order
    bound = bindings(report)  # the very binaries profiled, or a warning and a marker
    for mod in report.modules:
        binding = bound[mod.file]
        if binding.problem:  # another build, or none: every sample of it marked, none resolved wrongly
            total = sum(mod.samples.values())
            per_module.append((mod.file, ([UNKNOWN], [binding.marker], [0], [total]) if mod.samples else
                               ((), (), (), ())))
            done += len(mod.samples)
            if progress:
                progress(done, todo)
            continue
        mmap = _module_map(binding.file) if _is_file(binding.file) else None
        pcs, counts = list(mod.samples), list(mod.samples.values())
        columns = None
        if progress is None and type(mmap) is NativeMap and pcs:  # in one call into C: no progress to show
            addrs = [pc - mod.offset for pc in pcs] if mod.offset else pcs
            if min(addrs) >= 0 and max(addrs) < 2**64:
                columns = mmap.lookup_summed(addrs, counts)
        if columns is None:
            per_hit: dict[tuple[str, str, int], int] = {}  # (file, function, line) -> samples, in first-seen order
            get = per_hit.get
            for start in range(0, len(pcs), 4096):  # in batches, for progress on big profiles
                found = _lookup(mmap, [pc - mod.offset for pc in pcs[start:start + 4096]])
                for hit, n in zip(found, counts[start:start + 4096], strict=True):
                    per_hit[hit] = get(hit, 0) + n
                done += len(found)
                if progress:
                    progress(done, todo)
            columns = (*zip(*per_hit, strict=True), per_hit.values()) if per_hit else ((), (), (), ())
        per_module.append((mod.file, columns))
    if len({file for file, _ in per_module}) == len(per_module):  # no module twice: no location to merge
        return list(chain.from_iterable(map(Location, repeat(file), *columns) for file, columns in per_module))
    totals: dict[tuple[str, str, str, int], int] = {}
    for file, columns in per_module:
        for *key, n in zip(repeat(file), *columns, strict=False):  # the same order as summing per address
            key = tuple(key)
            totals[key] = totals.get(key, 0) + n
    if not totals:
        return []
    modules, files, functions, lines = zip(*totals, strict=True)  # key: (module, file, function, line)
    return list(map(Location, modules, files, functions, lines, totals.values()))


def resolve_into(report: ProfileReport, progress: Callable[[int, int], None] | None = None) -> None:
    """Fill report.locations (and name the mapper), unless a processed
    profile came with them."""
    if not report.locations:
        report.locations = resolve(report, progress)
        report.mapper = MAPPER


def resolve_module_pcs(module: ModuleSamples) -> dict[int, tuple[str, str, int]]:
    """file address -> (file, function, line), for tests and tools."""
    mmap = module_map(module.file)
    pcs = list(module.samples)
    return dict(zip(pcs, _lookup(mmap, [pc - module.offset for pc in pcs]), strict=True))


_MAPS: dict[tuple[str, int, int, int], object] = {}
_MAPS_KEPT = 4  # decoded modules kept between calls: a call-path report asks per module, maybe per thread
atexit.register(_MAPS.clear)  # closed before the interpreter tears modules (and the decoder's library) down


def _cached_map(path: str):
    """module_map(path), reused while the file is unchanged (same inode, size and mtime)."""
    st = os.stat(path)
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    mmap = _MAPS.pop(key, None)
    if mmap is None:
        mmap = module_map(path)
        while len(_MAPS) >= _MAPS_KEPT:
            del _MAPS[next(iter(_MAPS))]  # the least recently used
    _MAPS[key] = mmap
    return mmap


def resolve_frames(module_file: str, addrs: list[int], binary: str | None = None) -> list[list[Frame]]:
    """Per file address of `module_file` (read from `binary` when given:
    binaries.bind's choice), the frames at it, innermost first:
    the inlined calls there (inlined=True; each frame's line is where it is,
    the call site for the frames outside the innermost) and last the
    function that contains the address, as `addr2line -f -i` lists them.
    Unknown addresses give one frame named "??".  Callers pass return
    addresses already moved to the call instruction (addr - 1)."""
    from psuite.model.calltree import Frame

    binary = module_file if binary is None else binary
    mmap = _cached_map(binary) if _is_file(binary) else None
    unknown = [Frame(UNKNOWN, module_file)]
    if mmap is None:
        return [list(unknown) for _ in addrs]
    if all(0 <= a < 2**64 for a in addrs):
        return mmap.frames_many(addrs, module_file)
    valid = [i for i, a in enumerate(addrs) if 0 <= a < 2**64]
    out = [list(unknown) for _ in addrs]
    for i, frames in zip(valid, mmap.frames_many([addrs[i] for i in valid], module_file), strict=True):
        out[i] = frames
    return out
