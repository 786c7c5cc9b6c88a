"""psrun: measure an unmodified program.

psrun starts the program with psuite's C library preloaded; the library
counts the configured events from just before main to the program's exit
and writes one PerfSuite XML report (<exe>.<pid>.<host>.xml).  psrun's own
messages go to stderr prefixed "psrun:"; the program's input, output, exit
status and signals are its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from psuite.cli_common import run_cli
from psuite.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace
    from typing import NoReturn

EPILOG = """\
configuration (first that applies):
  -e NAME[,NAME...]      ad hoc events, e.g. -e task-clock,page-faults
  -c FILE                a PerfSuite <ps_hwpc_eventlist> (counting) or
                         <ps_hwpc_profile> (sampling) file
  PS_HWPC_CONFIG=FILE    the same, from the environment
  --profile SOURCE       sampling, e.g. --profile ITIMER_PROF --period 1000
  (none)                 the default list: PAPI presets + software events

profiles: samples go to the thread they interrupt; the report states the
rate actually delivered.  Timer periods are microseconds; ITIMER_PROF and
ITIMER_VIRTUAL use perf_event's task clock (not limited to the kernel
tick), ITIMER_REAL samples blocked threads without interrupting them.

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
  psrun --profile ITIMER_PROF --period 1000 ./app
  psprocess app.*.xml"""

def build_parser():
    from psuite.psrun.options import build_parser as build

    return build(__doc__.split("\n\n")[1].replace("\n", " "), EPILOG)


def note(msg: str) -> None:
    print(f"psrun: {msg}", file=sys.stderr, flush=True)


def _which(prog: str) -> str | None:
    """The program's path the way execvp finds it (shutil.which without
    shutil's import cost)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(d or ".", prog)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _check_program(prog: str) -> str:
    path = _which(prog) if "/" not in prog else prog
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
    """Whether an ELF file names a program interpreter (is dynamically
    linked).  Read with struct rather than an ELF library to keep psrun's
    start-up small: it is paid on every measured run."""
    import struct

    try:
        with open(path, "rb") as f:
            ident = f.read(64)
            if len(ident) < 52 or ident[4] not in (1, 2) or ident[5] not in (1, 2):
                return True  # not ours to judge: let the loader try
            is64, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
            if is64:
                phoff, = struct.unpack_from(order + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(order + "HH", ident, 54)
            else:
                phoff, = struct.unpack_from(order + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(order + "HH", ident, 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return True
    PT_INTERP = 3
    return any(struct.unpack_from(order + "I", table, i * phentsize)[0] == PT_INTERP
               for i in range(len(table) // phentsize if phentsize >= 4 else 0))


def _event_environment(args: Namespace) -> dict[str, str]:
    """PSUITE_*/PS_HWPC_CONFIG settings for the configuration chosen.  The
    library in the program resolves the events (one PAPI start-up, not two);
    a configuration the user gives is read here first, so that a malformed
    file is reported before launch with the parser's exact complaint."""
    env: dict[str, str] = {}
    if args.profile:
        from psuite.hwpc.profiling import check_profile_event

        try:
            period = int(args.period) if args.period is not None else None
        except ValueError:
            raise UsageError(f"--period takes a whole number, not {args.period!r}") from None
        env["PSUITE_PROFILE"] = args.profile
        env["PSUITE_PERIOD"] = str(check_profile_event(args.profile, period, "--period"))
    elif args.period is not None:
        raise UsageError("--period goes with --profile")
    elif args.events is not None:
        names = [n.strip() for n in args.events.split(",") if n.strip()]
        if not names:
            raise UsageError("-e needs at least one event name")
        env["PSUITE_EVENTS"] = ",".join(names)
    else:
        path = args.config or os.environ.get("PS_HWPC_CONFIG")
        if path:
            from psuite.hwpc.config import read_configuration

            env["PS_HWPC_CONFIG"] = read_configuration(path).path
    if args.domain:
        env["PSUITE_DOMAIN"] = args.domain
    if args.backend:
        env["PSUITE_BACKEND"] = args.backend
    if args.quiet:
        env["PSUITE_QUIET"] = "1"
    if args.per_thread:
        env["PSUITE_PER_THREAD"] = "1"
    if args.follow:
        env["PSUITE_FOLLOW"] = "1"
    return env


def _check_directory(directory: str, quiet: bool) -> None:
    if not os.path.isdir(directory):
        raise UsageError(f"-d {directory}: no such directory (create it first)")
    if not os.access(directory, os.W_OK | os.X_OK) and not quiet:
        note(f"cannot write in {directory}: the program runs, but its report cannot be saved there")


def main(argv: Sequence[str] | None = None) -> int:
    from psuite.psrun.options import parse_fast

    argv = sys.argv[1:] if argv is None else argv
    args = parse_fast(argv)
    if args is None:
        args = build_parser().parse_args(argv)
    if not args.command:
        raise UsageError("no program given: psrun [options] PROGRAM [ARGS...] (see psrun --help)")
    if args.command[0] == "--":
        args.command = args.command[1:]
    if sum((args.events is not None, bool(args.config), bool(args.profile))) > 1:
        raise UsageError("-e, -c and --profile each choose what to measure; give one (see psrun --help)")
    _check_program(args.command[0])
    env = _event_environment(args)
    directory = args.directory or os.environ.get("PSUITE_OUTPUT_DIR") or "."
    _check_directory(directory, args.quiet)
    env["PSUITE_OUTPUT_DIR"] = os.path.abspath(directory)
    if args.output:
        if "/" in args.output:
            raise UsageError("-o takes a file name prefix; use -d for the directory")
        env["PSUITE_OUTPUT_PREFIX"] = args.output

    from psuite.psrun import launch

    before = launch.report_names(env["PSUITE_OUTPUT_DIR"])
    monitor = _resource_monitor(args, env)
    try:
        outcome = launch.run(args.command, launch.preload_environment(os.environ, env),
                             tick=monitor.tick if monitor else None, interval=monitor.interval if monitor else 1.0)
        if monitor:
            _write_resource_report(monitor, outcome, args, env)
    finally:
        if monitor:  # the program's note of its peak memory, read by now
            os.unlink(env["PSUITE_RESOURCE_FILE"])
    if outcome.signal is not None:
        import signal

        try:
            name = signal.Signals(outcome.signal).name
        except ValueError:
            name = f"signal {outcome.signal}"
        note(f"{args.command[0]} was killed by {name} (exit status {outcome.exit_status})")
    if not args.quiet:
        reports = launch.new_reports(env["PSUITE_OUTPUT_DIR"], before)
        for r in reports:
            note(f"report: {os.path.relpath(r) if not os.path.isabs(directory) else r}")
    return outcome.exit_status


def _resource_monitor(args: Namespace, env: dict[str, str]):
    if args.interval is not None and not args.resources:
        raise UsageError("--interval goes with -R")
    if not args.resources:
        return None
    try:
        interval = float(args.interval) if args.interval is not None else 1.0
    except ValueError:
        interval = -1.0
    if not 0.01 <= interval <= 3600:
        raise UsageError(f"--interval takes seconds between 0.01 and 3600, not {args.interval!r}")
    import tempfile

    from psuite.psrun.resources import ResourceMonitor

    fd, env["PSUITE_RESOURCE_FILE"] = tempfile.mkstemp(prefix="psuite-peak-")
    os.close(fd)
    return ResourceMonitor(interval)


def _write_resource_report(monitor, outcome, args: Namespace, env: dict[str, str]) -> None:
    """<prefix>.<pid>.<host>.resource.xml beside the other reports, never
    replacing a file."""
    from lxml import etree

    from psuite.formats import resourcereport
    from psuite.psrun.launch import host_name

    report = monitor.report(outcome, " ".join(args.command), env["PSUITE_RESOURCE_FILE"])
    data = etree.tostring(resourcereport.to_element(report), xml_declaration=True, encoding="UTF-8",
                          pretty_print=True)
    prefix = args.output or os.path.basename(args.command[0])
    base = os.path.join(env["PSUITE_OUTPUT_DIR"], f"{prefix}.{outcome.pid}.{host_name()}.resource")
    for k in range(1000):
        path = f"{base}.xml" if k == 0 else f"{base}.{k}.xml"
        try:
            with open(path, "xb") as f:
                f.write(data)
            return
        except FileExistsError:
            continue
        except OSError as exc:
            note(f"could not save the resource report {path}: {exc.strerror}")
            return


def entry() -> NoReturn:
    status = run_cli("psrun", main, None)
    # Leave without the interpreter's teardown: psrun has nothing left to
    # release, and the milliseconds are added to every measured run.
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError:
            pass
    os._exit(status)


if __name__ == "__main__":
    sys.exit(entry())
