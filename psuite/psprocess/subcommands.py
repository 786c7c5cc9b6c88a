"""psprocess's subcommands: the performance algebra of the CUBE 4.3 user
guide (1.7) over anything psuite reads - diff, merge, mean, compare, cut -
and the views stat and dump.  `psprocess SUBCOMMAND ...` comes here (cli.py
sends it); `psprocess FILE ...` stays the report it always was.

Results of diff, merge, mean and cut are experiments: with -o written as
CUBE 4 (with its statistics file), with --html as the HTML report, else
shown as a report (-f text, json, csv or html).  compare's exit status says equal or within the tolerances (0) or
not (1); bad input is one line and exit status 2, as everywhere in psuite.

Only argparse-level work happens at import: numpy, the readers and the
algebra are imported when a subcommand runs.  The algebra's refusals
(AlgebraError) are UsageErrors: one line like every other."""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable, Sequence

from psuite.cli_parser import ArgumentParser, whole_number
from psuite.errors import UsageError
from psuite.psprocess import cubetools  # CubeLib's single-purpose tools: clean, derive, ... (argparse only)

NAMES = ("diff", "merge", "mean", "compare", "cut", "stat", "dump", *cubetools.NAMES)
REPORT_FORMATS = ("text", "json", "csv")
RESULT_FORMATS = (*REPORT_FORMATS, "html")  # diff, merge, mean, cut: their result also as the HTML report
DUMP_FORMATS = ("text", "csv", "csv2", "gnuplot", "R")
CUBE_EXTENSION = ".cubex"

SUMMARY = """\
subcommands (the performance algebra of CUBE 4, over any input psuite reads;
psprocess SUBCOMMAND --help says more):
  diff MINUEND SUBTRAHEND   the difference of two experiments
  merge A B ...             one experiment with the metrics of all
  mean A B ...              the mean of repeated runs
  compare A B               equal, or within tolerances (exit status 0 or 1)
  cut IN                    re-root or prune the call tree
  stat IN                   statistics per metric and routine, top-N functions
  dump IN                   values by metric, call path and thread
""" + cubetools.SUMMARY + """
A file named like a subcommand is given as ./NAME."""

_INPUTS = """\
inputs: anything psuite reads - psrun's XML documents (counting reports,
profiles, with their call paths, combined documents) and CUBE 4 files
(.cubex, psuite's own and those Score-P writes)."""

_COLLAPSE = """\
dimensions: metrics are matched by name, call paths by region (name,
file, lines) and call-site line (the union of the inputs'; a value
missing in one input counts as 0).  Locations are matched by process and
thread rank; inputs whose system trees differ are refused unless -c
unites them (processes matched by machine, node, name and rank) or -C
puts every process under one virtual node (matched by name and rank);
either keeps every process, as CUBE's tools do."""

_RESULT = """\
result: with -o, a CUBE 4 file and its statistics file (OUT.stat beside
OUT.cubex), which every subcommand reads again; with --html FILE, the
HTML report (one self-contained page; a difference shows gains and losses
in two colours); without either, a report on standard output (-f text,
json, csv, or html for the page).  An existing file is kept unless
--force is given; an input (or the call paths read with it) never is.
The page embeds source files only from the program's directory and
--source-dir DIRs (none for a document read from a URL without it)."""

_STATUS = "exit status: 0 on success, 2 on bad input (one line on standard error)."

