"""The argparse parser every command-line front end uses: errors are one
line with exit status 2, and every tool has --version."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Option help wrapped between words only: never inside --write-config."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line: 'tool: problem (see tool --help)',
    with --version for every tool."""

    def __init__(self, **kw) -> None:
        kw.setdefault("formatter_class", _HelpFormatter)
        self._checking = False
        super().__init__(**kw)
        self._output_actions: list[argparse.Action] = []  # options naming a file to write, -o first
        from psuite._version import __version__

        self.add_argument("--version", action="version", version=f"{self.prog} (psuite) {__version__}")

    def add_argument(self, *args, **kw):
        # argparse checks each argument with a help formatter, which asks
        # shutil for the terminal's width: the check needs no width, and
        # shutil's import is milliseconds of every start-up.
        self._checking = True
        try:
            return super().add_argument(*args, **kw)
        finally:
            self._checking = False

    def _get_formatter(self):
        if self._checking:
            return self.formatter_class(prog=self.prog, width=80)
        return super()._get_formatter()

    def _print_message(self, message: str, file=None) -> None:
        """--help and --version: a failure to write them is one line and
        exit status 2 (argparse itself ignores it)."""
        import sys

        if message and file is sys.stdout:
            from psuite.cli_common import write_stdout

            write_stdout(message)
        else:
            super()._print_message(message, file)

    def error(self, message: str) -> NoReturn:
        from psuite.cli_common import one_line  # a quoted argument may hold a line break

        self.exit(2, f"{self.prog}: {one_line(message)} (see {self.prog} --help)\n")

    def add_output_options(self) -> None:
        """-o FILE and --force, for tools that write a report to a file;
        called after the tool's own add_output_argument options, which
        --force's help names."""
        self.add_output_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
        self._output_actions.insert(0, self._output_actions.pop())
        self.add_argument("--force", action="store_true",
                          help=f"let {self._output_flags()} replace a file that exists (without --force an "
                               "existing file is never touched; files are written whole or not at all)")

    def add_output_argument(self, *flags: str, **kw):
        """An option that names a file to write: --force applies to it."""
        action = self.add_argument(*flags, **kw)
        self._output_actions.append(action)
        return action

    def _output_flags(self) -> str:
        flags = ["/".join(a.option_strings) for a in self._output_actions]
        return ", ".join(flags[:-1]) + (" or " if len(flags) > 1 else "") + flags[-1] if flags else "-o"

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        ns = super().parse_args(args, namespace)
        for a in self._output_actions:
            value = getattr(ns, a.dest, None)
            if isinstance(value, str) and not value.strip():  # `--html ""`: nothing would be written, silently
                self.error(f"{'/'.join(a.option_strings)} needs a file name, not an empty one")
        if getattr(ns, "force", False) and not any(getattr(ns, a.dest, None) for a in self._output_actions):
            self.error(f"--force goes with {self._output_flags()} (it lets an existing file be replaced)")
        return ns


def whole_number(lo: int, hi: int):
    """argparse type: a whole number from lo to hi (ASCII digits only)."""

    def parse(text: str) -> int:
        if not (text.strip().isascii() and text.strip().isdigit() and lo <= int(text) <= hi):
            raise argparse.ArgumentTypeError(f"takes a whole number from {lo:,} to {hi:,}, not {text!r}")
        return int(text)

    return parse
