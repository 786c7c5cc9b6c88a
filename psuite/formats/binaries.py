"""Which file resolves a profiled module: the very binary that was profiled.

psrun records the executable's GNU build-id (NT_GNU_BUILD_ID) in a
profile's <annotation>, and each sampled shared module's after it (the
call-path companion's <module buildid>).  Before a PC is resolved, the
module's file is checked against its own: a program or library rebuilt at
the same path after the run, or deleted, must not give the new binary's
functions (or a silent "??") to the old samples.  The profiled binary, or its separate debug file, is
looked for as perf's --symfs and gdb's debug-file-directory look:

  1. the recorded path, when its build-id is the recorded one;
  2. in each directory of the search path (psprocess --binaries DIR, then
     PSUITE_BINARY_PATH, colon-separated) and last in /usr/lib/debug:
     DIR/.build-id/xx/yyyy.debug (gdb's and debuginfod's layout), then
     DIR/<basename> with the recorded build-id.

When none is found, the module's samples are marked, not resolved: their
function is "[app: build-id mismatch]" (a regular file of that name is
there, another build) or "[app: binary not found]" (nothing is, or no
regular file: a directory is no build of it), in every report and export,
and one warning line per module says how to give the right file.  A
module the document records no build-id for (the original PerfSuite's
documents, objects built without one) is resolved from its recorded path as
before, or, when that file is gone, from DIR/<basename> of the search
path.

A module recorded by a relative name (psrun before it recorded absolute
paths: dlopen("./plugin.so")) means nothing where psprocess runs: it is
looked for by its basename in the search path only.

The vdso (linux-vdso.so.1) is no file: the kernel maps its image into every
process.  Its samples are resolved from the image mapped into psprocess
itself when its build-id is the recorded one (the profile was taken on
this kernel); another kernel's are marked "[linux-vdso.so.1: vdso of
another kernel]", never named from this one's.

Only the notes are read (the ELF and program headers, then the note
segments), with the standard library: no ELF reader is imported for it."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

ENV = "PSUITE_BINARY_PATH"
DEBUG_ROOT = "/usr/lib/debug"
MISMATCH = "build-id mismatch"
NOT_FOUND = "binary not found"
OTHER_KERNEL = "vdso of another kernel"
VDSO_NAMES = frozenset({"linux-vdso.so.1", "linux-gate.so.1", "linux-vdso32.so.1", "linux-vdso64.so.1"})
HOW = "give the profiled binary or its debug file with psprocess --binaries DIR or PSUITE_BINARY_PATH=DIR"

PT_NOTE, SHT_NOTE, NT_GNU_BUILD_ID = 4, 7, 3
NOTES_MAX = 1 << 20  # bytes of one note segment read at most: build-id notes are tens of bytes

_given: list[str] = []  # psprocess --binaries, in order
_warn: Callable[[str], None] | None = None
_warned: set[tuple[str, str]] = set()  # (module, build-id): one line per module, however many reports
_ids: dict[tuple[str, int, int, int], str] = {}  # file key -> its build-id ("" without one)


@dataclass(frozen=True)
class Binding:
    """How a module's samples are resolved: from `file` (None: none to
    read), or marked with `problem` (MISMATCH, NOT_FOUND) and not resolved."""

    module: str
    file: str | None
    problem: str = ""

    @property
    def marker(self) -> str:
        """The function name the module's samples get when not resolved."""
        return f"[{os.path.basename(self.module)}: {self.problem}]"


def configure(dirs: Iterable[str] = (), warn: Callable[[str], None] | None = None) -> None:
    """The directories psprocess --binaries named (each DIR[:DIR...]) and
    where warnings go (default: warnings.warn, for the Python API), for a
    new run: its modules are warned about anew (a failed run before it, in
    the same process, said none of its warnings)."""
    global _warn
    _given[:] = [d for entry in dirs for d in entry.split(":") if d]
    _warn = warn
    _warned.clear()


def search_path() -> list[str]:
    """The user's directories: --binaries first, then PSUITE_BINARY_PATH."""
    return _given + [d for d in os.environ.get(ENV, "").split(":") if d]