HELP = {
    "diff": ("psprocess diff MINUEND SUBTRAHEND [-o OUT.cubex] [-C] [--folded FILE]",
             """\
The difference of two experiments (CUBE's cube_diff): every value of the
minuend minus the subtrahend's, per metric, call path and thread.  Derived
metrics are recomputed on the result.  --folded also writes the two runs'
stacks as two-column folded stacks (stack before after) for a differential
flame graph (flamegraph.pl's difffolded.pl input, inferno-diff-folded).""",
             """\
examples:
  psprocess diff after.cubex before.cubex -o change.cubex
  psprocess diff new.xml old.xml                    (a report of the change)
  psprocess diff -C run8.cubex run4.cubex -o d.cubex (different thread counts)
  psprocess diff new.xml old.xml --folded d.folded && flamegraph.pl d.folded"""),
    "merge": ("psprocess merge A B ... [-o OUT.cubex] [-C]",
              """\
One experiment with the metrics of all inputs (CUBE's cube_merge): runs that
counted different events become one.  Where several inputs hold the same
metric at the same point, the last input's value is kept, as CUBE does.""",
              """\
examples:
  psprocess merge cycles.cubex cache.cubex -o all.cubex
  psprocess merge run-ipc.xml run-fp.xml -f csv"""),
    "mean": ("psprocess mean A B ... [-o OUT.cubex] [-C]",
             """\
The mean of repeated experiments (CUBE's cube_mean): every value averaged
over the inputs (a value an input lacks counts as 0), to smooth out noise.""",
             """\
examples:
  psprocess mean run1.cubex run2.cubex run3.cubex -o mean.cubex
  psprocess mean rep*.xml -f json > mean.json"""),
    "compare": ("psprocess compare A B [--tolerance [METRIC=]AMOUNT[%] ...] [-C]",
                """\
Whether two experiments are equal (CUBE's cube_cmp: the same dimensions and
values) and, with tolerances, whether B stays within them of A - a
regression check for CI.  The call paths that moved beyond their tolerance
are listed (metric, call path, A, B, change, relative change).

tolerances (repeatable, a metric may have an absolute and a relative one):
  --tolerance 5%            every metric may move by 5 % of its value in A
  --tolerance time=5%       the metric time by 5 %
  --tolerance samples=100   the metric samples by 100 (absolute)
  --tolerance 'PAPI_*=2%'   every metric whose name the shell pattern matches
A value is within when it is within either of its metric's tolerances.  A
metric's own tolerance replaces a pattern's (of patterns, the last matching
one counts); with tolerances, metrics none applies to are not checked,
and a tolerance that applies to no metric is an error.
The values checked are each call path's exclusive value summed over the
threads, so the two runs may have different threads.""",
                """\
examples:
  psprocess compare base.cubex new.cubex            (exactly equal?)
  psprocess compare base.xml new.xml --tolerance time=5% || echo slower
  psprocess compare a.cubex b.cubex --tolerance 2% --tolerance visits=0 -f csv

exit status: 0 when equal or within the tolerances, 1 when not, 2 on bad
input (one line on standard error)."""),
    "cut": ("psprocess cut [--root REGION ...] [--prune REGION ...] IN [-o OUT.cubex]",
            """\
Re-root or prune the call tree (CUBE's cube_cut).  --root keeps only
REGION's call paths (the outermost, when it recurses) with everything
below them; each becomes a root of its own (a region called from three
places gives three roots, as in cube_cut).  --root and --prune are
repeatable.  --prune removes REGION's call paths
with their subtrees and adds their inclusive values to their parents'
exclusive values (inlines them), so every root keeps its inclusive total.
REGION is a region name, or a regular expression when no region has that
name.""",
            """\
examples:
  psprocess cut --root solve run.cubex -o solve.cubex
  psprocess cut --prune 'MPI_.*' --prune log_progress run.cubex -o lean.cubex
  psprocess cut --root main --prune init app.xml     (a report)"""),
    "stat": ("psprocess stat IN [-m METRIC,...] [-r ROUTINE,...] | [-t N]",
             """\
Statistics of an experiment (CUBE's cube_stat).  Per metric and routine:
the routine's inclusive value, its exclusive value and the inclusive value
of each function it calls directly, each as statistics across the
locations (processes and threads): count, sum, mean, variance (n - 1),
minimum, quartiles (linear interpolation) and maximum.  With -t N instead,
the top N functions: of a cube with Score-P's visits and time, cube_stat
-t's (calls, exclusive and inclusive time, by exclusive time); else by the
first metric's exclusive value, with every metric's exclusive and
inclusive value.  Derived metrics are evaluated.  A metric's values are
as stored, which in CUBE include its child metrics' (--metric-tree excl:
less its child metrics).""",
             """\
examples:
  psprocess stat run.cubex                          (every metric, the roots)
  psprocess stat -m time -r solve,exchange run.cubex
  psprocess stat -t 20 -m samples app.xml
  psprocess stat -f csv run.cubex > stat.csv"""),
    "dump": ("psprocess dump IN [-m METRICS] [-c CALLPATHS] [-x incl|excl]\n"
             "                      [-t aggr|IDS] [-r] [-f FORMAT] [-o FILE]",
             """\
An experiment's values (CUBE's cube_dump): per metric, call path and thread,
or aggregated over the threads; inclusive or exclusive along the call tree
(-x, cube_dump's -z) and along the metric tree (--metric-tree, cube_dump's
-x: a stored value includes its child metrics'; excl subtracts them).

  -m  comma-separated: metric names, all (the default), CubePL
      expressions defining new metrics, NAME:EXPRESSION or just
      EXPRESSION ("New Metric1" ...; 2*3 is one), or @FILE (the
      expression in FILE, named after it; cube_dump's -m FILE).  A comma
      inside (), {}, [], a "string" or =~ /regex/ belongs to its
      expression (max(a, b)).  Evaluated as cube_dump does (POSTDERIVED):
      per thread on that thread's values, with -t aggr on the aggregates;
      metric::x(i) and x(e) inclusive and exclusive whatever -x shows,
      metric::fixed::x() over every thread.  An error in an expression or
      an unknown metric stops with one line, exit 2 (cube_dump prints on
      with exit 0, an unknown metric as 0)
  -c  all (the default), ids and ranges (0,3,5-10), leafs, roots,
      level=N, level<N, level>N (roots are level 0), name=REGEX
  -t  aggr (the sum over every thread), or thread ids and ranges
  -r  the flat profile: one row per region, its call paths summed
  -f  text, csv (a block per metric: callpath,thread,value), csv2 (a row
      per call path and thread, a column per metric), gnuplot (data
      blocks, one per metric) or R (source() it: one matrix per metric)""",
             """\
examples:
  psprocess dump run.cubex
  psprocess dump -m time,visits -c roots -x incl -t aggr run.cubex
  psprocess dump -m 'ipc:metric::PAPI_TOT_INS()/metric::PAPI_TOT_CYC()' \\
      -c leafs -f csv2 app.xml
  psprocess dump -c 'name=^MPI_' -f gnuplot run.cubex > mpi.dat
  psprocess dump -f R -o values.R run.cubex         (in R: source("values.R"))"""),
}


