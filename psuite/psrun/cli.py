"""psrun: measure an unmodified program.

psrun starts the program with psuite's C library preloaded; the library
counts the configured events from just before main to the program's exit
and writes one PerfSuite XML report (<exe>.<pid>.<host>.xml).  psrun's own
messages go to stderr prefixed "psrun:"; the program's input, output, exit
status and signals are its own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
from collections.abc import Sequence

from psuite.cli_common import ArgumentParser, run_cli
from psuite.errors import EventError, PsuiteError, UsageError

EPILOG = """\
configuration (first that applies):
  -e NAME[,NAME...]      ad hoc events, e.g. -e task-clock,page-faults
  -c FILE                a PerfSuite <ps_hwpc_eventlist> file
  PS_HWPC_CONFIG=FILE    the same, from the environment
  (none)                 the default list: PAPI presets + software events

output: <exe>.<pid>.<host>.xml in the current directory; -o PREFIX sets the
first part, -d DIR the directory (also PSUITE_OUTPUT_PREFIX,
PSUITE_OUTPUT_DIR).  An existing file is never overwritten.

backends: PAPI through the system's libpapi (or PSUITE_PAPI_LIBRARY) when
present, else Linux perf_event; --backend chooses.  Events that exist but
cannot be counted here are dropped with a message before the program
starts; an event name that does not exist is an error (exit 2).

exit status: the program's own, or 128+N if it was killed by signal N;
2 for psrun's usage errors.

