"""The long lists of profiles read and written by the C decoder library
(csrc/decoder/report_format.c): the sampled PCs of a raw profile's
<samples>, the ranked summaries of the text report and the locations and
sampled PCs of the JSON one, exactly as the Python reader and writers do
it, without a Python call per row.

Each function returns None when it leaves the work to the writer's Python
code: no C library, values of another type than the C code writes (a
float count, a number beyond 64 bits, a string that is not UTF-8), or a
negative count."""

from __future__ import annotations

from array import array

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

_LIMIT = 2**63  # counts, lines and totals are long long in C

_loaded: list = []


def _library():
    """(ffi, lib, alloc) of the C decoder once loaded, or None."""
    if not _loaded:
        try:
            from psuite.libperfsuite.native import load_decoder

            ffi, lib = load_decoder()
            lib.ps_report_summary  # noqa: B018 - a library built before these calls lacks them
            # output buffers are written before they are read: no need to clear them
            _loaded.append((ffi, lib, ffi.new_allocator(should_clear_after_alloc=False)))
        except Exception:  # noqa: BLE001 - NativeLibraryError, OSError, AttributeError: the Python code then
            _loaded.append(None)
    return _loaded[0]


def _ints(values: Sequence) -> bool:
    """Whether every value is a plain int (not bool, not float); the C
    array's conversion raises OverflowError for one beyond 64 bits."""
    return set(map(type, values)) <= {int}


def _array(ffi, code: str, values: Sequence):
    """values as a C array of long long (code "q") or unsigned long long
    ("Q"), or None when one does not fit.  Built by array.array, twice as
    fast as cffi's conversion of a list."""
    try:
        values = array(code, values)
    except (OverflowError, TypeError):
        return None
    return ffi.from_buffer("long long[]" if code == "q" else "unsigned long long[]", values)


def _blob(strings: Sequence[str]) -> bytes | None:
    try:
        return "\0".join(strings).encode()
    except (TypeError, UnicodeEncodeError):
        return None


class Summaries:
    """ps_report_summary over one report's locations: the same columns
    for its four summaries, converted to C once."""

    def __init__(self, counts: list, total: int) -> None:
        self.ok = False
        lib = _library()
        if lib is None or type(total) is not int or not 0 < total < _LIMIT or not _ints(counts):
            return
        self._ffi, self._lib, self._alloc = lib
        self.n = len(counts)
        self.total = total
        self._counts = _array(self._ffi, "q", counts)
        if self._counts is None:
            return
        self._buf, self._cap = None, 0
        self._blobs: dict[int, tuple[Sequence[str], bytes | None]] = {}  # id -> (column, its blob): each once
        self.ok = True

    def _blob(self, column: Sequence[str]) -> bytes | None:
        kept = self._blobs.get(id(column))
        if kept is None or kept[0] is not column:
            kept = self._blobs[id(column)] = (column, _blob(column))
        return kept[1]

    def summary(
        self, a: Sequence[str], b: Sequence[str] | None, lines: Sequence[int] | None, shape: int, threshold: float
    ) -> tuple[str, int] | None:
        """(the shown rows, each ending with a newline; the number of
        names hidden below the threshold) of one summary, or None."""
        ffi = self._ffi
        blob_a = self._blob(a)
        blob_b = self._blob(b) if b is not None else b""
        if blob_a is None or blob_b is None:
            return None
        c_lines = ffi.NULL
        if shape == 2:
            c_lines = _array(ffi, "q", lines) if _ints(lines) else None
            if c_lines is None:
                return None
        hidden = ffi.new("long *")
        need = 80 * self.n + len(blob_a) + len(blob_b) + 1  # each row at most 70 bytes beside its strings
        while True:
            if need > self._cap:
                self._buf, self._cap = self._alloc("char[]", need), need
            total = self._lib.ps_report_summary(
                self.n,
                blob_a,
                len(blob_a),
                blob_b,
                len(blob_b),
                c_lines,
                self._counts,
                shape,
                self.total,
                threshold,
                self._buf,
                self._cap,
                hidden,
            )
            if total < 0:
                return None
            if total <= self._cap:
                return ffi.unpack(self._buf, total).decode(), hidden[0]
            need = total


def json_locations(
    modules: Sequence[str], files: Sequence[str], functions: Sequence[str], lines: Sequence[int], samples: Sequence[int]
) -> str | None:
    """The JSON list of locations from their columns, as json.dumps writes
    it, or None.  lines and samples: plain ints (the caller checks their
    types)."""
    lib = _library()
    if lib is None:
        return None
    ffi, c, alloc = lib
    blobs = [_blob(modules), _blob(files), _blob(functions)]
    if None in blobs:
        return None
    n = len(samples)
    cap = 120 * n + 6 * sum(map(len, blobs)) + 2  # an escaped byte is at most 6 ("\\u00XX")
    c_lines, c_samples = _array(ffi, "q", lines), _array(ffi, "q", samples)
    if c_lines is None or c_samples is None:
        return None
    while True:
        buf = alloc("char[]", cap)
        total = c.ps_report_json_locations(
            n, blobs[0], len(blobs[0]), blobs[1], len(blobs[1]), blobs[2], len(blobs[2]), c_lines, c_samples, buf, cap
        )
        if total < 0:
            return None
        if total <= cap:
            return ffi.unpack(buf, total).decode()
        cap = total


def json_samples(samples: dict) -> str | None:
    """'"pc": count, ...' for a {pc: count} of plain ints (the caller checks
    their types), or None (a PC beyond 64 bits or negative, a count beyond 63)."""
    lib = _library()
    if lib is None:
        return None
    pcs, counts = list(samples), list(samples.values())
    ffi, c, alloc = lib
    n = len(pcs)
    cap = 50 * n + 1
    c_pcs, c_counts = _array(ffi, "Q", pcs), _array(ffi, "q", counts)
    if c_pcs is None or c_counts is None:
        return None
    while True:
        buf = alloc("char[]", cap)
        total = c.ps_report_json_samples(n, c_pcs, c_counts, buf, cap)
        if total < 0:
            return None
        if total <= cap:
            return ffi.unpack(buf, total).decode()
        cap = total


def samples(pcs: list[str], counts: list[str]) -> tuple[list[int], list[int], bool] | None:
    """The PCs (hexadecimal) and counts (decimal) of a run of <sample>s as
    ints, and whether the PCs are strictly increasing; None for anything
    but 1 to 16 hexadecimal and 1 to 18 decimal ASCII digits (the reader's
    Python checks then take them)."""
    lib = _library()
    if lib is None:
        return None
    ffi, c, _ = lib
    try:
        pc_blob, count_blob = "\0".join(pcs).encode("ascii"), "\0".join(counts).encode("ascii")
    except (TypeError, UnicodeEncodeError):
        return None
    n = len(pcs)
    out_pcs, out_counts = array("Q", bytes(8 * n)), array("q", bytes(8 * n))
    rc = c.ps_report_samples(
        n,
        pc_blob,
        len(pc_blob),
        count_blob,
        len(count_blob),
        ffi.from_buffer("unsigned long long[]", out_pcs, require_writable=True),
        ffi.from_buffer("long long[]", out_counts, require_writable=True),
    )
    if rc < 0 or len(counts) != n:
        return None
    return out_pcs.tolist(), out_counts.tolist(), rc == 1