def parser(name: str) -> ArgumentParser:
    """The argparse parser of one subcommand."""
    if name in cubetools.NAMES:
        return cubetools.parser(name)
    usage, what, examples = HELP[name]
    epilog = [examples]
    if name in ("diff", "merge", "mean", "compare"):
        epilog.append(_COLLAPSE)
    if name in ("diff", "merge", "mean", "cut"):
        epilog.append(_RESULT)
    epilog.append(_INPUTS)
    if name != "compare":
        epilog.append(_STATUS)
    p = ArgumentParser(prog=f"psprocess {name}", usage=usage.replace("%", "%%"), description=what,
                       epilog="\n\n".join(epilog))
    _BUILD[name](p)
    return p


def _operands(p: ArgumentParser, name: str) -> None:
    if name == "diff":
        p.add_argument("minuend", metavar="MINUEND", help="the experiment to subtract from")
        p.add_argument("subtrahend", metavar="SUBTRAHEND", help="the experiment subtracted")
    elif name == "compare":
        p.add_argument("a", metavar="A", help="the reference experiment")
        p.add_argument("b", metavar="B", help="the experiment compared with it")
    elif name in ("merge", "mean"):
        p.add_argument("inputs", nargs="+", metavar="INPUT", help="two or more experiments")
    else:
        p.add_argument("input", metavar="IN", help="the experiment")


