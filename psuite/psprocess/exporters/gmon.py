"""GNU gprof's gmon.out (gmon_out.h): the "gmon" header, version 1, and
one time-histogram record over the executable's sampled address range,
at the profile's sampling rate, so that `gprof ./app gmon.out` prints a
flat profile of the executable.  There is no call graph (samples carry
none); bins are 2 bytes wide, as glibc's own profiling makes them; a bin
holds at most 65,535 samples (the format's 16-bit counts)."""

from __future__ import annotations

import os
import struct

from psuite.errors import UsageError
from psuite.report import ModuleSamples, ProfileReport

EXTENSION = ".out"
BIN_BYTES = 2
GMON_TAG_TIME_HIST = 0


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
    bins = [0] * ((high - low) // BIN_BYTES)
    for addr, n in addrs.items():
        i = (addr - low) // BIN_BYTES
        bins[i] = min(65535, bins[i] + n)
    if report.is_timer and report.threshold:
        rate, dimen, abbrev = round(1e6 / report.threshold), b"seconds", b"s"
    else:  # event overflow: one "second" per sample, so gprof's columns read as samples
        rate, dimen, abbrev = 1, b"samples", b"#"
    out = bytearray(b"gmon" + struct.pack("<I", 1) + bytes(12))
    out += bytes([GMON_TAG_TIME_HIST])
    out += struct.pack("<QQii", low, high, len(bins), rate)
    out += dimen.ljust(15, b"\0") + abbrev
    out += struct.pack(f"<{len(bins)}H", *bins)
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
