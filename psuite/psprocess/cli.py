"""psprocess: turn psrun's raw XML into reports."""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Iterable, Sequence

from psuite.analysis.prepare import prepare, resolve
from psuite.cli_common import MAX_INPUT_BYTES, atomic_output, check_outputs, progress, run_cli, size_text, write_output
from psuite.cli_parser import ArgumentParser, whole_number
from psuite.errors import UsageError, require_extra
from psuite.formats.writers import FORMATS
from psuite.psprocess import option_scope
from psuite.psprocess.subcommands import NAMES as SUBCOMMANDS  # psprocess diff|merge|...: the algebra

DESCRIPTION = """\
Read PerfSuite XML documents (files or http(s) URLs) written by psrun or by
the original PerfSuite, and print a report: execution and machine
information, the event counts, and derived metrics (instructions per cycle,
MFLOPS, cache line reuse, CPU utilization, page faults per second ...).
A metric is shown only when every event it needs was measured.
Profiles recorded with psrun --callpath come with their calling contexts
(X.callpaths.xml beside X.xml, read with it): --calltree shows them as a
call tree, --folded, --speedscope and --pprof export them."""

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
  psprocess --calltree app.1234.host.xml           (top-down call tree)
  psprocess --calltree bottom-up --threshold 1 --depth 8 app.1234.host.xml
  psprocess -c --calltree 'app.*.xml'             (threads and ranks merged)
  psprocess --html report.html app.1234.host.xml  (a page to open in a browser)
  psprocess -c -f html 'app.*.xml' > ranks.html   (every rank in one page)

inputs: regular files of at most {max_input} (a 1,000,000-event report is
about 120 MB) or http(s) URLs of at most {max_url}, fetched within
{url_timeout:g} s in all (PSUITE_URL_TIMEOUT=SECONDS changes that).

exports: --gmon, --vprof, --folded, --speedscope, --pprof, --cube and --html
write their file instead of printing the report: standard output stays
empty (scripts rely on it).  Add -o FILE to have the report written to FILE
as well; without it the options that shape the report (-f, --threshold,
--calltree, --depth, --per-thread) are refused with an export, e.g.
  psprocess --gmon gmon.out -o report.txt app.1234.host.xml