def _result_options(p: ArgumentParser, collapse: bool) -> None:
    if collapse:
        p.add_argument("-c", "--reduce", action="store_true",
                       help="unite the system trees: processes matched by machine, node, name and rank, threads "
                       "by rank, whatever one input lacks added (CUBE's -c)")
        p.add_argument("-C", "--collapse", action="store_true",
                       help="put every input's processes under one virtual machine and node: processes matched "
                       "by name and rank, threads by rank, whatever one input lacks added (CUBE's -C)")
    p.add_output_argument("-o", "--output", metavar="OUT.cubex",
                          help="write the result as a CUBE 4 file (and its statistics, OUT.stat) instead of "
                          "showing it as a report")
    p.add_output_argument("--html", metavar="FILE.html",
                          help="write the result as the HTML report: one self-contained page to open in a browser "
                          "(also with -o)")
    p.add_argument("-f", "--format", choices=RESULT_FORMATS, default="text",
                   help="without -o and --html: the report's format (default text; html: the page)")
    p.add_argument("--source-dir", action="append", default=[], metavar="DIR",
                   help="with --html or -f html: show source files under DIR too (repeatable); without it only "
                   "files under the program's directory are shown, and none for a document read from a URL")


def _force(p: ArgumentParser, what: str) -> None:
    p.add_argument("--force", action="store_true",
                   help=f"let {what} replace a file that exists (without --force an existing file is never "
                   "touched; files are written whole or not at all)")


def _build_diff(p: ArgumentParser) -> None:
    _operands(p, "diff")
    _result_options(p, collapse=True)
    p.add_output_argument("--folded", metavar="FILE",
                          help="also write FILE: two-column folded stacks (stack before after, the subtrahend's "
                          "value then the minuend's) for a differential flame graph")
    p.add_argument("-m", "--metric", metavar="NAME",
                   help="with --folded: the metric of the stacks (default: the first one both inputs have)")
    _force(p, "-o/--output, --html or --folded")


def _build_binary(name: str) -> Callable[[ArgumentParser], None]:
    def build(p: ArgumentParser) -> None:
        _operands(p, name)
        _result_options(p, collapse=True)
        _force(p, "-o/--output or --html")

    return build


def _build_compare(p: ArgumentParser) -> None:
    _operands(p, "compare")
    p.add_argument("--tolerance", action="append", default=[], metavar="[METRIC=]AMOUNT[%]",
                   help="how far B may be from A: AMOUNT in the metric's unit, or AMOUNT%% of A's value; "
                   "for METRIC only, or every metric; repeatable")
    p.add_argument("-C", "--collapse", action="store_true",
                   help="collapse each input's system tree into one location (its sum) before comparing")
    p.add_argument("-f", "--format", choices=REPORT_FORMATS, default="text",
                   help="the verdict and the moved call paths as text (default), json or csv")


def _build_cut(p: ArgumentParser) -> None:
    _operands(p, "cut")
    p.add_argument("--root", "-r", action="append", default=[], metavar="REGION",
                   help="re-root the call tree at REGION's call paths, each a root of its own; repeatable")
    p.add_argument("--prune", "-p", action="append", default=[], metavar="REGION",
                   help="prune REGION's call paths into their parents (inline them); repeatable")
    _result_options(p, collapse=True)
    _force(p, "-o/--output or --html")


def _view_output(p: ArgumentParser) -> None:
    p.add_output_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
    _force(p, "-o/--output")


def _build_stat(p: ArgumentParser) -> None:
    _operands(p, "stat")
    p.add_argument("-m", "--metrics", metavar="METRIC,...",
                   help="the metrics (default: every metric; with -t, every measured one); -t sorts by the first")
    p.add_argument("-r", "--routines", metavar="ROUTINE,...",
                   help="the routines: region names, or regular expressions (default: the call tree's roots)")
    p.add_argument("-t", "--top", type=whole_number(1, 10**9), metavar="N",
                   help="instead: the flat profile of the top N functions; of a cube with Score-P's visits and "
                   "time, cube_stat -t's (calls, exclusive and inclusive time by exclusive time, then the -m "
                   "metrics' exclusive values), else each metric's exclusive and inclusive value by the first's")
    _metric_tree(p)
    p.add_argument("-f", "--format", choices=REPORT_FORMATS, default="text", help="output format (default text)")
    _view_output(p)