def build_id(path: str) -> str:
    """The GNU build-id of an ELF file in hex; "" when it has none or is
    no readable ELF file."""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    found = _ids.get(key)
    if found is None:
        try:
            with open(path, "rb") as f:
                found = _read_build_id(f)
        except (OSError, struct.error, ValueError):
            found = ""
        _ids[key] = found
    return found


def _read_build_id(f) -> str:
    head = f.read(64)
    if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
        return ""
    wide, end = head[4] == 2, "<" if head[5] == 1 else ">"
    if wide:
        phoff, shoff = struct.unpack_from(end + "QQ", head, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", head, 54)
    else:
        phoff, shoff = struct.unpack_from(end + "II", head, 28)
        phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", head, 42)
    spans = []  # (offset, size, align) of the notes: the loader's view first, then the sections (debug files)
    for offset, size, count, type_wanted, fields in (
            (phoff, phentsize, phnum, PT_NOTE, "IIQQQQQQ" if wide else "IIIIIIII"),
            (shoff, shentsize, shnum, SHT_NOTE, "IIQQQQIIQQ" if wide else "IIIIIIIIII")):
        if not offset or not count or size < struct.calcsize(end + fields):
            continue
        f.seek(offset)
        table = f.read(size * count)
        for i in range(len(table) // size):
            e = struct.unpack_from(end + fields, table, i * size)
            if type_wanted == PT_NOTE and e[0] == PT_NOTE:
                spans.append((e[2], e[5], e[7]) if wide else (e[1], e[4], e[7]))
            elif type_wanted == SHT_NOTE and e[1] == SHT_NOTE:
                spans.append((e[4], e[5], e[8]))
        for note_offset, note_size, align in spans:
            found = _note(f, end, note_offset, min(note_size, NOTES_MAX), 8 if align == 8 else 4)
            if found:
                return found
        spans.clear()
    return ""


def _note(f, end: str, offset: int, size: int, align: int) -> str:
    f.seek(offset)
    data = f.read(size)
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from(end + "III", data, at)
        name_at = at + 12
        desc_at = name_at + (namesz + align - 1) // align * align
        if desc_at + descsz > len(data):
            break
        if kind == NT_GNU_BUILD_ID and data[name_at:name_at + namesz] == b"GNU\0" and descsz:
            return data[desc_at:desc_at + descsz].hex()
        at = desc_at + (descsz + align - 1) // align * align
    return ""


def program_module(files: Iterable[str], command: str, wanted: str) -> str | None:
    """Which of a profile's module files is its executable, the one the
    recorded build-id is of: the file that has that build-id, else the one
    named as the command's first word, else the only rooted module that is
    no shared object."""
    rooted = [f for f in dict.fromkeys(files) if f.startswith("/")]
    program = os.path.basename(command.split()[0]) if command.split() else ""
    named = [f for f in rooted if program and os.path.basename(f) == program]
    for f in named + rooted:
        if build_id(f) == wanted:
            return f
    if named:
        return named[0]
    others = [f for f in rooted if ".so" not in os.path.basename(f)
              and not os.path.basename(f).startswith(("lib", "ld-"))]
    return others[0] if len(others) == 1 else None


def _candidates(module: str, wanted: str) -> Iterable[str]:
    """Where the binary of build-id `wanted` may be, in the order looked."""
    dirs = search_path()
    for d in [*dirs, DEBUG_ROOT]:
        yield os.path.join(d, ".build-id", wanted[:2], wanted[2:] + ".debug")
    for d in dirs:
        yield os.path.join(d, os.path.basename(module))


def is_vdso(module: str) -> bool:
    """Whether a module is the kernel's vdso, as the loader names it."""
    return module in VDSO_NAMES


_vdso: list[str | None] = []  # this process's vdso image written to a private file, once


def vdso_image() -> str | None:
    """A file holding the vdso the kernel mapped into this process (its
    [vdso] mapping in /proc/self/maps), None when there is none."""
    if not _vdso:
        _vdso.append(_write_vdso())
    return _vdso[0]


def _write_vdso() -> str | None:
    import atexit
    import ctypes
    import shutil
    import tempfile

    try:
        with open("/proc/self/maps") as f:
            span = next((line.split()[0] for line in f if line.rstrip().endswith(" [vdso]")), None)
        if span is None:
            return None
        lo, hi = (int(x, 16) for x in span.split("-"))
        image = ctypes.string_at(lo, hi - lo)
        folder = tempfile.mkdtemp(prefix="psuite-vdso-")
        atexit.register(shutil.rmtree, folder, True)
        path = os.path.join(folder, "vdso.so")
        with open(path, "wb") as f:
            f.write(image)
        return path
    except (OSError, ValueError):
        return None


def _bind_vdso(module: str, wanted: str) -> Binding:
    if not wanted:  # no identity recorded (older documents): this kernel's image may not be the profiled one
        return Binding(module, module)  # no file of that name: "??" as before
    image = vdso_image()
    if image and build_id(image) == wanted:
        return Binding(module, image)
    hit = next((c for c in _candidates(module, wanted) if build_id(c) == wanted), None)
    return Binding(module, hit) if hit else Binding(module, None, OTHER_KERNEL)


def bind(module: str, wanted: str) -> Binding:
    """How to resolve `module`, the profiled binary of build-id `wanted`
    ("" when the document records none)."""
    if is_vdso(module):
        return _bind_vdso(module, wanted)
    if not wanted:
        if not module.startswith("/") or not os.path.isfile(module):
            moved = next((c for c in _by_name(module) if os.path.isfile(c)), None)
            return Binding(module, moved or module)
        return Binding(module, module)
    if build_id(module) == wanted:
        return Binding(module, module)
    hit = next((c for c in _candidates(module, wanted) if build_id(c) == wanted), None)
    if hit:
        return Binding(module, hit)
    return Binding(module, None, MISMATCH if os.path.isfile(module) else NOT_FOUND)


def _by_name(module: str) -> list[str]:
    return [os.path.join(d, os.path.basename(module)) for d in search_path()]


def bindings(report) -> dict[str, Binding]:
    """Per module file of a profile (its flat samples and its call-path
    companion's modules), how to resolve it; a warning line for each module
    that cannot be, once per module and build-id."""
    modules = list(report.modules)
    cp = getattr(report, "callpaths", None)
    if cp is not None:
        modules += cp.modules.values()
    files = [m.file for m in modules]
    recorded: dict[str, str] = {}  # each rooted module's own recorded build-id
    for m in modules:
        if (m.file.startswith("/") or is_vdso(m.file)) and getattr(m, "buildid", ""):
            recorded.setdefault(m.file, m.buildid)
    program = program_module(files, report.command, report.buildid) if report.buildid else None
    out = {}
    for f in dict.fromkeys(files):
        wanted = report.buildid if f == program else recorded.get(f, "")
        b = out[f] = bind(f, wanted)
        if b.problem and (f, wanted) not in _warned:
            _warned.add((f, wanted))
            _say(_problem_line(b, wanted))
    return out


def _problem_line(b: Binding, wanted: str) -> str:
    if b.problem == OTHER_KERNEL:
        return (f"{b.module} of the profile (build-id {wanted}) is not this kernel's vdso: its samples are shown "
                f"as {b.marker}; run psprocess on the profiled kernel, or give that kernel's vdso image "
                "(perf's build-id cache keeps one) with psprocess --binaries DIR as DIR/.build-id/xx/rest.debug")
    what = "is another build than the profiled one" if b.problem == MISMATCH else "is not there"
    return f"{b.module} {what} (build-id {wanted}): its samples are shown as {b.marker}; {HOW}"


def _say(message: str) -> None:
    if _warn is not None:
        _warn(message)
        return
    import warnings

    warnings.warn(message, stacklevel=4)


def file_for_debug(name: str) -> list[str]:
    """Where a separate debug file named by .gnu_debuglink may be in the
    search path's directories (srcmap looks beside the binary and under
    /usr/lib/debug itself)."""
    return [os.path.join(d, name) for d in search_path()]


def debug_by_id(wanted: str) -> str | None:
    """A separate debug file of build-id `wanted`: in the search path's
    directories, then /usr/lib/debug (gdb's .build-id layout)."""
    for d in [*search_path(), DEBUG_ROOT]:
        candidate = os.path.join(d, ".build-id", wanted[:2], wanted[2:] + ".debug")
        if os.path.exists(candidate):
            return candidate
    return None

