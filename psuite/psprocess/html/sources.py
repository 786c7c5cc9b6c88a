"""The view's "sources" section, as vprof showed them: per source file of
a profile, the samples of each line (every rank and thread together) and
the file's text when it can be read here.

A document names its source files, and the page publishes what it
embeds: a file is read only when it lies (its real path, symbolic links
resolved) under a source directory.  Those are the directories the user
names (psprocess --source-dir DIR) and, when every document was read from
a local file, the program's build tree: the directory of the program's
executable (its real path, when it is an ELF file here).  A document read
from a URL gets no build tree: only what --source-dir names is shown.

Files are read only while they stay small enough for a page that opens
fast: at most MAX_FILES files (the hottest first), MAX_LINES lines and
MAX_FILE_BYTES of each, MAX_TOTAL_BYTES in all; a file cut or left
unread says so in its "note"."""

from __future__ import annotations

import os
from collections.abc import Sequence
from operator import attrgetter

import numpy as np

from psuite.cli_common import note_read

UNKNOWN_FILES = ("", "??")
MAX_FILES = 64
MAX_LINES = 20_000
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_TOTAL_BYTES = 8 * 1024 * 1024
_FILE, _LINE, _SAMPLES, _MODULE = attrgetter("file"), attrgetter("line"), attrgetter("samples"), attrgetter("module")


def line_samples(reports: Sequence) -> tuple[dict[str, dict[int, int]], int]:
    """file -> line -> samples over the profiles, and all their samples
    (the total percentages are of, as in the text report's summaries).
    Fields are gathered with map (C speed) and summed with bincount: 64
    ranks of 6,000 locations each are 384,000 of them."""
    keys: list[tuple[str, int]] = []
    counts: list[int] = []
    total = 0
    for r in reports:
        locs = r.locations
        samples = list(map(_SAMPLES, locs))
        total += sum(samples)
        keys += zip(map(_FILE, locs), map(_LINE, locs), strict=True)
        counts += samples
    index: dict[tuple[str, int], int] = {}
    codes = np.fromiter(map(lambda k: index.setdefault(k, len(index)), keys), dtype=np.int64, count=len(keys))
    sums = np.bincount(codes, weights=np.asarray(counts, dtype=np.float64), minlength=len(index)) if keys else []
    per_file: dict[str, dict[int, int]] = {}
    for (file, line), n in zip(index, np.asarray(sums).tolist(), strict=True):
        if line > 0 and n and file not in UNKNOWN_FILES:
            per_file.setdefault(file, {})[line] = int(n)
    return per_file, total


def find(file: str, near: Sequence[str]) -> str | None:
    """Where the file named in a profile is here: the name itself, else
    (relative names) beside one of the `near` directories; None when no
    regular file is found."""
    candidates = [file] if os.path.isabs(file) else [os.path.join(d, file) for d in near] + [file]
    for path in candidates:
        if os.path.isfile(path):
            return os.path.abspath(path)
    return None


class SourceDirs:
    """Where source files may be read from: `dirs` (real paths), and the
    note of a file outside them."""

    def __init__(self, reports: Sequence, source_dirs: Sequence[str] = ()) -> None:
        named = [os.path.realpath(d) for d in source_dirs]
        from_url = any("://" in (r.source or "") for r in reports)
        build = [] if from_url else [d for r in reports for d in _build_dirs(r)]
        self.dirs = list(dict.fromkeys(named + build))
        if from_url and not named:
            self.outside = "not read: the document came from a URL; give --source-dir DIR to show the files under DIR"
        else:
            self.outside = "not read: outside the source directories (the program's directory and any --source-dir)" \
                "; give --source-dir DIR to show the files under DIR"

    def real_path(self, path: str) -> str | None:
        """path with its symbolic links resolved, when that lies under one of
        the directories; else None."""
        real = os.path.realpath(path)
        inside = any(real == d or real.startswith(d.rstrip(os.sep) + os.sep) for d in self.dirs)
        return real if inside else None


