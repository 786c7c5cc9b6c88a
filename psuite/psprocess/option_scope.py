"""psprocess's options checked against each other before anything is read:
an option that would have no effect in the combination given is refused
with one line naming it and what it goes with, never silently ignored.

The parser leaves the options whose use matters here (-f, --threshold,
--rate) at None when not given; fill_defaults then sets their defaults."""

from __future__ import annotations

import os
from argparse import Namespace
from collections.abc import Sequence

from psuite.errors import UsageError

FORMAT_DEFAULT = "text"
THRESHOLD_DEFAULT = 0.0
RATE_DEFAULT = 100.0
EXPORT_FLAGS = ("gmon", "vprof", "cube", "folded", "speedscope", "pprof", "html")


def _format_flag(args: Namespace) -> str:
    return f"-f {args.format}"


def _report_options(args: Namespace) -> list[str]:
    """The options given that shape the report psprocess prints (or writes
    to -o), in the order of --help."""
    given = [(_format_flag(args), args.format is not None), ("--threshold", args.threshold is not None),
             ("--calltree", bool(args.calltree)), ("--depth", args.depth is not None),
             ("--per-thread", args.per_thread)]
    return [flag for flag, on in given if on]


def check(args: Namespace) -> None:
    """UsageError for the first option that has no effect with the others."""
    exports = [f"--{name}" for name in EXPORT_FLAGS if getattr(args, name)]
    if args.calibrate:
        _check_calibrate(args, exports)
        return
    if args.rate is not None:
        raise UsageError("--rate goes with --calibrate (the sample rate to propose thresholds for)")
    if args.write_config:
        raise UsageError("--write-config goes with --calibrate")
    if args.module and not (args.gmon or args.vprof):
        raise UsageError("--module goes with --gmon or --vprof")
    if (args.depth is not None or args.per_thread) and not args.calltree:
        raise UsageError(f"{'--depth' if args.depth is not None else '--per-thread'} goes with --calltree")
    if args.depth is not None and args.calltree == "callers":
        raise UsageError("--depth goes with --calltree top-down or bottom-up, not callers (a call graph has no depth)")
    if exports and not args.output:
        shaped = _report_options(args)
        if shaped:  # the export replaces the printed report (see --help): these would change nothing
            raise UsageError(f"{shaped[0]} shapes the printed report, and with {exports[0]} no report is printed; "
                             "add -o FILE to write the report too, or leave it out")
    fmt = args.format or FORMAT_DEFAULT
    if args.calltree and fmt != "text":
        raise UsageError(f"--calltree goes with the text report, not {_format_flag(args)}"
                         + (" (which has the call trees without it)" if fmt in ("json", "csv") else ""))
    if args.threshold is not None:
        if fmt != "text":
            raise UsageError(f"--threshold goes with the text report, not {_format_flag(args)}")
        if args.combine and not args.calltree:
            raise UsageError("--threshold goes with -c only together with --calltree (the combined report lists "
                             "every function)")


def _check_calibrate(args: Namespace, exports: list[str]) -> None:
    """--calibrate prints (or writes to -o) a table of thresholds for one
    counting report: report options and exports do nothing there."""
    given = [("-c", args.combine), ("-m", bool(args.metrics)), ("--no-standard-metrics", args.no_standard_metrics),
             *[(flag, True) for flag in exports], ("--module", bool(args.module)),
             ("--binaries", bool(getattr(args, "binaries", None)))]
    given += [(flag, True) for flag in _report_options(args) if flag != "-f text"]
    for flag, on in given:
        if on:
            raise UsageError(f"{flag} goes with a report, not with --calibrate (which proposes sampling thresholds "
                             "from one counting report); leave it out")


def fill_defaults(args: Namespace) -> None:
    """The defaults of the options that check needs to see as not given."""
    if args.format is None:
        args.format = FORMAT_DEFAULT
    if args.threshold is None:
        args.threshold = THRESHOLD_DEFAULT
    if args.rate is None:
        args.rate = RATE_DEFAULT


def check_source_dirs(dirs: Sequence[str], html: bool) -> None:
    """--source-dir: directories, and only where a page shows sources."""
    if dirs and not html:
        raise UsageError("--source-dir goes with --html or -f html (the page's source view)")
    for d in dirs:
        if not os.path.isdir(d):
            raise UsageError(f"--source-dir {d}: no such directory; give the directory of the program's sources")
