"""Manual pages of psuite's four commands, made from their --help.

The help is the one description of every option; the pages are that text
in man(7) form, so they cannot say something else.  `python -m
psuite.manpages DIR` writes psrun.1, psprocess.1, psinv.1 and psbase.1
into DIR (docs/man/ in the source tree, installed under share/man/man1);
tests/test_manpages.py checks that the committed pages are what the
installed commands' help says now.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence

from psuite._version import __version__

# What each command is, for the NAME line (whatis/apropos read it).
SUMMARIES = {
    "psrun": "measure an unmodified program: event counts, profiles and call paths as PerfSuite XML",
    "psprocess": "reports, exports and the performance algebra from PerfSuite and CUBE documents",
    "psinv": "the machine inventory: processor, caches, memory and the events that count here",
    "psbase": "the experiment archive: runs with their parameters and results, queries, tables and charts",
}
TOOLS = tuple(SUMMARIES)


def _subcommands(tool: str) -> tuple[str, ...]:
    if tool == "psprocess":
        from psuite.psprocess.subcommands import NAMES

        return NAMES
    if tool == "psbase":
        import argparse

        from psuite.psbase.cli import build_parser

        for action in build_parser()._actions:
            if isinstance(action, argparse._SubParsersAction):
                return tuple(action.choices)
    return ()


def _help(argv: Sequence[str]) -> str:
    # A fixed width, so the pages are the same whatever terminal made them.
    env = dict(os.environ, COLUMNS="80", LC_ALL="C.UTF-8")
    out = subprocess.run(list(argv), env=env, capture_output=True, text=True, check=True)
    return out.stdout


def _command(tool: str) -> list[str]:
    if tool == "psrun":
        from psuite.psrun import executable

        return [executable()]
    return [sys.executable, "-m", f"psuite.{tool}"]


def _roff(text: str) -> str:
    """Help text as a literal block: backslashes escaped, and no line may
    start with a dot or an apostrophe (roff would read a request)."""
    lines = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return ".nf\n" + "\n".join(lines) + "\n.fi\n"


def page(tool: str) -> str:
    """The man page of one tool, as roff."""
    command = _command(tool)
    main_help = _help([*command, "--help"])
    usage, _, rest = main_help.partition("\n\n")
    synopsis = re.sub(r"^usage: ", "", usage)
    parts = [
        f'.TH {tool.upper()} 1 "" "psuite {__version__}" "psuite manual"\n',
        ".SH NAME\n", f"{tool} \\- {SUMMARIES[tool]}\n",
        ".SH SYNOPSIS\n", _roff(synopsis),
        ".SH DESCRIPTION\n", _roff(rest),
    ]
    subcommands = _subcommands(tool)
    if subcommands:
        parts.append(".SH COMMANDS\n")
        for name in subcommands:
            parts.append(f".SS {tool} {name}\n")
            parts.append(_roff(_help([*command, name, "--help"])))
    parts.append(".SH SEE ALSO\n")
    parts.append(", ".join(f"\\fB{other}\\fR(1)" for other in TOOLS if other != tool) + "\n")
    return "".join(parts)


def write(directory: str) -> list[str]:
    """Write every page into directory; return their paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for tool in TOOLS:
        path = os.path.join(directory, f"{tool}.1")
        with open(path, "w", encoding="utf-8") as f:
            f.write(page(tool))
        paths.append(path)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m psuite.manpages DIR")
    for written in write(sys.argv[1]):
        print(written)
