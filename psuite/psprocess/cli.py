"""psprocess: turn psrun's raw XML into reports."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from psuite.cli_common import open_output, run_cli
from psuite.cli_parser import ArgumentParser
from psuite.errors import UsageError
from psuite.psprocess.writers import FORMATS

DESCRIPTION = """\
Read PerfSuite XML documents (files or http(s) URLs) written by psrun or by
the original PerfSuite, and print a report: execution and machine
information, the event counts, and derived metrics (instructions per cycle,
MFLOPS, cache line reuse, CPU utilization, page faults per second ...).
A metric is shown only when every event it needs was measured."""

EPILOG = """\
metrics: the standard set is configs/metrics.xml (psmetrics format);
-m FILE adds your own definitions in the same format, e.g.

  <psmetrics class="PAPI"><metric namespace="mine">
    <name>Cycles per instruction</name><description>CPI</description>
    <definition><apply><divide><ci>PAPI_TOT_CYC</ci><ci>PAPI_TOT_INS</ci>
    </divide></apply></definition></metric></psmetrics>

examples:
  psprocess app.1234.host.xml
  psprocess --format json app.*.xml > counts.json
  psprocess -m mymetrics.xml https://example.org/run.xml

exit status: 0 on success, 2 on bad input (unreadable or malformed
documents, bad metric files, unwritable output)."""


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="psprocess", description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("inputs", nargs="+", metavar="FILE|URL", help="PerfSuite XML documents")
    p.add_argument("-f", "--format", choices=tuple(FORMATS), default="text", help="output format (default text)")
    p.add_argument("-x", dest="format", action="store_const", const="xml",
                   help="XML: a profile as a processed <hwpcprofilereport> (same as -f xml)")
    p.add_argument("-m", "--metrics", action="append", default=[], metavar="FILE",
                   help="add the derived metrics defined in FILE (psmetrics XML); repeatable")
    p.add_argument("--no-standard-metrics", action="store_true", help="only the metrics given with -m")
    p.add_argument("--threshold", type=float, default=0.0, metavar="PCT",
                   help="profiles: leave out entries below PCT percent of the samples")
    p.add_argument("--gmon", metavar="FILE", help="profiles: also write FILE in GNU gprof's gmon.out format "
                   "(the executable's samples; gprof ./app FILE)")
    p.add_argument("--vprof", metavar="FILE", help="profiles: also write FILE in vprof's vmon.out format "
                   "(version 4; the executable's samples)")
    p.add_argument("--cube", metavar="FILE.cubex", help="also write a CUBE 4 file (profiles or counting reports; "
                   "with -c, every rank and thread in one cube) and its statistics file FILE.stat")
    p.add_argument("--module", metavar="PATH", help="with --gmon/--vprof: the module to export (default: the "
                   "program)")
    p.add_argument("-c", "--combine", action="store_true",
                   help="combine the counting reports (files, directories, globs) with statistics across them")
    p.add_argument("--calibrate", action="store_true",
                   help="from a counting report: propose sampling thresholds for --rate samples per second")
    p.add_argument("--rate", type=float, default=100.0, metavar="HZ",
                   help="with --calibrate: wanted samples per second of CPU time (default 100)")
    p.add_argument("--write-config", metavar="FILE",
                   help="with --calibrate: write the best proposal as a <ps_hwpc_profile> configuration")
    p.add_output_options()
    return p



def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from psuite.psprocess.inputs import load
    from psuite.psprocess.writers import writer
    from psuite.report import CountReport, ProfileReport

    definitions: list | None = None  # loaded with the first counting report (profiles need none)

    def derive(report: CountReport) -> None:
        nonlocal definitions
        from psuite.psprocess import metrics

        if definitions is None:
            definitions = [] if args.no_standard_metrics else metrics.load(metrics.standard_metrics_path())
            for path in args.metrics:
                definitions += metrics.load(path)
        report.metrics = metrics.derive(report, definitions)

    if args.calibrate:
        return _calibrate(args, load, CountReport)
    if args.write_config:
        raise UsageError("--write-config goes with --calibrate")
    if args.combine:
        from psuite.psprocess import combine

        sources = combine.expand(args.inputs)
        multi = combine.combine(sources, load, derive, _resolve, _progress("reading", len(sources)))
        if args.cube:
            _write_cube(multi, args)
            if not args.output:
                return 0
        _emit(args, writer(args.format).render([multi], threshold=args.threshold))
        return 0
    exports = [(flag, path) for flag, path in (("gmon", args.gmon), ("vprof", args.vprof)) if path]
    if exports and len(args.inputs) != 1:
        raise UsageError(f"--{exports[0][0]} exports one profile; give one input")
    if args.module and not exports:
        raise UsageError("--module goes with --gmon or --vprof")
    reports = []
    for source in args.inputs:
        report = load(source)
        if isinstance(report, ProfileReport):
            _resolve(report)
        elif isinstance(report, CountReport):
            derive(report)
        reports.append(report)
    if args.cube:
        _write_cube(reports[0] if len(reports) == 1 else None, args)
        if not args.output and not exports:
            return 0
    if exports:
        import importlib

        for flag, path in exports:
            module = importlib.import_module(f"psuite.psprocess.exporters.{flag}").write(
                reports[0], path, args.module, args.force)
            print(f"psprocess: wrote {path} ({flag}, {module})", file=sys.stderr)
        if not args.output:
            return 0
    _emit(args, writer(args.format).render(reports, threshold=args.threshold))
    return 0


def _write_cube(obj, args) -> None:
    if obj is None:
        raise UsageError("--cube takes one report, or many combined with -c")
    from psuite.psprocess.exporters import cube

    stat = cube.write(obj, args.cube, args.force)
    print(f"psprocess: wrote {args.cube} and {stat}", file=sys.stderr)


def _progress(what: str, todo: int):
    """A progress line on stderr when it is a terminal and the work is long."""
    if not sys.stderr.isatty() or todo < 64:
        return None

    def show(done: int, total: int) -> None:
        sys.stderr.write(f"\rpsprocess: {what} {done:,}/{total:,}" + ("\r\033[K" if done == total else ""))
        sys.stderr.flush()

    return show


def _emit(args, text: str) -> None:
    """The report to -o FILE (never replacing one without --force) or stdout."""
    if args.output:
        with open_output(args.output, args.force) as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def _calibrate(args, load, count_report) -> int:
    from psuite.psprocess import calibrate

    if len(args.inputs) != 1:
        raise UsageError("--calibrate takes one counting report")
    report = load(args.inputs[0])
    if not isinstance(report, count_report):
        raise UsageError(f"{args.inputs[0]} is not a counting report; calibrate from a psrun counting run")
    proposals = calibrate.propose(report, args.rate)
    lines = [f"Calibration for {args.rate:g} samples per second of CPU time ({report.source}):",
             f"{'event':<24} {'threshold':>14} {'expected samples':>17}"]
    for p in proposals:
        unit = " us" if p.event.startswith("ITIMER_") else ""
        lines.append(f"{p.event:<24} {p.threshold:>11,}{unit:<3} {p.samples:>17,}")
    text = "\n".join(lines) + "\n"
    if args.write_config:
        with open_output(args.write_config, args.force) as f:
            f.write(calibrate.profile_config(proposals[0], report.domain))
        text += f"wrote {args.write_config}: psrun -c {args.write_config} PROGRAM\n"
    _emit(args, text)
    return 0


def _resolve(report) -> None:
    """PCs to source locations, with progress on a terminal."""
    if report.locations:  # a processed profile: resolved already
        return
    from psuite.psprocess import srcmap

    progress = None
    if sys.stderr.isatty():
        def progress(done: int, todo: int) -> None:
            sys.stderr.write(f"\rpsprocess: resolving {report.source}: {done:,}/{todo:,} PCs")
            sys.stderr.flush()
    report.locations = srcmap.resolve(report, progress)
    report.mapper = srcmap.MAPPER
    if progress:
        sys.stderr.write("\r\033[K")


def entry() -> int:
    return run_cli("psprocess", main, None)


if __name__ == "__main__":
    sys.exit(entry())