def _metric_tree(p: ArgumentParser) -> None:
    p.add_argument("--metric-tree", choices=("incl", "excl"), default="incl",
                   help="incl (the default): each metric's values as stored, which in CUBE include its child "
                   "metrics' (a collapsed metric); excl: the metric less its child metrics (an expanded one; "
                   "cube_dump's -x excl)")


def _build_dump(p: ArgumentParser) -> None:
    _operands(p, "dump")
    p.add_argument("-m", "--metrics", metavar="METRICS", help="metric names, all, CubePL expressions "
                   "(NAME:EXPRESSION or EXPRESSION) or @FILE, comma-separated (default: all)")
    p.add_argument("-c", "--callpaths", default="all", metavar="CALLPATHS",
                   help="all, ids and ranges (0,3,5-10), leafs, roots, level=N, level<N, level>N, name=REGEX "
                   "(default: all)")
    p.add_argument("-x", "--calltree", choices=("incl", "excl"), default="excl",
                   help="values along the call tree: inclusive (with the callees') or exclusive (default)")
    _metric_tree(p)
    p.add_argument("-t", "--threads", metavar="aggr|IDS",
                   help="aggr: the sum over every thread; or thread ids and ranges (default: every thread)")
    p.add_argument("-r", "--regions", action="store_true",
                   help="the flat profile: one row per region (its call paths summed)")
    p.add_argument("-f", "--format", choices=DUMP_FORMATS, default="text", help="output format (default text)")
    _view_output(p)


_BUILD: dict[str, Callable[[ArgumentParser], None]] = {
    "diff": _build_diff, "merge": _build_binary("merge"), "mean": _build_binary("mean"),
    "compare": _build_compare, "cut": _build_cut, "stat": _build_stat, "dump": _build_dump,
}


# ---------------------------------------------------------------- running


def main(argv: Sequence[str]) -> int:
    """psprocess SUBCOMMAND ARGS: argv starts with the subcommand's name.
    A command of its own to run_cli: errors are one line naming the
    subcommand, as its usage errors are, and its warnings are said only
    when it does not fail."""
    from psuite.cli_common import run_cli

    return run_cli(f"psprocess {argv[0]}", _run, argv)


def _run(argv: Sequence[str]) -> int:
    name = argv[0]
    args = parser(name).parse_args(list(argv[1:]))
    args.command = name
    from psuite.formats import binaries

    binaries.configure(warn=functools.partial(_warn, name))
    if hasattr(args, "source_dir"):
        from psuite.psprocess.option_scope import check_source_dirs

        check_source_dirs(args.source_dir, bool(args.html or args.format == "html"))
    return _RUN[name](args)


def _warn(command: str, message: str) -> None:
    """A warning line naming the subcommand, said once it has not failed (run_cli)."""
    from psuite.cli_common import hold_warning, one_line

    hold_warning(f"psprocess {command}: warning: {one_line(message)}")


def _inputs(args) -> list[str]:
    if args.command == "diff":
        return [args.minuend, args.subtrahend]
    if args.command == "compare":
        return [args.a, args.b]
    if args.command in ("merge", "mean"):
        return list(args.inputs)
    return [args.input]


def _check_outputs(args, paths: Sequence[str | None]) -> None:
    """Every output usable before anything is read; an input (a document
    named, or a companion read with one) is never replaced, even with
    --force."""
    from psuite.analysis.inputs import files_read_with
    from psuite.cli_common import check_outputs

    check_outputs([p for p in paths if p], args.force, files_read_with(_inputs(args)))


def _cube_targets(path: str) -> list[str]:
    if not path.endswith(CUBE_EXTENSION) or path == CUBE_EXTENSION:
        raise UsageError(f"-o {path}: the result is written as CUBE 4; give a name ending in {CUBE_EXTENSION} "
                         "(without -o it is shown as a report)")
    return [path, path[: -len(CUBE_EXTENSION)] + ".stat"]


