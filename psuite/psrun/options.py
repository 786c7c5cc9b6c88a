"""psrun's command line: one table of options, read by argparse for help
and errors, and by a small parser for the common case.

psrun's start-up is paid on every measured run, and importing argparse
(with re, gettext and locale) is a noticeable part of it; the fast parser
handles a well-formed command line and gives anything else (--help,
--version, mistakes, unusual spellings) to argparse, so every message comes
from one place."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

# (short flag, long flag, destination, argparse keywords).  Options without
# a metavar or choices take no value.
OPTIONS: tuple[tuple[str | None, str, str, dict], ...] = (
    ("-c", "--config", "config", {"metavar": "FILE", "help": "PerfSuite event list (<ps_hwpc_eventlist>)"}),
    ("-e", "--events", "events", {"metavar": "LIST", "help": "comma-separated event names (see psinv -e)"}),
    (None, "--domain", "domain", {"choices": ("user", "kernel", "all"),
                                  "help": "count in this domain (default: the configuration's, else user)"}),
    (None, "--backend", "backend", {"choices": ("PAPI", "perf_event"), "help": "force a counting backend"}),
    ("-o", "--output", "output", {"metavar": "PREFIX", "help": "report file prefix (default: the program name)"}),
    ("-d", "--directory", "directory", {"metavar": "DIR", "help": "directory for the report (default: current)"}),
    ("-q", "--quiet", "quiet", {"action": "store_true", "help": "only errors; no notes on dropped events"}),
    (None, "--profile", "profile", {"metavar": "SOURCE", "help": "sample instead of counting: ITIMER_PROF (CPU "
                                    "time), ITIMER_VIRTUAL (user CPU time), ITIMER_REAL (wall time) or an event "
                                    "to sample on overflow (task-clock, PAPI_TOT_CYC ...)"}),
    (None, "--period", "period", {"metavar": "N", "help": "sampling period: microseconds for the timers (default "
                                  "10000), events between samples for an event"}),
    ("-p", "--per-thread", "per_thread", {"action": "store_true", "help": "also one report per thread"}),
    ("-R", "--resources", "resources", {"action": "store_true", "help": "also a resource report: load, memory, "
                                        "CPU time, faults, sampled while the program runs"}),
    (None, "--interval", "interval", {"metavar": "SEC", "help": "with -R: seconds between samples (default 1)"}),
    ("-f", "--follow", "follow", {"action": "store_true", "help": "measure the processes the program forks and "
                                  "execs too, each in its own report"}),
)


def build_parser(description: str, epilog: str):
    import argparse

    from psuite.cli_parser import ArgumentParser

    p = ArgumentParser(prog="psrun", description=description, epilog=epilog)
    for short, long, dest, kw in OPTIONS:
        p.add_argument(*(f for f in (short, long) if f), dest=dest, **kw)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="PROGRAM [ARGS...]",
                   help="the program to measure and its arguments")
    return p


def parse_fast(argv: Sequence[str]) -> SimpleNamespace | None:
    """The options and the command, as argparse would give them, or None
    when the command line needs argparse (help, version or an error)."""
    values: dict[str, object] = {dest: (False if kw.get("action") == "store_true" else None)
                                 for _, _, dest, kw in OPTIONS}
    by_flag = {flag: (dest, kw) for short, long, dest, kw in OPTIONS for flag in (short, long) if flag}
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        arg = argv[i]
        if arg == "--":
            break
        flag, attached = arg, None
        if arg.startswith("--") and "=" in arg:
            flag, attached = arg.split("=", 1)
        elif not arg.startswith("--") and len(arg) > 2:
            flag, attached = arg[:2], arg[2:]
        if flag not in by_flag:
            return None
        dest, kw = by_flag[flag]
        if kw.get("action") == "store_true":
            if attached is not None:
                return None  # -qe… style clusters: argparse's business
            values[dest] = True
            i += 1
            continue
        if attached is None:
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                return None
            attached, i = argv[i + 1], i + 1
        if "choices" in kw and attached not in kw["choices"]:
            return None
        values[dest] = attached
        i += 1
    command = list(argv[i:])
    if not command or (command[0] == "--" and len(command) == 1):
        return None
    return SimpleNamespace(**values, command=command)
