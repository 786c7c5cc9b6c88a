"""vprof's vmon.out, version 4 (as written by vprof's vmonitor and read by
IBM's bfdprof and Eclipse PTP's VProf view), for the executable's samples
(one profile document's experiment: its Addresses).  Big-endian throughout:

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

import numpy as np

from psuite.errors import UsageError
from psuite.formats.exporters.gmon import addresses, executable_module, sampled
from psuite.model.experiment import Addresses, Experiment

MAGIC = 0x766D6F6E
VERSION = 4
INT32_MAX = 2**31 - 1
READER_HIT_US = 10_000  # what bfdprof and Eclipse PTP take a hit for
# Entries are 6 bytes: 16 million make a 96 MB file (a billion samples at
# one address, or 16 million addresses).
MAX_ENTRIES = 16 * 1024**2
ENTRY = np.dtype([("samples", ">u2"), ("address", ">i4")])  # an entry as the file holds it


def encode(exp: Experiment, m: int) -> bytes:
    a, source, file, addrs, counts = sampled(exp, m, "--vprof")
    base = int(addrs[0])
    if not 0 <= base < 2**63:
        raise UsageError(f"{source}: samples of {file} lie outside vmon.out's 64-bit signed addresses")
    if int(addrs[-1]) - base > INT32_MAX:
        raise UsageError(f"{source}: the samples of {file} span more than 2 GiB of addresses, beyond "
                         "vmon.out's 32-bit offsets; name another module with --module, or use --cube")
    # entries per address, a count above 65,535 several (no count + 65,534 here: it could pass int64)
    chunks = counts // 0xFFFF + (counts % 0xFFFF > 0)
    count = sum(chunks.tolist())  # Python's integers: no int64 sum to overflow
    if count > MAX_ENTRIES:
        raise UsageError(f"{source}: {file} has too many samples for vmon.out ({count:,} entries of at most "
                         f"65,535 samples; the limit is {MAX_ENTRIES:,}); use --cube")
    outside = sum(a.samples[a.module != m].tolist())
    if outside > INT32_MAX:
        raise UsageError(f"{source}: {outside:,} samples outside {file}, beyond vmon.out's 32-bit count; "
                         "use --cube")
    entries = np.zeros(count, dtype=ENTRY)
    entries["address"] = np.repeat((addrs - np.uint64(base)).astype(np.int64), chunks)
    entries["samples"] = 0xFFFF  # full entries, then each address's last one holds what is left
    has = chunks > 0  # an address of 0 samples has no entry
    entries["samples"][(np.cumsum(chunks) - 1)[has]] = (counts - 0xFFFF * (chunks - 1))[has]
    name = b"REAL" if a.event == "ITIMER_REAL" else b"PROF" if a.is_timer else b"EVNT"
    return (struct.pack(">IBi", MAGIC, VERSION, 1) + name + b"\0" +
            struct.pack(">iiiq", outside, 0, count, base) + entries.tobytes())


def reader_note(a: Addresses) -> str | None:
    """What vmon.out's readers will make of the samples, when it is not the
    profile's time: None for CPU-time samples of 10 ms."""
    readers = "vmon.out cannot hold the sampling period, and its readers (bfdprof, Eclipse PTP) take a hit for 10 ms"
    period = a.threshold
    if not a.is_timer:
        every = f"every {period:,} {a.event or 'event'} events" if period else f"of {a.event or 'events'}"
        return f"{readers}, but a hit here is a sample {every}, not time: their seconds are the samples / 100"
    if not period:
        return f"{readers}; the profile does not say its period: check it before reading their seconds"
    if period == READER_HIT_US and a.event != "ITIMER_REAL":
        return None
    factor = READER_HIT_US / period
    if factor > 1:
        off = f"{factor:.3g}x too large (divide them by {factor:.3g})"
    elif factor < 1:
        off = f"{1 / factor:.3g}x too small (multiply them by {1 / factor:.3g})"
    else:
        off = "right"
    kind = "wall-clock time (bfdprof calls it cpu time)" if a.event == "ITIMER_REAL" else "CPU time"
    return f"{readers}; a hit here is {period / 1000:g} ms of {kind}, so their seconds are {off}"


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(exp: Experiment, path: str, module: str | None = None, force: bool = False) -> str:
    from psuite.cli_common import atomic_output

    a = addresses(exp, "--vprof")
    m = executable_module(exp, module)
    data = encode(exp, m)
    with atomic_output(path, force, binary=True) as f:
        f.write(data)
    note = reader_note(a)  # in the one line psprocess prints for the file: the line a user reads
    return f"vmon.out version {VERSION} of {a.modules[m].file}" + (f"; {note}" if note else "")