def _load(source: str, command: str, keep: list | None = None):
    """Any input psuite reads, as an experiment; warnings name the
    subcommand.  keep: a list that gets the input's reports (None for a
    CUBE file), for the HTML report's context and source lines."""
    from psuite.analysis import experiments

    warn = functools.partial(_warn, command)
    if keep is None:
        return experiments.load(source, warn=warn)
    from psuite.psprocess.html.viewdoc import load_input

    exp, reports = load_input(source, warn=warn)
    keep.append(reports)
    return exp


def _given(source: str, command: str, keep: list | None = None):
    """_load, the experiment named in the algebra's messages and results
    as the command line names it (a cube keeps the source it was made of,
    so two results of one program would both be that program's file)."""
    from psuite.analysis.algebra import GIVEN

    exp = _load(source, command, keep)
    exp.attributes[GIVEN] = source
    return exp


def _kept(args) -> list | None:
    """A list for _load's keep when the result becomes the HTML report."""
    return [] if args.html or args.format == "html" else None


def _wrote(args, message: str) -> None:
    """The line saying a file is written; the warnings held so far go
    before it, as they are about what it holds."""
    from psuite.cli_common import say_warnings

    say_warnings()
    print(f"psprocess {args.command}: wrote {message}", file=sys.stderr)


def _result_targets(args) -> list[str]:
    """The files a result is written to: -o's cube and statistics, --html's page."""
    return [*(_cube_targets(args.output) if args.output else []), *([args.html] if args.html else [])]


def _finish(args, result, kept: list | None = None) -> int:
    """The result written as CUBE 4 (-o) and the HTML report (--html), or
    shown as a report (-f); kept: the inputs' reports (see _load)."""
    from psuite.analysis.algebra import LEFT_OUT

    left_out = [n for n in result.attributes.get(LEFT_OUT, "").split("\n") if n]
    if left_out:  # said, not silently dropped: these ratios cannot be recomputed from the combined counts
        from psuite.cli_common import hold_warning

        hold_warning(f"psprocess {args.command}: note: {', '.join(left_out)} left out: derived metrics whose formula "
                     f"psuite does not know (stored as values), and the {args.command} of two ratios is not the ratio "
                     "of the combined counts")
    if args.output:
        from psuite.formats.exporters import cube

        done = cube.write(result, args.output, force=args.force)
        _wrote(args, args.output + (f" ({done})" if isinstance(done, str) and done else ""))
    if args.html:
        from psuite.psprocess.html import export

        done = export.write(result, args.html, force=args.force, inputs=kept, source_dirs=args.source_dir)
        _wrote(args, f"{args.html} ({done})")
    if args.output or args.html:
        return 0
    from psuite.cli_common import write_output

    if args.format == "html":
        from psuite.psprocess.html import export

        write_output(None, export.page(result, kept, args.source_dir))
        return 0
    from psuite.analysis import experiment_views

    write_output(None, experiment_views.render(result, args.format))
    return 0


def _run_diff(args) -> int:
    _check_outputs(args, [*_result_targets(args), args.folded])
    if args.metric and not args.folded:
        raise UsageError("-m/--metric goes with --folded (the metric of the folded stacks)")
    from psuite.analysis import algebra

    kept = _kept(args)
    minuend, subtrahend = _given(args.minuend, args.command, kept), _given(args.subtrahend, args.command, kept)
    if args.folded:  # before the difference, which takes over the inputs' arrays
        from psuite.analysis.flame_diff import paired_exclusive
        from psuite.formats.exporters import folded_diff

        done = folded_diff.write(paired_exclusive(minuend, subtrahend, args.metric), args.folded, force=args.force)
        _wrote(args, done)
    # consume: the inputs' arrays become the result's, so two big cubes fit beside it
    return _finish(args, algebra.diff(minuend, subtrahend, collapse=args.collapse, reduce=args.reduce,
                                             consume=True), kept)


def _run_nary(args) -> int:
    if len(args.inputs) < 2:
        raise UsageError(f"{args.command} takes two or more experiments; give another input")
    _check_outputs(args, _result_targets(args))
    from psuite.analysis import algebra

    kept = _kept(args)
    exps = [_given(s, args.command, kept) for s in args.inputs]
    return _finish(args, getattr(algebra, args.command)(exps, collapse=args.collapse, reduce=args.reduce,
                                                                consume=True), kept)


