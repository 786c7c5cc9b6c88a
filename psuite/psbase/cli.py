"""psbase: an archive of experiments and their runs (after perfbase).

Errors are one line on standard error with exit status 2 (run_cli)."""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import replace

from psuite.cli_common import note_read, run_cli, write_stdout
from psuite.cli_parser import ArgumentParser
from psuite.errors import InputError, PsuiteError, UsageError

DESCRIPTION = """\
Keep every run of an experiment, with its parameters and results, in an SQL
archive: an SQLite file (psbase.db in the current directory, or $PSBASE_DB)
or a PostgreSQL server (--db postgresql+psycopg://user@host/dbname).

  psbase setup beffio.xml                      create an experiment from its definition
  psbase setup --psuite myapp                  an experiment for psuite's own documents
  psbase input myapp run/*.xml                 file psrun's reports, one run each
  psbase input beffio --desc in.xml out/*.sum  file text output read as in.xml describes
  psbase input beffio --merge --with head.xml a.log --with table.xml a.sum
                                               one run from two files, each read with its description
  psbase ls                                    the experiments
  psbase ls myapp                              the runs of one
  psbase info myapp 3                          one run's values and data set
  psbase delete myapp 3-5                      delete runs (restore brings them back)
  psbase query myapp task_clock --by ranks     mean, stddev and count per rank count

perfbase's command line is read too: psbase setup -d exp.xml, input [-u] -d
inp.xml FILE..., query -d qry.xml, info -e EXP, delete -e EXP --dontask,
attach --put --xml=F, dump -e EXP, restore -f DUMP, find -e EXP, check -a,
version; its options psbase does not support are refused by name.
"""


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="psbase", description=DESCRIPTION)
    p.add_argument("--db", metavar="URL", help="the archive: an SQLite file name or a database URL "
                   "(default: $PSBASE_DB, else psbase.db in the current directory)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=ArgumentParser)
    def command(name: str, help: str, description: str) -> ArgumentParser:
        """A sub-command: its description wrapped (the formatter keeps text as written) and --db
        accepted after the command too."""
        s = sub.add_parser(name, help=help, description=textwrap.fill(description, 79))
        s.add_argument("--db", metavar="URL", default=argparse.SUPPRESS, help="the archive (as before the command)")
        return s

    s = command("setup", help="create an experiment (and the archive, if it does not exist)",
                       description="Create an experiment from its definition XML (perfbase's format), or one "
                                   "for psuite's documents with --psuite NAME. Creates the archive if needed.")
    g = s.add_mutually_exclusive_group(required=True)
    g.add_argument("definition", nargs="?", metavar="DEFINITION.xml", help="the experiment definition")
    g.add_argument("--psuite", metavar="NAME", help="an experiment NAME for psrun's and psprocess's documents")

    s = command("update", help="change an experiment's definition",
                       description="Replace an experiment's definition: variables are added, changed or removed. "
                                   "A new variable with a default gets it in the runs there are (every data-set "
                                   "row, for a data-set variable); one without stays empty. A datatype changes "
                                   "only if every stored value is one of the new type (they are converted), valid "
                                   "values only if they hold every stored value, an occurrence only while no run "
                                   "has a value; else nothing changes and the values and runs in the way are "
                                   "named. A variable that runs have values for is removed only with --force. "
                                   "`psbase info NAME --xml` prints the current definition to start from.")
    s.add_argument("definition", metavar="DEFINITION.xml")
    s.add_argument("--force", dest="drop", action="store_true",
                   help="remove variables even if runs have values for them (the values go with them)")

    s = command("input", help="file runs into an experiment",
                       description="File runs into an experiment. Without --desc: psuite documents (counting "
                                   "reports, profiles, resource reports, psprocess combinations) into an "
                                   "experiment made with setup --psuite. With --desc: any program's text output, "
                                   "read as an input "
                                   "description (perfbase's XML) says. One run per file (or per run separator), "
                                   "or one for all with --merge. Files that each need their own description: "
                                   "--with INPUT.xml FILE per file, e.g. `psbase input beffio --merge --with "
                                   "head.xml run.log --with table.xml run.sum` makes one run of both. All runs go "
                                   "in one transaction: if one fails, none is filed. A file already filed is "
                                   "refused unless --force; a file given twice (or two with the same content) is "
                                   "refused always.")
    s.add_argument("experiment")
    s.add_argument("files", nargs="*", metavar="FILE", help="the files (read with --desc if given)")
    s.add_argument("--desc", metavar="INPUT.xml", help="the input description for the FILEs")
    s.add_argument("--with", dest="pairs", nargs=2, action="append", default=[], metavar=("INPUT.xml", "FILE"),
                   help="read FILE with the input description INPUT.xml (may be repeated, one FILE each; "
                        "with --merge all files, these and the FILEs read with --desc, make one run, "
                        "else each is its own run)")
    s.add_argument("--fixed", metavar="NAME=VALUE", action="append", default=[],
                   help="a value for a variable, overriding the files (with --desc or --with; may be repeated)")
    s.add_argument("--missing", choices=("default", "empty", "abort", "refuse", "ask"),
                   help="with --desc or --with: a variable the files do not give takes its default, stays empty, or "
                        "refuses the run (the description's choice unless given); abort, perfbase's: a value of "
                        "one occurrence refuses the run, a data-set value stays empty; ask, perfbase's: the "
                        "values of one occurrence a run lacks are asked for on standard input")
    s.add_argument("--merge", action="store_true", help="all files make one run (e.g. the per-rank reports of "
                   "one MPI run: counts and samples summed; or outputs of one run spread over files)")
    s.add_argument("--synopsis", metavar="TEXT", help="a synopsis of the runs filed (perfbase's input -s; "
                   "shown by info and ls)")
    s.add_argument("--performed", metavar="DATE", help="the date the runs were performed, local time: YYYY-MM-DD "
                   "[HH:MM[:SS]] or D-Mon-YYYY [HH:MM[:SS]] (perfbase's input -p; default: now)")
    s.add_argument("--use-mtime", action="store_true", help="date each run by the newest modification time of its "
                   "files (perfbase's input -m; --performed wins)")
    s.add_argument("--pset-store", metavar="SET", help="file no run: keep the parameters of one value per run "
                   "that the files give as parameter set SET of the experiment (created, or its values replaced; "
                   "perfbase's --pset-store)")
    s.add_argument("--pset-use", metavar="SET[,SET...]", action="append", default=[],
                   help="take parameters the --fixed values do not give from these parameter sets, the first "
                        "set named first (perfbase's --pset-use; may be repeated)")
    s.add_argument("--test", action="store_true", help="read and check the files, file nothing: print each "
                   "run's values and data-set rows as perfbase's input -t does")
    # dest "again": the shared parser's "force" means replacing an output file
    s.add_argument("--force", dest="again", action="store_true",
                   help="file documents that are already in the archive again")

    s = command("ls", help="list the experiments, or the runs of one",
                       description="Without an experiment: the experiments with their run counts. With one: its "
                                   "runs (index, date, who, sources), with --show the values of some of its "
                                   "parameters and results, with --where only the runs that have given values.")
    s.add_argument("experiment", nargs="?")
    s.add_argument("--deleted", action="store_true", help="list deleted runs too (marked 'deleted')")
    s.add_argument("--show", metavar="NAME[,NAME...]", action="append", default=[],
                   help="also show these variables' values (of one value per run; see psbase info EXPERIMENT)")
    s.add_argument("--where", metavar="NAME=VALUE", action="append", default=[],
                   help="only runs with this value (may be repeated; one name repeated means any of its values)")

    _user_parser(command)
    _attach_parser(command)

    s = command("info", help="show an experiment's definition, or one run",
                       description="An experiment's synopsis, description, who performed it and its project, "
                                   "and its variables with kind, datatype, unit, occurrence, valid values, "
                                   "default and synopsis; or one run's values and data set.")
    s.add_argument("experiment")
    s.add_argument("run", nargs="?", type=_index, help="a run index (see psbase ls EXPERIMENT)")
    s.add_argument("--xml", action="store_true", help="print the definition XML (to edit and give to update)")
    s.add_argument("--pset", metavar="SET", help="print parameter set SET (see input --pset-store)")
    s.add_argument("--perfbase", action="store_true", help="the experiment as perfbase's info prints it (its "
                   "meta information; with --verbose its users, parameter sets, attachments and run counts)")
    s.add_argument("--verbose", action="store_true", help="with --perfbase or --value: perfbase's long form")
    s.add_argument("--inventory", action="store_true", help="with --perfbase --verbose: the indexes of the runs")
    s.add_argument("--value", metavar="REGEXP", action="append", default=[],
                   help="the variables whose names REGEXP matches (may be repeated; '' for all), as perfbase's "
                        "info --value prints them")

    for name, what in (("delete", "delete runs: hidden from ls and queries until restored, or removed for "
                                  "good with --purge"),
                       ("restore", "bring deleted runs back; or, with --file, an experiment from psbase dump's "
                                   "file (under the name EXPERIMENT, if given)")):
        s = command(name, help=what.split(":")[0].split(";")[0], description=what[0].upper() + what[1:] + ".")
        s.add_argument("experiment", nargs="?" if name == "restore" else None)
        s.add_argument("runs", nargs="*", metavar="RUN", help="run indexes: 3, 3-7 or 3,5")
        if name == "restore":
            s.add_argument("--file", metavar="DUMP", help="a file of psbase dump: the experiment it holds is "
                           "created, with its runs (their indexes, dates and deleted flags), parameter sets and "
                           "attachments")
        if name == "delete":
            s.add_argument("--purge", action="store_true", help="remove the runs and their data for good")
            s.add_argument("--pset", metavar="SET", action="append", default=[],
                           help="remove parameter set SET instead (may be repeated; see input --pset-store)")
            s.add_argument("--experiment", dest="experiment_too", action="store_true",
                           help="remove the experiment itself, its definition and all its runs, for good "
                                "(instead of RUNs)")

    s = command("find", help="find the runs of an experiment by their values and meta data",
                description="The runs of an experiment whose values meet every --cond (NAME<op>VALUE, op one "
                            "of = != < > <= >=; a data-set variable: some row meets it), filed or performed in "
                            "a time span, by a user, with a synopsis matching a regular expression: one line "
                            "each, tab-separated, with the --show variables (a data-set variable: its distinct "
                            "values joined by |, or #Nvalues# beyond --nvals) and the --meta labels, sorted by "
                            "--sort (default: the first column), as perfbase's find prints them.")
    s.add_argument("experiment")
    s.add_argument("--show", metavar="NAME", action="append", default=[], help="a variable to show (may be repeated)")
    s.add_argument("--meta", metavar="LABEL[,LABEL...]", action="append", default=[],
                   help="meta data to show: indx (index), crtr (who filed it), tsin (when), tspf (performed), "
                        "syno (synopsis), file (input files), ninp (their number)")
    s.add_argument("--cond", metavar="NAME<op>VALUE[,...]", action="append", default=[],
                   help="only runs whose NAME is in that relation to VALUE (may be repeated)")
    s.add_argument("--sort", metavar="COLUMN", help="sort by this shown variable or meta label")
    s.add_argument("--nvals", metavar="N", type=int, default=1,
                   help="a data-set variable's distinct values shown up to N (default 1; negative: all)")
    for o, what in (("--created-from", "filed at or after"), ("--created-to", "filed at or before"),
                    ("--performed-from", "performed at or after"), ("--performed-to", "performed at or before")):
        s.add_argument(o, metavar="DATE", help=f"only runs {what} DATE (YYYY-MM-DD [HH:MM[:SS]])")
    s.add_argument("--created-by", metavar="USER", help="only runs USER filed")
    s.add_argument("--synopsis", metavar="REGEXP", help="only runs whose synopsis REGEXP matches")
    s.add_argument("--verbose", action="store_true", help="a header line naming the columns")

    s = command("check", help="check experiments' tables for consistency (perfbase's check)",
                description="Check each experiment named (default: all) for what perfbase's check looks for: its "
                            "variables, tables and columns as its definition says, a value row for every run and "
                            "none for a run that is not there. With --clean: purge the deleted runs (for good). "
                            "Exit status 2 when a problem is found.")
    s.add_argument("experiments", nargs="*", metavar="EXPERIMENT")
    s.add_argument("--clean", action="store_true", help="purge the deleted runs of the experiments checked")

    s = command("dump", help="write an experiment whole to a file (restore --file reads it)",
                description="Write an experiment whole, its definition, runs, data sets, parameter sets and "
                            "attachments, to a gzip'd JSON file (default: EXPERIMENT__YYYYMMDD_HHMM.json.gz in "
                            "the current directory, as perfbase names its dumps); an existing file is never "
                            "replaced. psbase restore --file DUMP creates the experiment from it, in this archive "
                            "or another (SQLite or PostgreSQL).")
    s.add_argument("experiment")
    s.add_argument("-o", "--output", metavar="FILE", help="the file to write")

    s = command("query", help="a result against one or two parameters, aggregated over repetitions; "
                              "or a query file",
                description="One result against one or two parameters: the runs with the same parameter "
                            "values are aggregated (perfbase's data-set aggregation; for a data-set result, "
                            "its rows), by the database. Deleted runs are left out. With --file instead: a "
                            "perfbase query file of source, operator, combiner and output elements; its outputs "
                            "name their formats and files (text, csv and json without a file go to standard "
                            "output).")
    s.add_argument("experiment", nargs="?")
    s.add_argument("result", nargs="?", help="a result variable (see psbase info EXPERIMENT)")
    s.add_argument("--file", metavar="QUERY.xml", help="run a query file (instead of EXPERIMENT RESULT --by; "
                   "--where and --force apply)")
    s.add_argument("--by", metavar="PARAM", action="append", default=[],
                   help="the parameter to group by (give --by twice for two)")
    s.add_argument("--where", metavar="NAME=VALUE", action="append", default=[],
                   help="only runs with this value (may be repeated; one name repeated means any of its values); "
                        "with --file, for every source of the query")
    s.add_argument("--sweep", metavar="PARAM", action="append", default=[],
                   help="with --file: every source swept over all values of PARAM (one value column each)")
    s.add_argument("--stat", help="the statistics, comma-separated: mean, stddev (sample standard deviation), "
                                  "count, min, max, median (default: mean,stddev,count)")
    s.add_argument("--unit", metavar="UNIT", help="show the values in UNIT, a unit of the same quantity as the "
                   "result's (GB/s for MB/s, min for s, kHz for Hz; scalings and bit/byte convert); counts and "
                   "percentages stay as they are. With --file: every output's values of that quantity")
    from psuite.psbase.output import FORMATS, KINDS

    s.add_argument("-f", "--format", choices=FORMATS, default="text", metavar="FORMAT",
                   help="text (the default), csv or json: to standard output, or to -o FILE; gnuplot: -o names "
                        "the data file, and a .gp script that plots it is written beside it; png or svg: a chart, "
                        "800 x 500 pixels; html: the chart as a self-contained interactive page. The charts draw "
                        "the statistics in the result's unit (not the count), the stddev as error bars")
    s.add_argument("--plot", choices=KINDS, metavar="KIND",
                   help="the chart: bar (one group of bars per value of the first --by, a bar per value of the "
                        "second), line (a line over the first --by, a number; one per value of the second), or "
                        "auto (the default: line for a numeric parameter with more than two values, else bar)")
    s.add_argument("-o", "--output", metavar="FILE", help="write to FILE (for gnuplot: the data file)")
    # dest "replace": the top parser's check of a "force" knows only its own -o
    s.add_argument("--force", dest="replace", action="store_true",
                   help="let -o replace files that exist (never touched without it; written whole or not at all)")
    s.add_argument("--fixed", metavar="NAME=VALUE", action="append", default=[],
                   help="with --file: the content of the query's <fixed> element NAME, over the file's (may be "
                        "repeated; perfbase's query -f, which is -f in perfbase's form `psbase query -d QUERY.xml`)")
    return p


def _attach_parser(command) -> None:
    """`psbase attach`: perfbase's attachments, XML files kept with an experiment under a name."""
    s = command("attach", help="keep XML files (input descriptions, queries) with an experiment",
                description="Keep an XML file of perfbase's (an input description, query, experiment definition "
                            "or update) with an experiment under a name (--name, else the root element's id). "
                            "Use it with `input EXPERIMENT --desc attached:NAME FILE...` and `query EXPERIMENT "
                            "--file attached:NAME`. --get NAME prints one (or writes it to -o FILE), --list lists "
                            "them, --delete NAME removes one.")
    s.add_argument("experiment")
    s.add_argument("file", nargs="?", metavar="FILE.xml", help="the file to keep")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--get", metavar="NAME", help="print attachment NAME (or write it to -o FILE)")
    g.add_argument("--list", action="store_true", help="list the attachments")
    g.add_argument("--delete", metavar="NAME", help="remove attachment NAME")
    s.add_argument("--name", help="the name to keep FILE under (default: its root element's id)")
    s.add_argument("--synopsis", metavar="TEXT", help="a one-line synopsis (default: the file's <synopsis>)")
    s.add_argument("--description", metavar="TEXT", help="a description (default: the file's <description>)")
    s.add_argument("-o", "--output", metavar="FILE", help="with --get: write the attachment to FILE")
    # dest "again": the shared parser's "force" means replacing an output file
    s.add_argument("--force", dest="again", action="store_true",
                   help="replace an attachment of the same name (with --get -o: replace FILE)")


def _user_parser(command) -> None:
    """`psbase user`: perfbase's user classes (psuite.psbase.roles)."""
    s = command("user", help="give users of a PostgreSQL archive a class: query, input or admin",
                description="perfbase's user classes on a PostgreSQL archive: query users may only query; "
                            "input users may also file runs (and delete or restore them); admin users may "
                            "also change experiments (setup, update, delete --purge). `user add` again with "
                            "another --class changes a user's class. Run it as the archive's owner or a "
                            "server superuser. The user logs in as the server's pg_hba.conf says (set a "
                            "password with ALTER ROLE NAME PASSWORD '...' where it asks for one). SQLite "
                            "archives have no users: their file permissions decide.")
    us = s.add_subparsers(dest="user_command", metavar="ACTION", required=True, parser_class=ArgumentParser)
    a = us.add_parser("add", help="give a user a class (creating its login role if needed), or change it",
                      description=textwrap.fill("Give user NAME the class CLASS in this archive, replacing a "
                                                "class it had; creates the server login role NAME if there is "
                                                "none.", 79))
    a.add_argument("name", metavar="NAME")
    a.add_argument("--class", dest="user_class", required=True, choices=("query", "input", "admin"),
                   help="query: only query; input: also file runs; admin: also change experiments")
    ls = us.add_parser("ls", help="the users of the archive and their classes",
                       description="The users with a class in this archive.")
    rm = us.add_parser("remove", help="take a user's class away",
                       description=textwrap.fill("Take user NAME's class in this archive away (the server's "
                                                 "login role stays: it may have other databases; DROP ROLE "
                                                 "removes it for good).", 79))
    rm.add_argument("name", metavar="NAME")
    for x in (a, ls, rm):
        x.add_argument("--db", metavar="URL", default=argparse.SUPPRESS, help="the archive (as before the command)")


MAX_RUNS = 2**31 - 1  # psb_runs.idx is a 32-bit integer on both databases
MAX_RANGE = 1_000_000  # runs one delete/restore names: the list is built in memory


def _index(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"run {text!r} is not a run index; give a number (see psbase ls EXPERIMENT)") from None
    if n < 1:
        raise UsageError(f"run {n} is not a run index; runs are numbered from 1")
    if n > MAX_RUNS:
        raise UsageError(f"run {n} is not a run index; an experiment holds at most {MAX_RUNS:,} runs")
    return n


def _indexes(specs: list[str]) -> list[int]:
    out: list[int] = []
    for spec in specs:
        for part in spec.split(","):
            lo, sep, hi = part.partition("-")
            if sep:
                a, b = _index(lo), _index(hi)
                if b < a:
                    raise UsageError(f"run range {part!r} is empty; write the lower index first")
                if b - a >= MAX_RANGE:
                    raise UsageError(f"run range {part!r} names {b - a + 1:,} runs; give at most {MAX_RANGE:,} at once")
                out.extend(range(a, b + 1))
            else:
                out.append(_index(part))
    return sorted(set(out))


def _fmt(value: object, unit: str = "") -> str:
    if isinstance(value, _dt.timedelta) and unit:  # a duration in its variable's time unit, as the unit says
        from psuite.psbase import units

        try:
            value = value.total_seconds() * units.conversion("s", unit)
        except PsuiteError:
            return str(value)  # a unit that is not a time: H:MM:SS
    from psuite.psbase.output.tables import value_text

    return value_text(value)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from psuite.psbase.perfbase_cli import translate

    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    # perfbase's command line (setup -d, input -d, query -d, delete -e ...) as psbase's own
    translated = translate(given)
    args, extra = parser.parse_known_args(translated)
    # perfbase's input and query say nothing when they succeed: scripts written for perfbase compare their output
    args.quiet = translated != given
    if args.command == "input":
        # argparse gives `input`'s FILEs (nargs "*", for the --with form) no more arguments after an option
        # (`input EXP --desc D.xml F1 F2`): they are FILEs too
        args.files += [x for x in extra if not x.startswith("-")]
        extra = [x for x in extra if x.startswith("-")]
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")  # what parse_args says
    for dest, flag in (("db", "--db"), ("output", "-o"), ("desc", "--desc"), ("file", "--file"), ("unit", "--unit")):
        value = getattr(args, dest, None)
        if isinstance(value, str) and not value.strip():  # silently the default otherwise
            parser.error(f"{flag} needs a value, not an empty one")
    from psuite.psbase import definition as defmod
    from psuite.psbase.store import Store

    cmd = args.command
    if cmd == "setup":
        if args.psuite is not None:
            from psuite.psbase import native

            d = native.definition(defmod.check_name(args.psuite, "experiment"))
        else:
            d = defmod.load(args.definition)
        store = Store(args.db, create=True)
        try:
            store.setup(d)
        except BaseException:
            store.discard_new_file()
            raise
        write_stdout(f"psbase: experiment {d.name} created in {store.name} "
                     f"({len(d.parameters)} parameters, {len(d.results)} results)\n")
        return 0
    if cmd == "user":
        return _user(args)
    if cmd == "restore" and args.file is not None:  # an experiment from a dump: the archive made if needed
        store = Store(args.db, create=True)
        try:
            _restore(store, args)
        except BaseException:
            store.discard_new_file()
            raise
        return 0
    store = Store(args.db)
    if cmd == "attach":
        return _attach(store, args)
    with tempfile.TemporaryDirectory(prefix="psbase-") as tmp:  # attachments read as files (attached:NAME)
        _resolve_attached(store, args, tmp)
        return _command(store, args, parser)


def _command(store, args, parser) -> int:
    from psuite.psbase import definition as defmod

    cmd = args.command
    if cmd == "update":
        changes = store.update(defmod.load(args.definition), drop=args.drop)
        write_stdout("".join(f"psbase: {c}\n" for c in changes) or "psbase: nothing changed\n")
    elif cmd == "input":
        performed = None if args.performed is None else _date(args.performed)
        _use_psets(store, args)
        if args.pset_store is not None:
            args.missing = "empty"  # a set keeps what the files give (perfbase checks nothing missing)
        ask = args.missing == "ask"
        if ask:
            if "-" in [*args.files, *(f for _, f in args.pairs)]:
                raise UsageError("--missing ask reads the answers from standard input, which is an input file "
                                 "here ('-'): give the values with --fixed NAME=VALUE")
            args.missing = "empty"  # read what the files give; then ask for the rest
        runs, variables = _read_runs(store, args)
        if args.pset_store is not None:
            _store_pset(store, args, runs)
            return 0
        if args.test:
            _test_import(store, args, runs, ask)
            return 0
        if ask:
            d = store.definition(args.experiment)
            for run in runs:
                _ask_missing(d, run)
        dates = [performed or (_newest_mtime(r.sources) if args.use_mtime else None) for r in runs]
        done = store.add_runs(args.experiment, runs, force=args.again, new_variables=variables,
                              synopsis=args.synopsis, performed=dates)
        if not args.quiet:
                write_stdout(f"psbase: {len(done)} run{'s' if len(done) != 1 else ''} filed in {args.experiment} "
                             f"({_spans(done)})\n")
    elif cmd == "ls":
        if args.experiment is None and not (args.show or args.where):
            rows = [[n, str(a), str(b), s] for n, s, a, b in store.list_experiments()]
            write_stdout(_table(["experiment", "runs", "deleted", "synopsis"], rows))
        else:
            _ls_runs(store, args)
    elif cmd == "info":
        _info(store, args)
    elif cmd == "delete":
        if args.pset:
            if args.runs or args.purge or args.experiment_too:
                raise UsageError("--pset removes parameter sets: drop the RUNs, --purge and --experiment")
            for p in args.pset:
                store.delete_pset(args.experiment, p)
            write_stdout(f"psbase: removed parameter set{'s' if len(args.pset) > 1 else ''} "
                         f"{', '.join(args.pset)} of {args.experiment}\n")
            return 0
        if args.experiment_too:
            if args.runs or args.purge:
                raise UsageError("--experiment removes the whole experiment: drop the RUNs and --purge")
            n = store.drop_experiment(args.experiment)
            write_stdout(f"psbase: removed experiment {args.experiment} and its {n} run{'s' if n != 1 else ''}\n")
            return 0
        if not args.runs:
            raise UsageError(f"name the runs to delete: psbase delete {args.experiment} RUN... (or --experiment "
                             "to remove the experiment itself)")
        idx = _indexes(args.runs)
        if args.purge:
            store.purge(args.experiment, idx)
            write_stdout(f"psbase: purged {_runs(idx)} of {args.experiment}\n")
        else:
            _changed(idx, store.set_deleted(args.experiment, idx, True), "deleted", args.experiment)
    elif cmd == "query":
        from psuite.psbase import output, query

        if args.file is not None:
            _query_file(store, args)
            return 0
        if args.experiment is None or args.result is None:
            raise UsageError("give EXPERIMENT RESULT --by PARAM, or a query file with --file QUERY.xml")
        if args.fixed:
            raise UsageError("--fixed gives a query file's <fixed> values: it goes with --file QUERY.xml")
        if args.output and store.url.get_backend_name() == "sqlite":
            note_read(store.url.database or "")  # the archive queried is an input: no output replaces it
        if args.sweep:
            raise UsageError("--sweep goes with --file QUERY.xml; for the short form give a second --by")
        if args.format in output.PLOT_FORMATS and not args.output:
            raise UsageError(f"-f {args.format} writes files: give -o FILE")
        if args.replace and not args.output:
            raise UsageError("--force goes with -o FILE (it lets an existing file be replaced)")
        if args.plot and args.format not in output.PLOT_FORMATS:
            raise UsageError(f"--plot goes with a chart: -f {', '.join(output.PLOT_FORMATS)}")
        q = query.run_query(store, args.experiment, args.result, args.by, args.where,
                            query.parse_stats(args.stat or "mean,stddev,count"))
        table = q.table() if args.unit is None else q.table().converted(args.unit)
        if args.output:
            written = output.write(table, args.format, args.output, args.plot or "auto", args.replace)
            write_stdout(f"psbase: wrote {', '.join(written)}\n")
        else:
            write_stdout(output.render(table, args.format))
    elif cmd == "dump":
        _dump(store, args)
    elif cmd == "find":
        write_stdout(_find(store, args))
    elif cmd == "check":
        return _check(store, args)
    elif cmd == "restore":
        if args.experiment is None or not args.runs:
            raise UsageError("name the runs to restore: psbase restore EXPERIMENT RUN..., or an experiment's "
                             "dump with --file DUMP")
        idx = _indexes(args.runs)
        _changed(idx, store.set_deleted(args.experiment, idx, False), "restored", args.experiment)
    return 0


_DATE_FORMATS = ("%d-%b-%Y", "%d %b %Y", "%d-%B-%Y", "%d %B %Y")


def _date(text: str) -> _dt.datetime:
    """--performed's date: ISO (YYYY-MM-DD [HH:MM[:SS]]) or perfbase's D-Mon-YYYY, with an optional time."""
    t = " ".join(text.split())
    try:
        return _dt.datetime.fromisoformat(t).replace(tzinfo=None)
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        for clock in ("", " %H:%M", " %H:%M:%S"):
            try:
                return _dt.datetime.strptime(t, fmt + clock)
            except ValueError:
                continue
    raise UsageError(f"--performed {text!r} is not a date; write YYYY-MM-DD [HH:MM[:SS]] or D-Mon-YYYY "
                     "(e.g. 1-Dec-2004)")


def _newest_mtime(paths: Sequence[str]) -> _dt.datetime | None:
    """The newest modification time of a run's files, local time (perfbase's input -m)."""
    import os

    times = []
    for p in paths:
        try:
            times.append(os.stat(p).st_mtime)
        except OSError:
            continue  # standard input, or a file gone: dated now, as perfbase dates standard input
    return _dt.datetime.fromtimestamp(max(times)).replace(microsecond=0) if times else None


def _spans(indexes: Sequence[int]) -> str:
    """Run indexes as psbase reads them back, consecutive ones as a span: "1-3, 7"."""
    out: list[str] = []
    for i in sorted(indexes):
        if out and i == int(out[-1].rsplit("-", 1)[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        else:
            out.append(str(i))
    return ", ".join(out)


def _runs(indexes: Sequence[int]) -> str:
    return f"run{'s' if len(indexes) != 1 else ''} {_spans(indexes)}"


def _changed(asked: list[int], changed: list[int], what: str, experiment: str) -> None:
    """What delete or restore did, and which of the runs asked for already were so."""
    same = [i for i in asked if i not in changed]
    parts = [f"{what} {_runs(changed)} of {experiment}"] if changed else []
    if same:
        state = "already deleted" if what == "deleted" else "not deleted"
        parts.append(f"{_runs(same)} {'was' if len(same) == 1 else 'were'} {state}")
    write_stdout(f"psbase: {'; '.join(parts)}\n")


def _ls_runs(store, args) -> None:
    """psbase ls EXPERIMENT: its runs, with --show's values, filtered by --where."""
    from psuite.psbase import query

    if args.experiment is None and (args.show or args.where):
        raise UsageError("--show and --where list the runs of an experiment: psbase ls EXPERIMENT --show NAME")
    d = store.definition(args.experiment)
    show = list(dict.fromkeys(n.strip() for item in args.show for n in item.split(",") if n.strip()))
    for n in show:
        query._variable(d, n, "--show")
    runs = store.list_runs(args.experiment, args.deleted, show, query.parse_where(args.where, d))
    # perfbase's performed date and synopsis, when a run has them (input -p, -m, -s)
    performed = any(r.performed for r in runs)
    synopsis = any(r.synopsis for r in runs)
    rows = [[str(r.index), r.date.isoformat(sep=" "), *([_when(r)] if performed else []), r.who,
             *("" if r.values[n] is None else _fmt(r.values[n], d.variable(n).unit) for n in show),
             *([r.synopsis or ""] if synopsis else []),
             " ".join(r.sources) + (" (deleted)" if r.deleted else "")] for r in runs]
    write_stdout(_table(["run", "filed (UTC)", *(["performed"] if performed else []), "who", *show,
                         *(["synopsis"] if synopsis else []), "sources"], rows))


ATTACHED = "attached:"  # a description or query named so is the experiment's attachment (psbase attach)


def _resolve_attached(store, args, tmp: str) -> None:
    """input's --desc/--with and query's --file given as attached:NAME: the experiment's attachment NAME,
    written to a file of its name in tmp for the readers of files."""
    def path(spec: str | None, kind: str, experiment: str | None) -> str | None:
        if not isinstance(spec, str) or not spec.startswith(ATTACHED):
            return spec
        name = spec[len(ATTACHED):]
        if experiment is None:
            raise UsageError(f"{spec} is an attachment of an experiment: name the experiment too")
        a = store.attachment(experiment, name, kind)
        target = os.path.join(tmp, name.replace(os.sep, "_") or "attachment")
        with open(target, "w", encoding="utf-8") as f:
            f.write(a.content)
        return target

    if args.command == "input":
        args.desc = path(args.desc, "input", args.experiment)
        args.pairs = [[path(x, "input", args.experiment), f] for x, f in args.pairs]
    elif args.command == "query" and args.file is not None and args.file.startswith(ATTACHED):
        args.file = path(args.file, "query", args.experiment)
        args.experiment = None  # the query names its experiment; this one only said whose attachment it is


_ATTACH_TYPES = ("query", "input", "experiment", "experiment_update")  # perfbase's files (and its list's order)


def _attach(store, args) -> int:
    """psbase attach: keep, print, list or remove an experiment's XML attachments."""
    from psuite.psbase.store import Attachment

    if args.get is not None or args.delete is not None or args.list:
        if args.file is not None:
            raise UsageError(f"{args.file}: --get, --list and --delete take no FILE; drop it")
    elif args.file is None:
        raise UsageError(f"give the file to keep (psbase attach {args.experiment} FILE.xml), or --get NAME, "
                         "--list or --delete NAME")
    if args.output is not None and args.get is None:
        raise UsageError("-o goes with --get NAME (it names the file the attachment is written to)")
    if args.list:
        found = store.attachments_of(args.experiment, args.name)
        write_stdout(_attachment_list(found, args.name is not None))
        return 0
    if args.get is not None:
        a = store.attachment(args.experiment, args.get)
        if args.output is None or args.output == "-":
            write_stdout(a.content)
        else:
            from psuite.cli_common import write_output

            write_output(args.output, a.content, force=args.again)
        return 0
    if args.delete is not None:
        store.delete_attachment(args.experiment, args.delete)
        write_stdout(f"psbase: removed attachment {args.delete} of {args.experiment}\n")
        return 0
    kind, root, data = attachment_root(args.file)
    name = args.name or root.get("id") or ""
    if not name.strip():
        raise UsageError(f"{args.file} has no id= on <{kind}>: give the name to keep it under with --name")
    synopsis = args.synopsis if args.synopsis is not None else (root.findtext("synopsis") or "").strip()
    description = args.description if args.description is not None else \
        " ".join((root.findtext("description") or "").split())
    content = data.decode("utf-8", "replace")
    replaced = store.put_attachment(args.experiment, Attachment(name, kind, args.file, synopsis, description,
                                                                content), force=args.again)
    if not args.quiet:
        write_stdout(f"psbase: {'replaced' if replaced else 'kept'} {kind} file {args.file} as attachment "
                     f"{name} of {args.experiment}\n")
    return 0


def attachment_root(path: str):
    """The type (root element) and root of an XML file psbase attach keeps: one of perfbase's files only."""
    from lxml import etree

    from psuite.cli_common import read_input

    data = read_input(path, "attachment", UsageError)  # a regular file only
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise UsageError(f"{path} is not well-formed XML ({exc}); attach an XML file of perfbase's") from None
    if root.tag not in _ATTACH_TYPES:
        raise UsageError(f"{path} is not a perfbase XML file (its root is <{root.tag}>); attach an input "
                         "description, query, experiment definition or update")
    return root.tag, root, data


def _attachment_list(found: list, verbose: bool) -> str:
    """perfbase's attach --list: name, type and synopsis per attachment, by type; with a name, its details."""
    out = []
    for kind in _ATTACH_TYPES:
        of = [a for a in found if a.type == kind]
        if not of:
            continue
        if not verbose:
            out.append(f"# {'name':<20} {'type':<8} synopsis\n")
        for a in of:
            if verbose:
                out.append(f"'{a.name}' ({a.type} description)\n    Synopsis   : {a.synopsis}\n"
                           f"    From       : {a.creator}, {a.created}\n")
                if a.description:
                    out.append("    Description:\n" + textwrap.fill(a.description, 60, initial_indent="    ",
                                                                     subsequent_indent="    ") + "\n")
            else:
                out.append(f"{a.name:<22} {a.type:<8} {a.synopsis}\n")
    return "".join(out)


_META = {"syno": "synopsis", "desc": "description", "crtr": "creator", "tspf": "performed", "tsin": "created",
         "indx": "index", "file": "input_name", "ninp": "nbr_inputs"}  # perfbase's find labels and columns
_OPS = ("<=", ">=", "!=", "=", "<", ">")


def _py2(value: object) -> str:
    """A value as perfbase (Python 2) prints it: floats as str() did (12 digits, integral ones with .0)."""
    if isinstance(value, float):
        text = f"{value:.12g}"
        return text + ".0" if text.lstrip("-").isdigit() else text
    return "None" if value is None else str(value)


def _find(store, args) -> str:
    """perfbase's find: the runs meeting the conditions, one line each."""
    import operator
    import re

    from psuite.psbase.model import BadValue, convert

    d = store.definition(args.experiment)
    conds = []
    for item in (c for group in args.cond for c in group.split(",") if c.strip()):
        m = re.match(r"^\s*(\w+)\s*(<=|>=|!=|=|<|>)(.*)$", item)
        if not m:
            raise UsageError(f"--cond {item!r}: write NAME<op>VALUE with op one of {', '.join(_OPS)}")
        v = d.variable(m.group(1))
        try:
            value = convert(replace(v, valid=[]), m.group(3).strip().strip("'\""))
        except BadValue as exc:
            raise UsageError(f"--cond {item!r}: {exc}") from None
        fn = {"<=": operator.le, ">=": operator.ge, "!=": operator.ne, "=": operator.eq, "<": operator.lt,
              ">": operator.gt}[m.group(2)]
        conds.append((v, fn, value))
    meta = [_META.get(x.strip(), None) or _bad_label(x) for group in args.meta for x in group.split(",") if x.strip()]
    shown = [d.variable(n) for n in args.show]
    columns = [v.name for v in shown] + meta
    if not columns:
        columns = ["index"]  # perfbase shows the run index when nothing else is asked for
    sort = _META.get(args.sort, args.sort) if args.sort else columns[0]
    if sort not in columns:
        d.variable(sort) if sort not in _META.values() else None
        columns.append(sort)
    columns.remove(sort)
    columns.insert(0, sort)
    once = [v.name for v in d.variables if v.occurrence == "once"]
    since = {k: _date(getattr(args, k)) for k in ("created_from", "created_to", "performed_from", "performed_to")
             if getattr(args, k)}
    try:
        synopsis = re.compile(args.synopsis) if args.synopsis else None
    except re.error as exc:
        raise UsageError(f"--synopsis {args.synopsis!r} is not a regular expression ({exc}); fix it") from None
    lines = []
    for r in store.list_runs(args.experiment, show=once):
        when = r.performed or r.date
        if any((k == "created_from" and r.date < t) or (k == "created_to" and r.date > t) or
               (k == "performed_from" and when < t) or (k == "performed_to" and when > t) for k, t in since.items()):
            continue
        if args.created_by and r.who != args.created_by or synopsis and not synopsis.search(r.synopsis or ""):
            continue
        rows = store.run(args.experiment, r.index).rows if any(v.occurrence != "once" for v in shown) or \
            any(v.occurrence != "once" for v, _, _ in conds) else []
        multiple = [v for v, _, _ in conds if v.occurrence != "once"]
        if not all(fn(r.values.get(v.name), x) for v, fn, x in conds if v.occurrence == "once"
                   if r.values.get(v.name) is not None) or \
                any(r.values.get(v.name) is None for v, _, _ in conds if v.occurrence == "once"):
            continue
        hits = [row for row in rows if all(row.get(v.name) is not None and fn(row[v.name], x)
                                           for v, fn, x in conds if v.occurrence != "once")]
        if multiple and not hits:
            continue
        cells = []
        for c in columns:
            if c in _META.values():
                cells.append(_py2({"synopsis": r.synopsis or "", "description": "", "creator": r.who,
                                   "performed": when, "created": r.date, "index": r.index,
                                   "input_name": r.sources, "nbr_inputs": len(r.sources)}[c]))
                continue
            v = d.variable(c)
            if v.occurrence == "once":
                cells.append(_py2(r.values.get(c)))
                continue
            distinct = list(dict.fromkeys(row[c] for row in (hits if multiple else rows) if row.get(c) is not None))
            cells.append("#no_data#" if not distinct else "|".join(map(_py2, distinct))
                         if len(distinct) <= args.nvals or args.nvals < 0 else f"#{len(distinct)}values#")
        lines.append(cells)
    lines.sort(key=lambda cells: [_sort_key(x) for x in cells])
    head = "# " + " \t".join(columns) + "\n" if args.verbose else ""
    return head + "".join(" \t".join(cells) + "\n" for cells in lines)


def _check(store, args) -> int:
    names = args.experiments or [n for n, *_ in store.list_experiments()]
    problems = []
    for name in names:
        found = store.check(name)
        problems += [f"experiment {name}: {p}" for p in found]
        if not found and args.clean:
            gone = [r.index for r in store.list_runs(name, deleted=True) if r.deleted]
            if gone:
                store.purge(name, gone)
            write_stdout(f"psbase: {name}: purged {_runs(gone) if gone else 'no deleted runs'}\n")
        elif not found:
            write_stdout(f"psbase: {name}: consistent\n")
    if problems:
        raise InputError("; ".join(problems) + " (restore the experiment from a dump made before, or set it up "
                         "and file its runs again)")
    return 0


def _sort_key(text: str) -> tuple:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def _bad_label(label: str) -> str:
    raise UsageError(f"--meta {label!r} is not a label; use {', '.join(_META)}")


def dump_name(experiment: str) -> str:
    """perfbase's name of a dump: the experiment's name (underscores single), two underscores, the time."""
    import re

    return "_".join(t for t in re.split("_+", experiment) if t) + "__" + \
        _dt.datetime.now().strftime("%Y%m%d_%H%M") + ".json.gz"


def _dump(store, args) -> None:
    import gzip
    import json

    from psuite.cli_common import atomic_output

    data = store.dump(args.experiment)
    path = args.output or dump_name(args.experiment)
    if path == "-":
        raise UsageError("psbase dump writes a gzip'd file: give its name with -o FILE")
    packed = gzip.compress(json.dumps(data, ensure_ascii=False).encode(), mtime=0)
    with atomic_output(path, False, binary=True) as f:  # written whole or not at all; never over a file
        f.write(packed)
    if not args.quiet:
        write_stdout(f"psbase: dumped experiment {args.experiment} ({len(data['runs'])} runs) to {path}\n")


def _restore(store, args) -> None:
    if args.runs:
        raise UsageError("--file restores a whole experiment: drop the RUNs")
    import gzip
    import json

    from psuite.cli_common import read_input

    raw = read_input(args.file, "dump", UsageError)
    try:
        data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (OSError, EOFError, ValueError) as exc:
        raise UsageError(f"dump {args.file} is not a file of psbase dump ({exc}); give one psbase dump wrote "
                         "(perfbase's pg_dump files are SQL for its own databases)") from None
    if not isinstance(data, dict) or data.get("format") != "psbase-dump-1":
        raise UsageError(f"dump {args.file} is not a file of psbase dump; give one psbase dump wrote")
    name, n = store.load(data, args.experiment)
    if not args.quiet:
        write_stdout(f"psbase: restored experiment {name} ({n} run{'s' if n != 1 else ''}) from {args.file}\n")


def _use_psets(store, args) -> None:
    """input --pset-use: the sets' values as --fixed values (given ones win, then the first set named)."""
    if not args.pset_use:
        return
    if args.desc is None and not args.pairs:
        raise UsageError("--pset-use goes with --desc or --with (psuite documents need no parameters)")
    d = store.definition(args.experiment)
    params = {v.name for v in d.variables if not v.is_result and v.occurrence == "once"}
    given = {item.partition("=")[0].strip() for item in args.fixed}
    for name in (n.strip() for item in args.pset_use for n in item.split(",")):
        if not name:
            raise UsageError("--pset-use: a set's name is empty (check the commas)")
        for variable, value in store.pset(args.experiment, name).items():
            if variable in params and variable not in given:
                args.fixed.append(f"{variable}={value}")
                given.add(variable)


def _store_pset(store, args, runs: list) -> None:
    """input --pset-store SET: the parameters of one value per run the files give, kept as SET; no run."""
    if args.test or args.desc is None and not args.pairs:
        raise UsageError("--pset-store goes with --desc or --with, and not with --test")
    d = store.definition(args.experiment)
    params = [v.name for v in d.variables if not v.is_result and v.occurrence == "once"]
    values = {n: r.values[n] for r in runs for n in params if r.values.get(n) is not None}
    store.store_pset(args.experiment, args.pset_store, values)
    if not args.quiet:
        write_stdout(f"psbase: parameter set {args.pset_store} of {args.experiment}: "
                     f"{', '.join(f'{n} = {_fmt(v, d.variable(n).unit)}' for n, v in values.items()) or 'no values'}\n")


def _ask_missing(d, run) -> None:
    """perfbase's `input -a ask`: the values of one occurrence the run's files did not give, asked for on
    standard output and read from standard input as perfbase asks (its prompts, a default taken on an empty
    answer, valid values chosen by their number); "no" files nothing."""
    from psuite.psbase.dryrun import py2_dict_order
    from psuite.psbase.model import convert

    once = {v.name: v for v in d.variables if v.occurrence == "once"}
    missing = [n for n in py2_dict_order(list(once)) if run.values.get(n) is None]
    if not missing:
        return
    files = ", ".join(run.sources) or "the input"
    write_stdout("#* No content was found for at least one value.\n"
                 f"   Input file(s): {list(run.sources)!r}\n   Value names:\n"
                 + "".join(f"    {m}\n" for m in missing) + "   Add content for these values now? <YES/no>\n")
    if sys.stdin.readline().strip().upper() == "NO":
        write_stdout("   No data written to database.\n")
        raise UsageError(f"{files}: no values given for {', '.join(missing)} (answered no); nothing filed")
    for name in missing:
        var = once[name]
        prompt = f"{name} = ? " + (f"[{var.default}] " if var.default is not None else "") + "".join(
            f"{i}:{x.strip(chr(34))} " for i, x in enumerate(var.valid, 1))
        text = ""
        while not text:
            write_stdout(prompt)
            line = sys.stdin.readline()
            if not line:
                raise UsageError(f"{files}: standard input ended before a value for '{name}' was given; give it "
                                 f"with --fixed {name}=VALUE (perfbase's -f)")
            text = line.rstrip("\n")
            if not text and var.default is not None:
                text = var.default
            elif text and var.valid:
                try:
                    chosen = int(text)
                except ValueError:
                    write_stdout(f"Invalid input '{text}'. Please enter the index of the chosen content.\n")
                    text = ""
                    continue
                if not 1 <= chosen <= len(var.valid):
                    write_stdout(f"Invalid index {chosen} (needs to be >= 1 and <= {len(var.valid)})\n")
                    text = ""
                    continue
                text = var.valid[chosen - 1].strip('"')
            else:
                continue
            write_stdout(f" -> {text}\n")
        run.values[name] = convert(var, text)


def _test_import(store, args, runs: list, ask: bool = False) -> None:
    """input --test (perfbase's -t): the runs as perfbase's test import prints them; nothing filed. The files
    are read a second time with no defaults, to tell the values they give from the defaults filled in."""
    from psuite.psbase import dryrun, inputdesc

    first: set[str] = set()  # fixed values: perfbase stores them before it reads a line
    last: set[str] = set()  # counts: perfbase stores them when the run ends
    early: set[str] = set()  # values of the file name: perfbase reads them first
    booleans: set[str] = set()  # <named_location mode="boolean">: also stored as 'f' with the first row
    derived: dict[str, tuple[str, ...]] = {}  # derived parameters: stored before the last of their inputs
    if args.desc is None and not args.pairs:  # psuite's documents: every value comes from them
        found = [dict(r.values) for r in runs]
    else:
        for path in dict.fromkeys([*([args.desc] if args.desc else []), *(x for x, _ in args.pairs)]):
            desc = inputdesc.parse(path)
            first.update(desc.fixed)
            last.update(loc.name for loc in desc.named if loc.mode in ("count", "boolean"))
            booleans.update(loc.name for loc in desc.named if loc.mode == "boolean")
            derived.update((dp.name, tuple(dict.fromkeys([*dp.names, *(m[0] for m in dp.maps)])))
                           for dp in desc.derived)
            named = {name for name, _, _ in desc.uses()}
            early.update(loc.name for loc in desc.pb_filename)
            if args.missing == "default":  # perfbase -u: a variable the description does not name is fixed
                # to its default, stored with the fixed values
                first.update(v.name for v in store.definition(args.experiment).variables if v.name not in named)
        first.update(item.partition("=")[0].strip() for item in args.fixed)
        args.missing = "empty"
        found = [{n: v for n, v in r.values.items() if v is not None} for r in _read_runs(store, args)[0]]
        if len(found) != len(runs):
            found = [dict(r.values) for r in runs]
    if not ask:
        write_stdout(dryrun.trace(runs, found, first, last, early, booleans, derived))
        return
    # perfbase asks for a run's missing values when the run's file is read: after what it printed of it
    d = store.definition(args.experiment)
    steps = dryrun.trace_steps(runs, found, first, last, early, booleans, derived)
    for run in runs:
        write_stdout(next(steps))
        _ask_missing(d, run)
        write_stdout(next(steps))


def _when(run) -> str:
    """A run's performed date as given (local time); blank when it was performed when filed."""
    return "" if run.performed is None else run.performed.isoformat(sep=" ")


def _query_file(store, args) -> None:
    """psbase query --file: each output element's table to standard output or its file."""
    from psuite.psbase import output, queryexec, queryfile

    given = [what for what, there in (("EXPERIMENT", args.experiment), ("--by", args.by), ("--stat", args.stat),
                                      ("-f", args.format != "text"), ("-o", args.output), ("--plot", args.plot))
             if there]
    if given:
        raise UsageError(f"--file QUERY.xml names the experiment, results, statistics, formats and files itself; "
                         f"drop {', '.join(given)} (or drop --file for the short form)")
    if store.url.get_backend_name() == "sqlite":
        note_read(store.url.database or "")  # the archive queried is an input: no output replaces it
    q = queryfile.parse(args.file, fixed=queryfile.parse_fixed(args.fixed))
    results = list(queryexec.execute(store, q, queryexec.parse_where(args.where), args.sweep))
    if args.unit is not None:
        results = _in_unit(results, args.unit, args.file)
    for out, table in results:
        filename = out.filename
        if out.format == "pbgnuplot":  # perfbase's name: <filename> (unified), or the title
            from psuite.psbase.output import perfbase_gnuplot

            filename = perfbase_gnuplot.name(table.pb_spec, table.pb_blocks)
        elif out.format == "pbopendoc":  # perfbase names the sheet after the output's id, whatever its title
            table = replace(table, title=out.id)
        if filename is None:
            write_stdout(output.render(table, out.format))
        else:
            written = output.write(table, out.format, filename, kind=out.kind, force=args.replace)
            if written and not args.quiet:
                write_stdout(f"psbase: wrote {', '.join(written)}\n")


def _in_unit(results: list, unit: str, path: str) -> list:
    """--unit with --file: each output's values of the unit's quantity converted, the others as they are."""
    from psuite.psbase import units

    units.parse(unit)  # a unit psbase cannot read is named as such, not as "no output converts"
    out = []
    for o, table in results:
        try:
            out.append((o, table.converted(unit)))
        except InputError:
            out.append((o, table))  # an output of another quantity (a percentage, a count) stays as it is
    if all(a is b for (_, a), (_, b) in zip(results, out, strict=True)):
        raise UsageError(f"--unit {unit!r}: no output of {path} has values of that quantity; give a unit of the "
                         "same kind as its results' (see psbase info EXPERIMENT)")
    return out


def _read_runs(store, args) -> tuple[list, list]:
    """The runs of `psbase input`'s files, and the variables they add (psuite's events)."""
    from psuite.psbase import inputdesc

    _check_input_args(args)
    documents = args.desc is None and not args.pairs
    if documents:  # psuite's own: directories expanded, call-path companions with their profiles
        from psuite.psbase import native

        args.files = native.documents(args.files)
    _refuse_repeated([*args.files, *(f for _, f in args.pairs)])
    d = store.definition(args.experiment)
    if documents:
        native.check_native(d)
        return native.runs(args.files, merge=args.merge)
    fixed: dict[str, str] = {}
    for item in args.fixed:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--fixed {item!r}: write NAME=VALUE")
        fixed[name.strip()] = value
    if not args.pairs:
        return inputdesc.extract(args.desc, d, args.files, fixed, missing=args.missing, merge=args.merge), []
    descs: dict[str, object] = {}  # each description read once
    pairs = [(args.desc, f) for f in args.files] + [(x, f) for x, f in args.pairs]
    for x, f in pairs:
        if x not in descs:
            descs[x] = _description(x, f)
    if args.merge:
        return [inputdesc.extract_merged([(descs[x], f) for x, f in pairs], d, fixed, missing=args.missing)], []
    return [run for x, f in pairs for run in inputdesc.extract(descs[x], d, [f], fixed, missing=args.missing)], []


def _check_input_args(args) -> None:
    """`psbase input`'s forms: FILEs alone (psuite documents), FILEs with --desc, --with pairs (with or
    without --desc's FILEs); what fits none of them is one line."""
    if not args.files and not args.pairs:
        raise UsageError("name the files to file: psbase input EXPERIMENT FILE..., or --with INPUT.xml FILE")
    if args.desc is None and not args.pairs and (args.fixed or args.missing):
        raise UsageError("--fixed and --missing go with --desc or --with (psuite documents need no description)")
    if args.pairs and args.files and args.desc is None:
        raise UsageError(f"{args.files[0]} has no input description while others are read --with one: give it "
                         f"as --with INPUT.xml {args.files[0]}, or --desc INPUT.xml for the files given without one")
    if args.pairs and args.desc is not None and not args.files:
        raise UsageError(f"--desc {args.desc} reads the FILEs given without --with, and there are none: drop "
                         f"--desc or name its files")


def _description(path: str, data_file: str):
    """An input description of --with; the two paths written the other way round are named as such."""
    from psuite.psbase import inputdesc

    try:
        return inputdesc.parse(path)
    except PsuiteError as exc:
        first = exc
    try:
        inputdesc.parse(data_file)
    except PsuiteError:
        raise first from None  # the description's own problem
    raise UsageError(f"--with {path} {data_file}: {data_file} is the input description; write it first: "
                     f"--with {data_file} {path}")


def _refuse_repeated(files: list[str]) -> None:
    """A file given twice in one input is refused before anything is read or
    filed (inputdesc.FilesSeen), whatever reads it afterwards."""
    import hashlib

    from psuite.cli_common import open_input, read_problem
    from psuite.psbase.inputdesc import FilesSeen

    seen = FilesSeen()
    for path in files:
        if path == "-":  # standard input (perfbase's input -): read once, kept for the import
            from psuite.psbase.inputdesc import read_lines

            seen.add(path, hashlib.sha256(read_lines(path)[0]).hexdigest())
            continue
        with open_input(path) as f:  # regular files only: a pipe or /dev/zero is refused, not read forever
            digest = hashlib.sha256()
            try:
                for chunk in iter(lambda f=f: f.read(1 << 20), b""):  # hashlib.file_digest is 3.11's
                    digest.update(chunk)
            except OSError as exc:
                raise InputError(read_problem(path, exc)) from None
        seen.add(path, digest.hexdigest())


def _info(store, args) -> None:
    from psuite.psbase import definition as defmod

    d = store.definition(args.experiment)
    if args.perfbase or args.value or args.inventory or args.verbose:
        if args.xml or args.run is not None or args.pset is not None:
            raise UsageError("--perfbase, --value, --verbose and --inventory show the experiment: drop the RUN, "
                             "--xml and --pset")
        if args.inventory and not args.verbose:
            raise UsageError("--inventory lists run indexes in perfbase's long form: add --verbose")
        write_stdout(_perfbase_values(d, args.value, args.verbose) if args.value and not args.perfbase else
                     _perfbase_info(store, d, args.verbose, args.inventory) +
                     (_perfbase_values(d, args.value, args.verbose) if args.value else ""))
        return
    if args.pset is not None:
        if args.xml or args.run is not None:
            raise UsageError("--pset shows a parameter set: drop the RUN and --xml")
        values = store.pset(args.experiment, args.pset)
        # perfbase's form: its parameters of one value per run, in the definition's order
        write_stdout(f"parameter set '{args.pset}':\n" + "".join(
            f"  {v.name} = {values[v.name]}\n" for v in d.variables if v.name in values))
        return
    if args.xml:
        write_stdout(defmod.to_bytes(d).decode())
        return
    if args.run is None:
        write_stdout(_describe(d))
        return
    run = store.run(args.experiment, args.run)
    out = [f"run {run.index} of {d.name}{' (deleted)' if run.deleted else ''}: filed {run.date.isoformat(sep=' ')} "
           f"by {run.who} from {' '.join(run.sources)}\n"]
    if run.performed is not None:
        out.append(f"performed: {_when(run)}\n")
    if run.synopsis:
        out.append(f"synopsis: {run.synopsis}\n")
    shown = [v for v in d.variables if v.name in run.values]
    values = [[v.name, _fmt(run.values[v.name], v.unit), v.unit] for v in shown]
    out.append(_table(["variable", "value", "unit"], values))
    if run.rows:
        cols = [v.name for v in d.variables if v.occurrence == "multiple"]
        out.append(f"data set: {len(run.rows)} rows\n")
        unit = {v.name: v.unit for v in d.variables}
        out.append(_table(cols, [[_fmt(r.get(c, ""), unit[c]) for c in cols] for r in run.rows]))
    write_stdout("".join(out))


PERFBASE_DB_VERSION = 5  # the archive version perfbase's info names (its last: access rights, psets, attachments)


def _perfbase_info(store, d, verbose: bool, inventory: bool) -> str:
    """An experiment as perfbase's info -e EXP [-v] [-i] prints it."""
    out = [f"Experiment {d.name} (db_version {PERFBASE_DB_VERSION})\n",
           f" Creator     : {d.performed_by.get('name', '')}\n"]
    if verbose:
        out.append(f" Created     : {store.created(d.name)}\n")
    if d.performed_by.get("organization"):
        out.append(f" Organization: {d.performed_by['organization']}\n")
    if d.project:
        out.append(f" Project     : {d.project}\n")
    out.append(f" Synopsis    : {d.synopsis}\n")
    description = d.raw_description if d.raw_description is not None else d.description
    if description:
        out.append(f" Description : {description}\n")
    if not verbose:
        return "".join(out)
    out.append(" Users   :\n")
    users = store.users()
    for cls in ("admin", "input", "query"):  # perfbase's access classes, its order
        names = [u for u, c in users if c == cls]
        if names:
            out.append(f"   {cls}_access: {' , '.join(names)}  \n")
    psets = store.pset_names(d.name)
    out.append("Available parameter sets:\n" + "".join(f"   {p}\n" for p in psets) + "\n" if psets else
               "No parameter sets defined. \n")
    attached = store.attachments_of(d.name)
    for kind in ("input", "query"):
        names = sorted(a.name for a in attached if a.type == kind)
        out.append(f"Attached {kind} descriptions:\n" + "".join(f"   {n}\n" for n in names) if names else
                   f"No {kind} descriptions attached.\n")
        out.append("\n")
    runs = store.list_runs(d.name, deleted=True)
    for title, deleted in (("Active", False), ("Deleted", True)):
        indexes = sorted(r.index for r in runs if r.deleted == deleted)
        out.append(f"\n {title} runs : {len(indexes)}\n")
        if inventory:
            out.append(f" Indices of {title.lower()} runs:\n[{', '.join(map(str, indexes))}]\n")
    return "".join(out)


def _collation_key(name: str) -> tuple[str, str]:
    """perfbase's ORDER BY name on a PostgreSQL server in an English locale: letters and digits first, case
    and punctuation only to break ties (machine, MPI_version, platform, S_buf)."""
    import re

    return re.sub(r"[^0-9a-z]", "", name.lower()), name.swapcase()


def _perfbase_values(d, patterns: list[str], verbose: bool) -> str:
    """The variables whose names match one of the patterns (searched, as PostgreSQL's ~), as perfbase's
    info --value prints them."""
    import re

    from psuite.psbase.definition import perfbase_type, perfbase_unit

    try:
        compiled = [re.compile(p) for p in patterns]
    except re.error as exc:
        raise UsageError(f"--value {exc.pattern!r} is not a regular expression ({exc}); fix it") from None
    out = []
    for v in sorted((v for v in d.variables if any(c.search(v.name) for c in compiled)),
                    key=lambda v: _collation_key(v.name)):
        unit = perfbase_unit(v.unit)
        kind = "result" if v.is_result else "parameter"
        once = "single" if v.occurrence == "once" else "multiple"
        if not verbose:
            flags = ("R" if v.is_result else "P") + ("O" if v.occurrence == "once" else "M") + \
                ("D" if v.default is not None else " ")
            out.append(f" {v.name:<20} :\t {perfbase_type(v):<12} {'[' + unit + ']':<15}\t{flags}\t ({v.synopsis})\n")
            continue
        out.append(f" '{v.name}': {perfbase_type(v)} [{unit}]\n    {kind} value, {once} occurence\n")
        if v.valid:
            out.append(f"    Valid values: {{ {','.join(v.valid)}}}\n")
        if v.synopsis:
            out.append(f"    Synopsis: {v.synopsis}\n")
        if v.description:
            out.append(f"    Description: {v.description}\n")
        if v.default is not None:
            out.append(f"    Default: {v.default or 'NULL content'}\n")
    return "".join(out)


def _describe(d) -> str:
    """An experiment's meta information and its variables (psbase info EXPERIMENT)."""
    out = [f"experiment {d.name}{': ' + d.synopsis if d.synopsis else ''}\n"]
    if d.description:
        out.append(textwrap.fill(d.description, 79, initial_indent="  ", subsequent_indent="  ") + "\n")
    name, org = d.performed_by.get("name"), d.performed_by.get("organization")
    if name or org:
        out.append(f"performed by: {f'{name} ({org})' if name and org else name or org}\n")
    if d.project:
        out.append(f"project: {d.project}\n")
    rows = [[v.name, "result" if v.is_result else "parameter", v.datatype, v.unit, v.occurrence,
             ", ".join(v.valid), "" if v.default is None else v.default, v.synopsis] for v in d.variables]
    out.append(_table(["variable", "kind", "datatype", "unit", "occurrence", "valid", "default", "synopsis"], rows))
    return "".join(out)


def _user(args) -> int:
    from psuite.psbase import roles
    from psuite.psbase.store import Store, as_url, default_url

    url = as_url(args.db or default_url())
    if url.get_backend_name() == "sqlite":
        raise roles.refuse_sqlite(url.database or "")
    store = Store(args.db)
    db = store.url.database or ""
    action = args.user_command
    work = {"add": lambda conn: roles.add(conn, db, args.name, args.user_class),
            "remove": lambda conn: roles.remove(conn, db, args.name),
            "ls": lambda conn: roles.users(conn, db)}[action]

    def go():
        with store.engine.begin() as conn:  # begun and committed under _run too: its failures are one line
            return work(conn)

    got = store._run(go, needs="query" if action == "ls" else "owner")
    # said once committed
    if action == "add":
        write_stdout(f"psbase: user {args.name}{' (new login role)' if got else ''} "
                     f"{roles.WHAT[args.user_class]} archive {db} (class {args.user_class})\n")
    elif action == "remove":
        write_stdout(f"psbase: user {args.name} no longer has class {got} in archive {db}\n")
    else:
        write_stdout(_table(["user", "class"], [[u, c] for u, c in got]))
    return 0


def entry() -> int:
    return run_cli("psbase", main, None)


if __name__ == "__main__":
    sys.exit(entry())