outputs: -o, --gmon, --vprof, --folded, --speedscope, --pprof, --cube
(and its .stat), --html and --write-config write a temporary file beside the name
and move it into place when it is complete, so a failure leaves nothing
behind; an existing file is kept unless --force is given, an input (a
document, the call paths read beside it, a -m file, the program's binary)
is never replaced even with it, and every name is checked before any is
written.

sources: --html and -f html embed the source files of a profile only from
the program's directory and the directories given with --source-dir DIR
(none for a document read from a URL unless --source-dir names them).

exit status: 0 on success, 2 on bad input (unreadable or malformed
documents, bad metric files, unwritable output) with one line on stderr
saying what is wrong and nothing else: warnings (a profiled binary rebuilt
or gone) are said only when the run succeeds, at its end or before the
line naming a file it wrote.

{subcommands}"""


def build_parser() -> ArgumentParser:
    from psuite.analysis import inputs
    from psuite.psprocess import subcommands

    epilog = EPILOG.format(max_input=size_text(MAX_INPUT_BYTES), max_url=size_text(inputs.URL_MAX_BYTES),
                           url_timeout=inputs.URL_TIMEOUT_S, subcommands=subcommands.SUMMARY)
    p = ArgumentParser(prog="psprocess", description=DESCRIPTION, epilog=epilog)
    p.add_argument("inputs", nargs="+", metavar="FILE|URL", help="PerfSuite XML documents")
    p.add_argument("-f", "--format", choices=(*FORMATS, "html"), help="output format (default text)")
    p.add_argument("-x", dest="format", action="store_const", const="xml",
                   help="XML: a profile as a processed <hwpcprofilereport> (same as -f xml)")
    p.add_argument("-m", "--metrics", action="append", default=[], metavar="FILE",
                   help="add the derived metrics defined in FILE (psmetrics XML); repeatable")
    p.add_argument("--no-standard-metrics", action="store_true", help="only the metrics given with -m")
    p.add_argument("--threshold", type=_number(0.0, 100.0), metavar="PCT",
                   help="text report of profiles: leave out entries below PCT percent of the samples (call trees: "
                   "of the inclusive samples; with -c only with --calltree)")
    p.add_argument("--calltree", nargs="?", const="top-down", choices=VIEWS,
                   metavar="VIEW", help="profiles recorded with psrun --callpath: the call tree instead of the "
                   "flat report; VIEW is top-down (the default: inclusive and exclusive samples per call path), "
                   "bottom-up (the hot functions with their callers beneath) or callers (gprof's call graph)")
    p.add_argument("--depth", type=whole_number(1, 100_000), metavar="N",
                   help="with --calltree top-down or bottom-up: show at most N frames deep")
    p.add_argument("--per-thread", action="store_true",
                   help="with --calltree: one tree per thread (default: the threads of a process merged)")
    p.add_output_argument("--gmon", metavar="FILE", help="profiles: write FILE in GNU gprof's gmon.out format "
                          "(the executable's samples, and for call-path profiles gprof's call arcs; gprof ./app FILE)")
    p.add_output_argument("--vprof", metavar="FILE", help="profiles: write FILE in vprof's vmon.out format "
                          "(version 4; the executable's samples, one hit each: its readers take a hit for 10 ms)")
    p.add_output_argument("--folded", metavar="FILE", help="profiles with call paths and CUBE files (Score-P's "
                          "too: time in microseconds): write FILE as folded stacks (a;b;c 123), read by "
                          "flamegraph.pl, inferno and speedscope")
    p.add_output_argument("--speedscope", metavar="FILE", help="profiles with call paths and CUBE files: write "
                          "FILE in speedscope's JSON format, one profile per thread")
    p.add_output_argument("--pprof", metavar="FILE", help="profiles with call paths and CUBE files: write FILE "
                          "as pprof's profile.proto (gzip), read by go tool pprof")
    p.add_output_argument("--cube", metavar="FILE.cubex", help="write a CUBE 4 file (profiles or counting "
                          "reports; with -c, every rank and thread in one cube) and its statistics file FILE.stat")
    p.add_output_argument("--html", metavar="FILE.html", help="write FILE.html: the report as one "
                          "self-contained page (CUBE's metric, call and system trees, source lines, charts) that "
                          "opens from disk in any current browser with no network; -f html writes it to standard "
                          "output instead")
    p.add_argument("--source-dir", action="append", default=[], metavar="DIR",
                   help="with --html or -f html: show source files under DIR too (repeatable); without it only "
                   "files under the program's directory are shown, and none for a document read from a URL")
    p.add_argument("--stat", metavar="FILE.stat", help="with --html or -f html: show the pattern statistics of "
                   "FILE.stat (CUBE's statistics file; a CUBE file's own, beside it, is shown without this)")
    p.add_argument("--module", metavar="PATH", help="with --gmon/--vprof: the module to export (default: the "
                   "program)")
    p.add_argument("--binaries", action="append", default=[], metavar="DIR[:DIR...]",
                   help="profiles: look for the profiled binaries and their debug files in DIR too (as perf's "
                   "--symfs and gdb's debug-file-directory): DIR/.build-id/xx/yyyy.debug, then DIR/NAME of the "
                   "recorded build-id; repeatable; also PSUITE_BINARY_PATH=DIR[:DIR...]")
    p.add_argument("-c", "--combine", action="store_true",
                   help="combine the counting reports (files, directories, globs) with statistics across them")
    p.add_argument("--calibrate", action="store_true",
                   help="from a counting report: propose sampling thresholds for --rate samples per second")
    p.add_argument("--rate", type=_number(1e-3, 1e9), metavar="HZ",
                   help="with --calibrate: wanted samples per second of CPU time (default 100)")
    p.add_output_argument("--write-config", metavar="FILE",
                          help="with --calibrate: write the best proposal as a <ps_hwpc_profile> configuration")
    p.add_output_options()
    # psbase filing (psuite.psbase.filing)
    p.add_argument("--archive", metavar="EXPERIMENT", help="after the report, file the inputs into EXPERIMENT (made "
                   "with psbase setup --psuite) of the archive: one run per input, with -c the combination as one "
                   "run (the way for MPI runs); also PSUITE_ARCHIVE=EXPERIMENT (the option wins)")
    p.add_argument("--db", metavar="URL", help="with --archive: the archive, an SQLite file or a database URL "
                   "(default: $PSBASE_DB, else psbase.db in the current directory)")
    return p


def _number(lo: float, hi: float):
    """argparse type: a number from lo to hi (never nan or inf)."""
    import argparse
    import math

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (lo <= value <= hi):
            raise argparse.ArgumentTypeError(f"takes a number from {lo:g} to {hi:g}, not {text!r}")
        return value

    return parse


EXPORTS = ("gmon", "vprof", "cube", "folded", "speedscope", "pprof", "html")  # exporters/<name>.py (or
# EXPORTER_MODULES[name]): targets(path), write(report, path, module, force)
EXPORTER_MODULES = {"html": "psuite.psprocess.html.export"}
CALLPATH_EXPORTS = ("folded", "speedscope", "pprof")  # only for profiles with call paths
# rendered from the analysis model (experiments.from_report)
MODEL_EXPORTS = ("gmon", "vprof", "cube", "folded", "speedscope", "pprof")


def _bare_calltree(argv: Sequence[str]) -> list[str]:
    """--calltree followed by an input, not a view, is --calltree top-down:
    argparse would take the input for the view.  A word there that is
    neither a view nor an input (no file, URL or pattern of that name) is a
    mistyped view: refused naming the views, not as a missing file."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        if arg == "--calltree" and (i + 1 == len(out) or out[i + 1] not in VIEWS):
            if i + 1 < len(out) and _mistyped_view(out[i + 1]):
                raise UsageError(f"--calltree {out[i + 1]}: no view or file of that name; views: "
                                 f"{', '.join(VIEWS)} (or give --calltree alone for {VIEWS[0]})")
            out.insert(i + 1, "top-down")
            break
    return out


def _mistyped_view(word: str) -> bool:
    """A word that cannot be an input: not an option, a URL, a glob pattern
    (-c expands them) or anything that exists."""
    return not (word.startswith("-") or "://" in word or any(c in word for c in "*?[") or
                os.path.lexists(word))


VIEWS = ("top-down", "bottom-up", "callers")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from psuite.cli_common import forget_reads

    forget_reads()  # the files this run reads are never its outputs (cli_common.check_outputs)
    if argv and argv[0] in SUBCOMMANDS:  # psprocess diff|merge|...: the performance algebra
        from psuite.psprocess import subcommands

        return subcommands.main(argv)
    args = build_parser().parse_args(_bare_calltree(argv))
    option_scope.check(args)  # an option that would do nothing here is refused, not ignored
    option_scope.check_source_dirs(args.source_dir, bool(args.html or args.format == "html"))
    if args.stat and not (args.html or args.format == "html"):
        raise UsageError("--stat FILE.stat shows a statistics file in the HTML report; give --html or -f html too")
    threshold_given = args.threshold is not None  # (fill_defaults gives it its default)
    option_scope.fill_defaults(args)
    derive = _Metrics(args).derive  # every -m file read now: a bad one stops the run before any work
    missing = [d for entry in args.binaries for d in entry.split(":") if d and not os.path.isdir(d)]
    if missing:
        raise UsageError(f"--binaries {missing[0]}: no such directory; name the directories holding the "
                         "profiled binaries or their debug files")
    from psuite.formats import binaries

    binaries.configure(args.binaries, warn=_warn)  # every module checked against its recorded build-id
    archive = _archive_request(args)  # psbase filing: checked before anything is read
    from psuite.analysis.inputs import load
    from psuite.formats.writers import writer

    if args.calibrate:
        return _calibrate(args, load) or _file_inputs(args, archive)
    exports = [(name, getattr(args, name)) for name in EXPORTS if getattr(args, name)]
    if exports and len(args.inputs) > 1 and not args.combine:
        raise UsageError(f"--{exports[0][0]} exports one report; give one input, or combine them with -c")
    exporters = {name: _exporter(name) for name, _ in exports}
    _check_outputs(args, [target for name, path in exports for target in exporters[name].targets(path)] +
                   [args.output, *_xml_companion(args)])
    if args.format == "html" or args.html:
        shown = _cube_html(args, exports)
        if shown is not None:
            return shown
    cube_chunks = _cube_report(args, exports, threshold_given)
    if cube_chunks is not None:
        _emit(args, cube_chunks)
        return 0
    if args.format == "html" and len(args.inputs) > 1 and not args.combine:  # before reading any of them
        raise UsageError(f"-f html shows one report in one page, and {len(args.inputs)} inputs were given; give "
                         "one, or combine them with -c")
    from psuite.analysis import srcmap
    from psuite.analysis.inputs import pair_companions

    # a raw profile's modules start decoding as the parser meets them, while the samples are read
    load = functools.partial(load, warn=_warn, on_module=srcmap.prefetch)
    if args.combine:
        from psuite.analysis import combine

        sources = pair_companions(combine.expand(args.inputs))
        subject = combine.combine(sources, load, derive, resolve, progress("psprocess", "reading", "reports"),
                                  warn=_warn)
        reports = [subject]
    else:
        reports = [prepare(load(source), derive) for source in pair_companions(list(args.inputs))]
        subject = reports[0]
    _check_callpaths(args, exports, reports)
    if threshold_given and not any(_of_profiles(r) for r in reports):
        raise UsageError(f"--threshold hides functions of profiles, and {reports[0].source or 'the input'} is no "
                         "profile; leave it out")
    experiment = None  # the analysis model of what was read, made once for every export rendered from it
    for name, path in exports:
        write, what = exporters[name].write, subject
        if name == "html":  # the page shows source files: from the directories allowed only
            write = functools.partial(write, source_dirs=args.source_dir, statistics=args.stat)
        elif name in MODEL_EXPORTS:  # these write the model's experiment (-c: the merged one), never documents
            from psuite.analysis.experiments import from_report
            from psuite.formats.exporters.gmon import ONE_PROFILE
            from psuite.model.report import ProfileReport

            if name in ("gmon", "vprof") and not isinstance(subject, ProfileReport):  # before any conversion:
                raise UsageError(ONE_PROFILE.format(option=f"--{name}"))  # only one profile has addresses
            what = experiment = experiment or from_report(subject)
        _done(f"wrote {path} ({write(what, path, args.module, args.force)})")
    if not exports or args.output:
        if args.calltree and args.format == "text":
            from psuite.formats.writers import text_calltree

            _emit(args, text_calltree.render_chunks(reports, threshold=args.threshold, view=args.calltree,
                                                     depth=args.depth, per_thread=args.per_thread))
            return _file_inputs(args, archive)
        hint = None
        if args.format == "text" and _with_callpaths(reports):  # say that they are there, and how to see them
            from psuite.formats.writers import text_calltree  # only then: psuite.model.calltree costs milliseconds

            hint = text_calltree.hint(reports)
        if args.format == "html":
            from psuite.psprocess.html import render as out
        else:
            out = writer(args.format)
            # a document's report renders its experiment (text: a profile's flat view, without its call paths)
            reports = _report_experiments(reports, call_paths=args.format != "text")
            if args.format != "xml":  # the document is let go (a million events); -x writes a profile's call
                subject = None  # paths beside it from the document, the XML writer's own model
        render = getattr(out, "render_chunks", out.render)  # in pieces where a writer can
        chunks = render(reports, threshold=args.threshold, source_dirs=args.source_dir,
                        **({"statistics": args.stat} if args.stat else {}))
        if hint is not None:
            chunks = itertools.chain([chunks] if isinstance(chunks, str) else chunks, [hint])
        _emit(args, chunks)
        if args.format == "xml":
            _write_xml_companion(args, subject)
    return _file_inputs(args, archive)


def _report_experiments(reports: list, call_paths: bool) -> list:
    """Each counting report and profile as its experiment, the analysis
    model, which the reports render (psuite.formats.writers.documents),
    with a profile's call paths when the report shows them; the others as
    they are (a combination's statistics are its experiment's already)."""
    from psuite.model.report import CountReport, ProfileReport

    if not any(type(r) in (CountReport, ProfileReport) for r in reports):
        return reports
    from psuite.analysis.experiments import from_report

    for i, r in enumerate(reports):  # in place: the list holds no document once it is converted
        if type(r) in (CountReport, ProfileReport):
            reports[i] = from_report(r, for_reports=True, call_paths=call_paths, consume=True)
    return reports


def _xml_companion(args) -> list[str]:
    """Where -x -o X.xml puts the call paths: X.callpaths.xml ([] when -x
    does not write to an .xml file)."""
    from psuite.formats.readers.callpaths import companion_name

    name = companion_name(args.output) if args.format == "xml" and args.output else None
    return [name] if name else []


def _write_xml_companion(args, subject) -> None:
    """The call paths of what -x wrote, beside it as psrun writes them
    (PerfSuite's DTDs have no place for them): writers/xml_callpaths."""
    from psuite.formats.writers import xml_callpaths

    companion = _xml_companion(args)
    if not xml_callpaths.members_with_callpaths(subject):
        # an older document's call paths beside the new one would be read as its own; --force replaced
        # the document, so they go too (without it, _check_outputs refused the name)
        if companion and os.path.lexists(companion[0]):
            os.remove(companion[0])
            _done(f"removed {companion[0]}: the call paths of the document {args.output} replaced")
        return
    if not companion:
        _warn(f"the call paths are left out of {args.output or 'standard output'}: PerfSuite's XML has no place "
              "for them; give -o NAME.xml to have them written beside it as NAME.callpaths.xml")
        return
    write_output(companion[0], xml_callpaths.render(subject, args.output), args.force)
    _done(f"wrote {companion[0]} (the call paths)")


def _cube_html(args, exports: list[tuple[str, str]]) -> int | None:
    """The HTML report of a CUBE file (psuite's, Score-P's), which only
    --html and -f html show among psprocess's outputs; None when no input
    is one."""
    from psuite.analysis import experiments

    cubes = [s for s in args.inputs if experiments.is_cube(s)]
    if not cubes:
        return None
    if len(args.inputs) > 1 or args.combine:
        raise UsageError(f"{cubes[0]} is a CUBE file: --html and -f html show one at a time (psprocess merge or "
                         "mean combine cubes)")
    others = [f"--{name}" for name, _ in exports if name != "html"] + (["--calltree"] if args.calltree else [])
    if others:
        raise UsageError(f"{others[0]} reads PerfSuite documents, and {cubes[0]} is a CUBE file; give it to "
                         "--html or -f html alone")
    from psuite.psprocess.html import export

    exp = experiments.load(cubes[0], warn=_warn)
    if args.html:
        _done(f"wrote {args.html} ({export.write(exp, args.html, None, args.force, statistics=args.stat)})")
    if args.format == "html" and (not args.html or args.output):
        _emit(args, export.page(exp, statistics=args.stat))
    return 0


def _cube_report(args, exports: list[tuple[str, str]], threshold_given: bool):
    """The text, json or csv report of CUBE files (experiments.cube_report),
    in pieces, after their --folded, --speedscope and --pprof (_cube_exports): none
    then unless -o names a report; None when no input is a CUBE file
    (asked first without numpy)."""
    from psuite.formats.readers import is_cube

    if args.combine:
        from psuite.analysis.combine import expand

        named = expand(args.inputs)
    else:
        named = args.inputs
    if not any(is_cube(s) for s in named):
        return None
    from psuite.analysis import experiments

    given = [("--calltree", bool(args.calltree)), ("--threshold", threshold_given), ("-m", bool(args.metrics)),
             ("--no-standard-metrics", args.no_standard_metrics)]  # what only PerfSuite documents have
    refused = [f"--{name}" for name, _ in exports if name not in CUBE_EXPORTS] + [flag for flag, on in given if on]
    rendered = [(name, path) for name, path in exports if name in CUBE_EXPORTS]
    if not rendered:
        return experiments.cube_report(named, args.format, args.combine, refused, warn=_warn)
    from psuite.analysis import experiment_views

    if args.output and args.format not in experiment_views.FORMATS:  # before anything is written
        raise UsageError(f"-f {args.format}: a CUBE file is shown as {', '.join(experiment_views.FORMATS)} or html, "
                         f"not {args.format}")
    exp = _cube_exports(args, named, rendered, refused)
    if not args.output:  # the exports alone, as for documents
        return iter(())
    return experiment_views.render(exp, args.format)


CUBE_EXPORTS = ("folded", "speedscope", "pprof")  # the exports a CUBE file (psuite's, Score-P's) can be given to


def _cube_exports(args, named: list[str], exports: list[tuple[str, str]], refused: list[str]):
    """Write --folded, --speedscope and --pprof of CUBE files: the call tree of one,
    or with -c of several side by side (as -c shows them); returns the
    experiment written.  Refused, one line each: a mix with PerfSuite
    documents, an option only documents have, a cube given twice."""
    from psuite.analysis import algebra, inputs
    from psuite.analysis.experiments import check_cube_inputs
    from psuite.formats.readers import is_cube

    check_cube_inputs(named, refused,
                      f"--{exports[0][0]} exports one kind of input, and {{cube}} is a CUBE file while {{document}} "
                      "is a PerfSuite document; give cubes or documents",
                      f"give it to {' and '.join('--' + name for name, _ in exports)} without {{option}}")
    cubes = [s for s in named if is_cube(s)]
    exps = [inputs.load(s, warn=_warn, cubes=True) for s in cubes]
    exp = algebra.side_by_side(exps) if len(exps) > 1 else exps[0]
    for name, path in exports:
        _done(f"wrote {path} ({_exporter(name).write(exp, path, args.module, args.force)})")
    return exp


def _of_profiles(report) -> bool:
    """A profile, or a combination of profiles."""
    from psuite.model.report import MultiReport, ProfileReport

    return isinstance(report, ProfileReport) or (isinstance(report, MultiReport) and report.of_profiles)


def _with_callpaths(reports: list) -> bool:
    """Whether any profile (of a MultiReport too) came with call paths."""
    return any(getattr(m, "callpaths", None) is not None
               for r in reports for m in (getattr(r, "reports", None) or [r]))


def _exporter(name: str):
    """exporters/<name>.py, or one line saying this psprocess has none."""
    import importlib

    module = EXPORTER_MODULES.get(name, f"psuite.formats.exporters.{name}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise UsageError(f"--{name}: this psprocess has no {name} exporter; update psuite") from None


def _check_callpaths(args, exports: list[tuple[str, str]], reports: list) -> None:
    """--calltree and the call-path exports need profiles with call paths."""
    wants = [f"--{name}" for name, _ in exports if name in CALLPATH_EXPORTS]
    if args.calltree:
        wants.insert(0, "--calltree")
    if not wants:
        return
    from psuite.model.calltree import thread_trees  # only here: it costs milliseconds to import

    if not any(thread_trees(r) for r in reports):
        raise UsageError(f"{wants[0]}: {'the inputs have' if len(args.inputs) > 1 else args.inputs[0] + ' has'} "
                         "no call paths; record them with psrun --callpath")


def _warn(message: str) -> None:
    """A warning line, said once the run has not failed (run_cli)."""
    from psuite.cli_common import hold_warning, one_line

    hold_warning(f"psprocess: warning: {one_line(message)}")


def _done(what: str) -> None:
    """The line saying a file is written or filed; the warnings held so far
    go before it, as they are about what it holds."""
    from psuite.cli_common import say_warnings

    say_warnings()
    print(f"psprocess: {what}", file=sys.stderr)


def _check_outputs(args, paths: list[str | None]) -> None:
    """Every output name usable, before anything is read or written; with
    --force, an input is still never replaced: neither a document named,
    nor a file read because of one (a companion beside it), nor a metric
    file."""
    from psuite.analysis import metrics
    from psuite.analysis.inputs import files_read_with

    sources = list(args.inputs)
    if args.combine:
        from psuite.analysis.combine import expand
        from psuite.errors import InputError

        try:
            sources = expand(sources)
        except InputError:  # said when the inputs are read
            pass
    read = [*files_read_with(sources), *args.metrics]
    if not args.no_standard_metrics:
        read.append(metrics.standard_metrics_path())
    check_outputs([p for p in paths if p], args.force, read)


class _Metrics:
    """Derived-metric definitions: the -m files read at once, whatever the
    inputs turn out to be (a missing or malformed one is refused before any
    work); the standard set with the first counting report (profiles need
    none)."""

    def __init__(self, args) -> None:
        from psuite.analysis import metrics

        self.args = args
        self.own = [d for path in args.metrics for d in metrics.load(path)]
        self.definitions: list | None = None

    def derive(self, report) -> None:
        from psuite.analysis import metrics

        if self.definitions is None:
            self.definitions = [] if self.args.no_standard_metrics else \
                metrics.load(metrics.standard_metrics_path())
            self.definitions += self.own
        report.metrics = metrics.derive(report, self.definitions)


def _emit(args, text: str | Iterable[str]) -> None:
    """The report to -o FILE (never replacing one without --force) or stdout."""
    write_output(args.output, text, args.force)


def _calibrate(args, load) -> int:
    from psuite.analysis import calibrate
    from psuite.model.report import CountReport

    if len(args.inputs) != 1:
        raise UsageError("--calibrate takes one counting report")
    _check_outputs(args, [args.write_config, args.output])
    report = load(args.inputs[0])
    if not isinstance(report, CountReport):
        raise UsageError(f"{args.inputs[0]} is not a counting report; calibrate from a psrun counting run")
    proposals = calibrate.propose(report, args.rate)
    lines = [f"Calibration for {args.rate:g} samples per second of CPU time ({report.source}):",
             f"{'event':<24} {'threshold':>14} {'expected samples':>17}"]
    for p in proposals:
        unit = " us" if p.event.startswith("ITIMER_") else ""
        lines.append(f"{p.event:<24} {p.threshold:>11,}{unit:<3} {p.samples:>17,}")
    text = "\n".join(lines) + "\n"
    if args.write_config:
        with atomic_output(args.write_config, args.force) as f:
            f.write(calibrate.profile_config(proposals[0], report.domain))
        text += f"wrote {args.write_config}: psrun -c {args.write_config} PROGRAM\n"
    _emit(args, text)
    return 0


# ---- psbase filing: --archive, PSUITE_ARCHIVE --------------------------------


def _archive_request(args) -> tuple[str, str] | None:
    """(experiment, how asked) when the inputs are to be filed; URLs refused."""
    if args.archive is None and args.db is None and not os.environ.get("PSUITE_ARCHIVE", "").strip():
        return None  # not asked: not even psbase's module imported
    from psuite.psbase import filing

    asked = filing.experiment_asked(args.archive)
    if asked is not None:
        require_extra("sqlalchemy")
    if asked is None:
        if args.db is not None:
            raise UsageError("--db goes with --archive (or PSUITE_ARCHIVE)")
        return None
    urls = [s for s in args.inputs if "://" in s]
    if urls:
        raise UsageError(f"{asked[1]}: {urls[0]} is a URL; only local documents are filed (download it first)")
    from psuite.formats.readers import is_cube

    cubes = [s for s in args.inputs if is_cube(s)]
    if cubes:
        raise UsageError(f"{asked[1]}: {cubes[0]} is a CUBE file, which psbase does not file; "
                         "give the psuite XML documents it was made from")
    return asked


def _file_inputs(args, archive: tuple[str, str] | None) -> int:
    """File the inputs after the report: one run each, with -c one for all
    (as psbase input --merge); one line on stderr saying what was filed."""
    if archive is None:
        return 0
    from psuite.analysis.inputs import pair_companions
    from psuite.errors import PsuiteError
    from psuite.psbase import filing

    experiment, how = archive
    if args.combine:
        from psuite.analysis import combine

        groups = [pair_companions(combine.expand(args.inputs))]
    else:
        groups = [[s] for s in pair_companions(list(args.inputs))]
    try:
        filed = filing.file_documents(experiment, groups, args.db)
    except PsuiteError as exc:
        raise type(exc)(f"{how}: not filed: {exc}") from None
    _done(filed)
    return 0


def entry() -> int:
    # A run builds hundreds of thousands of small objects that live to its
    # end: with the default thresholds the collector rescans them over and
    # over (about 10 % of a 20,000-PC resolution).  mypy's setting.
    import gc

    gc.set_threshold(200_000, 30, 30)
    try:
        return run_cli("psprocess", main, None)
    finally:
        gc.freeze()  # the collection at interpreter exit then skips what the run built (6 ms at 20,000 PCs)


if __name__ == "__main__":
    sys.exit(entry())