def _run_cut(args) -> int:
    if not args.root and not args.prune:
        raise UsageError("cut needs --root REGION, --prune REGION or both")
    _check_outputs(args, _result_targets(args))
    from psuite.analysis import algebra

    kept = _kept(args)
    exp = _given(args.input, args.command, kept)
    return _finish(args, algebra.cut(exp, root=args.root, prune=tuple(args.prune), collapse=args.collapse,
                                        reduce=args.reduce), kept)


def parse_tolerances(specs: Sequence[str]) -> list:
    """--tolerance [METRIC=]AMOUNT[%] options as algebra.Tolerance values,
    one per metric (an absolute and a relative one for a metric merge)."""
    from psuite.analysis import algebra

    found: dict[str, dict[str, float]] = {}
    for spec in specs:
        metric, sep, amount = spec.rpartition("=")
        metric = metric.strip() if sep else "*"
        if sep and not metric:
            raise UsageError(f"--tolerance {spec!r}: name the metric before '=' (e.g. time=5%), or give just 5%")
        text = amount.strip()
        relative = text.endswith("%")
        try:
            value = float(text[:-1] if relative else text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and value >= 0):
            raise UsageError(f"--tolerance {spec!r}: give a number of at least 0, or a percentage: 5%, "
                             "time=5%, samples=100")
        kind = "relative" if relative else "absolute"
        mine = found.setdefault(metric, {})
        if kind in mine:
            raise UsageError(f"--tolerance {spec!r}: {metric if metric != '*' else 'every metric'} already has "
                             f"{'a relative' if relative else 'an absolute'} tolerance; give one of each at most")
        mine[kind] = value / 100 if relative else value
    return [algebra.Tolerance(metric=m, absolute=t.get("absolute"), relative=t.get("relative"))
            for m, t in found.items()]


def _run_compare(args) -> int:
    tolerances = parse_tolerances(args.tolerance)
    from psuite.analysis import algebra, experiment_views
    from psuite.cli_common import write_output

    a, b = _load(args.a, args.command), _load(args.b, args.command)
    if tolerances:  # a tolerance that checks nothing would let every regression pass
        import fnmatch

        known = list(dict.fromkeys([m.name for m in a.metrics] + [m.name for m in b.metrics]))
        for t in tolerances:
            if not any(fnmatch.fnmatchcase(name, t.metric) for name in known):
                raise UsageError(f"--tolerance: no metric {t.metric!r} in {args.a} or {args.b}; their metrics are "
                                 f"{', '.join(known)}")
    result = algebra.compare(a, b, tolerances=tuple(tolerances), collapse=args.collapse)
    ok = result.equal or (bool(tolerances) and result.within)
    write_output(None, experiment_views.render_comparison(result, args.a, args.b, tolerances, args.format))
    return 0 if ok else 1


def _run_stat(args) -> int:
    _check_outputs(args, [args.output])
    from psuite.analysis import stat
    from psuite.cli_common import write_output

    exp = _load(args.input, args.command)
    text = stat.run(exp, metrics=_list(args.metrics), routines=_list(args.routines), top=args.top,
                    fmt=args.format, metric_tree=args.metric_tree)
    write_output(args.output, text, args.force)
    return 0


def _list(text: str | None) -> list[str] | None:
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def _run_dump(args) -> int:
    _check_outputs(args, [args.output])
    from psuite.analysis import dump
    from psuite.cli_common import write_output

    exp = _load(args.input, args.command)
    d = dump.compute(exp, metrics=args.metrics, callpaths=args.callpaths, calltree=args.calltree,
                     metric_tree=args.metric_tree, threads=args.threads, regions=args.regions)
    write_output(args.output, list(dump.render(d, args.format)), args.force)
    return 0


_RUN: dict[str, Callable] = {"diff": _run_diff, "merge": _run_nary, "mean": _run_nary, "compare": _run_compare,
                             "cut": _run_cut, "stat": _run_stat, "dump": _run_dump,
                             **dict.fromkeys(cubetools.NAMES, cubetools.run)}