examples:
  psrun ./app input.dat
  psrun -e PAPI_TOT_CYC,PAPI_TOT_INS ./app
  psrun -c mylist.xml -d results/ ./app
  psprocess app.*.xml"""

SOFTWARE_FALLBACK = ("task-clock", "page-faults", "context-switches")


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="psrun", description=__doc__.split("\n\n")[1].replace("\n", " "),
                       epilog=EPILOG)
    p.add_argument("-c", "--config", metavar="FILE", help="PerfSuite event list (<ps_hwpc_eventlist>)")
    p.add_argument("-e", "--events", metavar="LIST", help="comma-separated event names (see psinv -e)")
    p.add_argument("--domain", choices=("user", "kernel", "all"), help="count in this domain (default: the "
                   "configuration's, else user)")
    p.add_argument("--backend", choices=("PAPI", "perf_event"), help="force a counting backend")
    p.add_argument("-o", "--output", metavar="PREFIX", help="report file prefix (default: the program name)")
    p.add_argument("-d", "--directory", metavar="DIR", help="directory for the report (default: current)")
    p.add_argument("-q", "--quiet", action="store_true", help="only errors; no notes on dropped events")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="PROGRAM [ARGS...]",
                   help="the program to measure and its arguments")
    return p



def note(msg: str) -> None:
    print(f"psrun: {msg}", file=sys.stderr, flush=True)


def _check_program(prog: str) -> str:
    path = shutil.which(prog) if "/" not in prog else prog
    if not path or not os.path.exists(path):
        raise UsageError(f"{prog}: command not found (give a path or a program on PATH)")
    if os.path.isdir(path):
        raise UsageError(f"{prog} is a directory, not a program")
    if not os.access(path, os.X_OK):
        raise UsageError(f"{prog} is not executable (chmod +x it, or run it through its interpreter)")
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as exc:
        raise UsageError(f"cannot read {prog}: {exc.strerror}") from None
    if head[:4] == b"\x7fELF" and not _has_interpreter(path):
        raise UsageError(f"{prog} is statically linked; psrun measures dynamically linked programs only "
                         "(rebuild without -static, or use the C API in the program)")
    return path


def _has_interpreter(path: str) -> bool:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as f:
            return any(seg["p_type"] == "PT_INTERP" for seg in ELFFile(f).iter_segments())
    except (ELFError, OSError):
        return True  # not ours to judge: let the loader try


def _event_environment(args: argparse.Namespace) -> dict[str, str]:
    """PSUITE_*/PS_HWPC_CONFIG settings for the configuration chosen."""
    from psuite.hwpc.config import default_config_path, read_eventlist

    env: dict[str, str] = {}
    if args.events is not None:
        names = [n.strip() for n in args.events.split(",") if n.strip()]
        if not names:
            raise UsageError("-e needs at least one event name")
        env["PSUITE_EVENTS"] = ",".join(names)
        domain = "user"
    else:
        path = args.config or os.environ.get("PS_HWPC_CONFIG") or default_config_path()
        cfg = read_eventlist(path)
        env["PS_HWPC_CONFIG"] = cfg.path
        domain = cfg.domain
    env["PSUITE_DOMAIN"] = args.domain or domain
    if args.backend:
        env["PSUITE_BACKEND"] = args.backend
    return env


def _dropped_by_reason(dropped: list) -> list[str]:
    """One phrase per reason, naming the events it drops."""
    by_reason: dict[str, list[str]] = {}
    for s in dropped:
        by_reason.setdefault(s.reason, []).append(s.name)
    return [f"not counted: {', '.join(names)}: {reason}" for reason, names in by_reason.items()]


def _note_dropped(dropped: list) -> None:
    for line in _dropped_by_reason(dropped):
        note(line)


def _resolve_events(env: dict[str, str], quiet: bool) -> None:
    """Open the events once in psrun itself, with the program's settings:
    unknown names stop here; events that cannot be counted are dropped with
    a note, and the program is given the list that counts."""
    from psuite.hwpc.counting import UNKNOWN, Counting

    counting = Counting(environment=env)
    try:
        counting.init()
        names = counting.event_names
        backend, version = counting.backend
        multiplexed = counting.multiplexed
    except EventError:
        raise
    except PsuiteError:  # nothing countable: the statuses say why, handled below
        names, backend, version, multiplexed = [], "", "", False
    finally:
        counting.shutdown()
    statuses = counting.statuses
    unknown = [s.name for s in statuses if s.status == UNKNOWN]
    if unknown:
        raise EventError(f"unknown event {', '.join(unknown)} (see psinv -e for the events here)")
    dropped = [s for s in statuses if not s.counted]
    if not names:
        if not quiet:
            _note_dropped(dropped)
            note(f"none of the requested events can be counted here; counting {', '.join(SOFTWARE_FALLBACK)} "
                 "instead")
        env["PSUITE_EVENTS"] = ",".join(SOFTWARE_FALLBACK)
        env.pop("PS_HWPC_CONFIG", None)
        env["PSUITE_ANNOTATION"] = "; ".join(_dropped_by_reason(dropped)) + \
            f"; counted instead: {', '.join(SOFTWARE_FALLBACK)}"
        return
    if not quiet:
        _note_dropped(dropped)
        if dropped:
            note(f"counting {', '.join(names)} ({backend} {version})".rstrip())
        if multiplexed:
            note("more events than hardware counters: counts are multiplexed and scaled")
    env["PSUITE_EVENTS"] = ",".join(names)
    env["PSUITE_CHECKED"] = "1"
    if dropped:
        env["PSUITE_ANNOTATION"] = "; ".join(_dropped_by_reason(dropped))


def _check_directory(directory: str, quiet: bool) -> None:
    if not os.path.isdir(directory):
        raise UsageError(f"-d {directory}: no such directory (create it first)")
    if not os.access(directory, os.W_OK | os.X_OK) and not quiet:
        note(f"cannot write in {directory}: the program runs, but its report cannot be saved there")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.error("no program given: psrun [options] PROGRAM [ARGS...]")
    if args.command[0] == "--":
        args.command = args.command[1:]
    if args.events is not None and args.config:
        parser.error("-e and -c both choose the events; give one")
    _check_program(args.command[0])
    env = _event_environment(args)
    directory = args.directory or os.environ.get("PSUITE_OUTPUT_DIR") or "."
    _check_directory(directory, args.quiet)
    env["PSUITE_OUTPUT_DIR"] = os.path.abspath(directory)
    if args.output:
        if "/" in args.output:
            raise UsageError("-o takes a file name prefix; use -d for the directory")
        env["PSUITE_OUTPUT_PREFIX"] = args.output
    _resolve_events(env, args.quiet)

    from psuite.psrun import launch

    outcome = launch.run(args.command, launch.preload_environment(os.environ, env))
    if outcome.signal is not None:
        try:
            name = signal.Signals(outcome.signal).name
        except ValueError:
            name = f"signal {outcome.signal}"
        note(f"{args.command[0]} was killed by {name} (exit status {outcome.exit_status})")
    if not args.quiet:
        reports = launch.reports_of(outcome.pid, env["PSUITE_OUTPUT_DIR"])
        for r in reports:
            note(f"report: {os.path.relpath(r) if not os.path.isabs(directory) else r}")
    return outcome.exit_status


def entry() -> int:
    return run_cli("psrun", main, None)


if __name__ == "__main__":
    sys.exit(entry())
