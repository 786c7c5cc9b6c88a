"""GNU gprof's gmon.out (gmon_out.h): the "gmon" header, version 1, and
one time-histogram record over the executable's sampled address range,
at the profile's sampling rate, so that `gprof ./app gmon.out` prints a
flat profile of the executable.  There is no call graph (samples carry
none); bins are 2 bytes wide, as glibc's own profiling makes them; a bin
holds at most 65,535 samples (the format's 16-bit counts)."""

from __future__ import annotations

import array
import os
import struct
import sys

from psuite.cli_common import size_text
from psuite.errors import UsageError
from psuite.report import ModuleSamples, ProfileReport

EXTENSION = ".out"
BIN_BYTES = 2
GMON_TAG_TIME_HIST = 0
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


def encode(report: ProfileReport, module: ModuleSamples) -> bytes:
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
    out = bytearray(b"gmon" + struct.pack("<I", 1) + bytes(12))
    out += bytes([GMON_TAG_TIME_HIST])
    out += struct.pack("<QQii", low, high, len(bins), rate)
    out += dimen.ljust(15, b"\0") + abbrev
    out += bins.tobytes()
    return bytes(out)


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(report: ProfileReport, path: str, module: str | None = None, force: bool = False) -> str:
    """Write gmon.out data for the report's executable; says what was written."""
    from psuite.cli_common import atomic_output

    if not isinstance(report, ProfileReport):
        raise UsageError("--gmon exports one profile (psrun --profile ...); for combined reports use --cube")
    m = executable_module(report, module)
    data = encode(report, m)
    with atomic_output(path, force, binary=True) as f:
        f.write(data)
    return f"gprof {m.file} {path}"