def _build_dirs(report) -> list[str]:
    """The program's build tree: the directory of its executable (the
    module named as the command's program), when that is an ELF file here
    and, where the document records the profiled build-id, that build: a
    document cannot make any program's directory a source tree."""
    from psuite.formats.binaries import build_id

    program = os.path.basename(report.command.split()[0]) if report.command.strip() else ""
    if not program:
        return []
    modules = [m.file for m in report.modules] + sorted(set(map(_MODULE, report.locations)))
    callpaths = getattr(report, "callpaths", None)
    if callpaths is not None:
        modules += [m.file for m in callpaths.modules.values()]
    out = []
    for module in dict.fromkeys(modules):
        if os.path.basename(module) != program or not os.path.isabs(module):
            continue
        real = os.path.realpath(module)
        try:
            with open(real, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
        except OSError:
            continue
        if getattr(report, "buildid", "") and build_id(real) != report.buildid:
            continue
        out.append(os.path.dirname(real))
    return out


def read_text(path: str, budget: int) -> tuple[list[str] | None, str]:
    """The file's lines (at most MAX_LINES, MAX_FILE_BYTES, `budget` bytes)
    and a note saying what was cut; None (and why) when it cannot be read
    or is not text."""
    limit = min(MAX_FILE_BYTES, budget)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
        note_read(path)  # an input now: never replaced by an output of the run
    except OSError as exc:
        return None, f"not readable: {exc.strerror or exc}"
    if b"\0" in data[:8192]:
        return None, "not a text file"
    cut = len(data) > limit
    text = data[:limit].decode("utf-8", errors="replace")
    lines = text.split("\n")
    if cut:
        lines = lines[:-1]  # the last line read is incomplete
    elif lines and lines[-1] == "":
        lines.pop()  # the newline ending the file starts no line
    if len(lines) > MAX_LINES:
        lines, cut = lines[:MAX_LINES], True
    lines = [line.rstrip("\r") for line in lines]
    return lines, f"only the first {len(lines):,} lines are shown (the file is longer)" if cut else ""


def _near(reports: Sequence) -> list[str]:
    """The directories of the documents: where relative file names are looked for."""
    return list(dict.fromkeys(os.path.dirname(os.path.abspath(r.source)) for r in reports
                              if r.source and "://" not in r.source))


def build_sources(reports: Sequence, read: bool = True, source_dirs: Sequence[str] = ()) -> list[dict]:
    """The sources section for the profiles `reports` (flat profiles'
    locations: every rank's and thread's); source_dirs: the directories
    the user names (see SourceDirs)."""
    per_file, total = line_samples(reports)
    return _section(per_file, total, _near(reports), read and SourceDirs(reports, source_dirs))


def result_sources(operation: str, inputs: Sequence[Sequence | None], read: bool = True,
                   source_dirs: Sequence[str] = ()) -> list[dict]:
    """The sources section of an algebra result, from its inputs' profiles
    (per input its reports, None for an input without line samples: a
    CUBE file, a counting report).  diff: the minuend's samples less the
    subtrahend's per line, "total" the subtrahend's (percentages are of
    the run compared against); mean: the mean per line and of the totals;
    merge and cut: the last profile's lines (merge keeps the last input's
    values, as CUBE does; cut moves no sample to another line)."""
    tables = [line_samples(r) if r else None for r in inputs]
    profiles = [r for reports in inputs if reports for r in reports]
    near = _near(profiles)
    read = read and SourceDirs(profiles, source_dirs)
    if operation == "diff":
        if tables[0] is None or tables[1] is None:
            return []
        (a, _), (b, total) = tables
        per_file = {}
        for f in a.keys() | b.keys():
            before, after = b.get(f, {}), a.get(f, {})
            change = {n: after.get(n, 0) - before.get(n, 0) for n in after.keys() | before.keys()}
            change = {n: v for n, v in change.items() if v}  # a line unchanged says nothing here
            if change:
                per_file[f] = change
        return _section(per_file, total, near, read)
    if operation == "mean":
        if any(t is None for t in tables):
            return []
        k = len(tables)
        per_file = {}
        for lines, _ in tables:
            for f, counts in lines.items():
                mine = per_file.setdefault(f, {})
                for n, v in counts.items():
                    mine[n] = mine.get(n, 0) + v
        per_file = {f: {n: _whole(v / k) for n, v in lines.items()} for f, lines in per_file.items()}
        return _section(per_file, _whole(sum(t[1] for t in tables) / k), near, read)
    last = [t for t in tables if t is not None]
    return _section(*last[-1], near, read) if last else []


def _whole(v: float) -> int | float:
    return int(v) if float(v).is_integer() else v


def _section(per_file: dict[str, dict[int, int | float]], total: int | float, near: list[str],
             read: SourceDirs | bool) -> list[dict]:
    """One entry per file, the most samples first (by size, for a
    difference), with its text where it can be read (read: where files
    may be read from; False: none is)."""
    order = sorted(per_file, key=lambda f: (-sum(abs(v) for v in per_file[f].values()), f))
    out = []
    budget = MAX_TOTAL_BYTES
    for k, file in enumerate(order):
        path, lines, note = None, [], ""
        if not read:
            note = "source files were not read"
        elif k >= MAX_FILES:
            note = f"not read: only the {MAX_FILES} files with the most samples are"
        elif budget <= 0:
            note = "not read: the page holds enough source text already"
        else:
            where = find(file, near)
            if where is None:
                note = "not found here"
            elif (real := read.real_path(where)) is None:
                note = read.outside
            else:
                text, note = read_text(real, budget)
                if text is not None:
                    path, lines = where, text
                    budget -= sum(len(line) + 1 for line in text)
        samples = per_file[file]
        out.append({"file": file, "path": path, "lines": lines,
                    "samples": {str(n): samples[n] for n in sorted(samples)}, "total": total, "note": note})
    return out
