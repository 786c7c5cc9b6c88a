"""vprof's vmon.out, version 4 (as written by vprof's vmonitor and read by
IBM's bfdprof and Eclipse PTP's VProf view), for the executable's samples.
Big-endian throughout:

    int32   magic 0x766d6f6e ("vmon")
    int8    version 4
    int32   number of data sets (1)
    char[]  event name, NUL-terminated: "PROF" (CPU time), "REAL" (wall
            time) or "EVNT" (event overflow) - four letters, as bfdprof reads
    int32   samples out of range (in other modules), int32 overflows
    int32   number of entries
    int64   base address (the lowest sampled address of the executable)
    entries: uint16 samples, int32 address relative to the base

A count above 65,535 is written as several entries for one address (the
readers add them up).  What the format cannot hold (samples spread over
more than 2 GiB, more than 2^31 samples elsewhere, more than MAX_ENTRIES
entries) is refused with one line.

The format has no field for the sampling period: a hit is a tick of
vprof's profil() clock, and its readers take it as 10 ms (bfdprof prints
"a cpu time of about hits/100 seconds"; its other tables count hits).  The
samples are written as they are, one hit each, and psprocess says in one
line what the readers will assume and by what factor their seconds are off
when a sample is not 10 ms of CPU time (in the line that names the file
written).  Scaling the samples to 10 ms hits
instead would round every address's count to a multiple of 10 samples:
on an interpreter's profile at 1 ms (samples spread over hundreds of
addresses) three quarters of the executable's samples would vanish."""

from __future__ import annotations

import struct

from psuite.errors import UsageError
from psuite.formats.exporters.gmon import executable_module
from psuite.model.report import ModuleSamples, ProfileReport

MAGIC = 0x766D6F6E
VERSION = 4
INT32_MAX = 2**31 - 1
READER_HIT_US = 10_000  # what bfdprof and Eclipse PTP take a hit for
# Entries are 6 bytes: 16 million make a 96 MB file (a billion samples at
# one address, or 16 million addresses).
MAX_ENTRIES = 16 * 1024**2


def encode(report: ProfileReport, m: ModuleSamples) -> bytes:
    addrs = sorted((pc - m.offset, n) for pc, n in m.samples.items())
    if not addrs:
        raise UsageError(f"{report.source}: no samples in {m.file}")
    base = addrs[0][0]
    if not 0 <= base < 2**63:
        raise UsageError(f"{report.source}: samples of {m.file} lie outside vmon.out's 64-bit signed addresses")
    if addrs[-1][0] - base > INT32_MAX:
        raise UsageError(f"{report.source}: the samples of {m.file} span more than 2 GiB of addresses, beyond "
                         "vmon.out's 32-bit offsets; name another module with --module, or use --cube")
    count = sum((n + 0xFFFE) // 0xFFFF for _, n in addrs)
    if count > MAX_ENTRIES:
        raise UsageError(f"{report.source}: {m.file} has too many samples for vmon.out ({count:,} entries of at most "
                         f"65,535 samples; the limit is {MAX_ENTRIES:,}); use --cube")
    outside = sum(sum(o.samples.values()) for o in report.modules if o is not m)
    if outside > INT32_MAX:
        raise UsageError(f"{report.source}: {outside:,} samples outside {m.file}, beyond vmon.out's 32-bit count; "
                         "use --cube")
    entries = []
    for addr, n in addrs:
        while n > 0:
            chunk = min(n, 0xFFFF)
            entries.append(struct.pack(">Hi", chunk, addr - base))
            n -= chunk
    name = b"REAL" if report.event == "ITIMER_REAL" else b"PROF" if report.is_timer else b"EVNT"
    return (struct.pack(">IBi", MAGIC, VERSION, 1) + name + b"\0" +
            struct.pack(">iiiq", outside, 0, len(entries), base) + b"".join(entries))


def reader_note(report: ProfileReport) -> str | None:
    """What vmon.out's readers will make of the samples, when it is not the
    profile's time: None for CPU-time samples of 10 ms."""
    readers = "vmon.out cannot hold the sampling period, and its readers (bfdprof, Eclipse PTP) take a hit for 10 ms"
    period = report.threshold
    if not report.is_timer:
        every = f"every {period:,} {report.event or 'event'} events" if period else f"of {report.event or 'events'}"
        return f"{readers}, but a hit here is a sample {every}, not time: their seconds are the samples / 100"
    if not period:
        return f"{readers}; the profile does not say its period: check it before reading their seconds"
    if period == READER_HIT_US and report.event != "ITIMER_REAL":
        return None
    factor = READER_HIT_US / period
    if factor > 1:
        off = f"{factor:.3g}x too large (divide them by {factor:.3g})"
    elif factor < 1:
        off = f"{1 / factor:.3g}x too small (multiply them by {1 / factor:.3g})"
    else:
        off = "right"
    kind = "wall-clock time (bfdprof calls it cpu time)" if report.event == "ITIMER_REAL" else "CPU time"
    return f"{readers}; a hit here is {period / 1000:g} ms of {kind}, so their seconds are {off}"


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(report: ProfileReport, path: str, module: str | None = None, force: bool = False) -> str:
    from psuite.cli_common import atomic_output

    if not isinstance(report, ProfileReport):
        raise UsageError("--vprof exports one profile (psrun --profile ...); for combined reports use --cube")
    m = executable_module(report, module)
    data = encode(report, m)
    with atomic_output(path, force, binary=True) as f:
        f.write(data)
    note = reader_note(report)  # in the one line psprocess prints for the file: the line a user reads
    return f"vmon.out version {VERSION} of {m.file}" + (f"; {note}" if note else "")
