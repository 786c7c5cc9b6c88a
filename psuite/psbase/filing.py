"""Filing what psrun and psprocess produce straight into an archive
(`psrun --archive EXPERIMENT`, `psprocess --archive EXPERIMENT`, or
PSUITE_ARCHIVE=EXPERIMENT; the option wins).  The archive is --db URL or
PSBASE_DB, as for psbase.

file_documents() is the one function both tools call.  psrun, a native
launcher with no Python in the measured program, runs this module after
the program has ended:

  python -m psuite.psbase.filing [--db URL] [--per-process] [--also PATH]
                                 [--quiet] EXPERIMENT MANIFEST

MANIFEST holds "PID PATH\\0" records, one per document the runtime saved
(csrc/runtime/report.c); --also adds psrun's own resource report.  The
outcome is one line on standard error, "psrun: filed ..." (none with
--quiet) or "psrun: not filed ...; the reports stay: ...", and exit status
0 or 2."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from psuite.errors import InputError, PsuiteError, UsageError, missing_extra

ENV = "PSUITE_ARCHIVE"


def experiment_asked(option: str | None) -> tuple[str, str] | None:
    """(experiment, how it was asked) from --archive, else $PSUITE_ARCHIVE;
    None when neither asks for filing (an empty variable does not)."""
    if option is not None:
        if not option.strip():
            raise UsageError("--archive needs an experiment name (see psbase ls)")
        return option, f"--archive {option}"
    value = os.environ.get(ENV, "")
    return (value, f"{ENV}={value}") if value.strip() else None


class Filed:
    """What was filed: run indexes in an experiment of an archive.  (A plain
    class: dataclasses costs psprocess ~14 ms of start-up to import.)"""

    def __init__(self, experiment: str, archive: str, runs: list[int]) -> None:
        self.experiment, self.archive, self.runs = experiment, archive, runs

    def __str__(self) -> str:
        which = f"run {self.runs[0]}" if len(self.runs) == 1 else f"runs {', '.join(map(str, self.runs))}"
        return f"filed {which} in experiment {self.experiment} of archive {self.archive}"


def file_documents(experiment: str, groups: Sequence[Sequence[str]], db: str | None = None) -> Filed:
    """File psuite documents into an experiment made with `psbase setup
    --psuite`: each group of paths becomes one run (its reports summed as
    `psbase input --merge` sums them), all in one transaction.  Raises
    psuite's errors (no archive, no such experiment, not a psuite
    experiment, already filed, a document psbase cannot file)."""
    from psuite.psbase import native
    from psuite.psbase.store import Store

    if not groups:
        raise InputError("there is no document to file")
    store = Store(db)
    try:
        native.check_native(store.definition(experiment))
        runs: list = []
        variables: dict[str, object] = {}
        for group in groups:
            got, needed = native.runs(list(group), merge=True)
            runs += got
            for v in needed:
                variables.setdefault(v.name, v)
        done = store.add_runs(experiment, runs, new_variables=list(variables.values()))
        return Filed(experiment, store.name, done)
    finally:
        store.close()


# ---- psrun's side ----------------------------------------------------------


def read_manifest(path: str) -> list[tuple[int, str]]:
    """(pid, path) of each record, once each, in the order written; paths
    no longer on disk (a report taken back before a failed exec) left out."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputError(f"cannot read psrun's list of reports {path}: {exc.strerror}") from None
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    for record in data.split(b"\0"):
        pid, sep, name = record.partition(b" ")
        if not sep or not pid.isdigit():
            continue  # the empty tail after the last record
        doc = os.fsdecode(name)
        if doc not in seen and os.path.isfile(doc):
            seen.add(doc)
            out.append((int(pid), doc))
    return out


def psrun_groups(records: list[tuple[int, str]], per_process: bool, also: Sequence[str]) -> list[list[str]]:
    """One run per document; with psrun -p, one per process (its threads'
    reports and its total, which native leaves out as a double count).
    Call-path companions go with their profiles (read with them)."""
    from psuite.analysis.inputs import pair_companions

    kept = set(pair_companions([p for _, p in records]))
    groups: dict[object, list[str]] = {}
    for pid, doc in records:
        if doc in kept:
            groups.setdefault(pid if per_process else doc, []).append(doc)
    return [*groups.values(), *([p] for p in also if os.path.isfile(p))]


def _stay(paths: list[str]) -> str:
    shown = " ".join(paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def _say(line: str) -> None:
    if sys.stderr is not None:  # never print(file=None): that is stdout, the program's
        print(line, file=sys.stderr)


def psrun_main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m psuite.psbase.filing", description="psrun --archive's filing")
    p.add_argument("--db")
    p.add_argument("--per-process", action="store_true")
    p.add_argument("--also", action="append", default=[])
    p.add_argument("--quiet", action="store_true", help="no line when filing succeeds (psrun -q)")
    p.add_argument("experiment")
    p.add_argument("manifest")
    args = p.parse_args(argv)
    docs: list[str] = []
    try:
        groups = psrun_groups(read_manifest(args.manifest), args.per_process, args.also)
        docs = [d for g in groups for d in g]
        if not groups:
            raise InputError("the program wrote no report")
        try:
            filed = file_documents(args.experiment, groups, args.db)
        except ModuleNotFoundError as missing:  # psuite installed without its archive extra
            raise missing_extra(missing) or missing from None
    except PsuiteError as exc:
        from psuite.cli_common import one_line

        where = f"; the reports stay: {_stay(docs)}" if docs else ""
        _say(f"psrun: not filed in {args.experiment}: {one_line(str(exc))}{where}")
        return 2
    if not args.quiet:
        _say(f"psrun: {filed}")
    return 0


if __name__ == "__main__":
    sys.exit(psrun_main())
