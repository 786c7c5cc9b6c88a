"""The argparse parser every command-line front end uses: errors are one
line with exit status 2, and every tool has --version."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line: 'tool: problem (see tool --help)',
    with --version for every tool."""

    def __init__(self, **kw) -> None:
        kw.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(**kw)
        from psuite._version import __version__

        self.add_argument("--version", action="version", version=f"{self.prog} (psuite) {__version__}")

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def add_output_options(self) -> None:
        """-o FILE and --force, for tools that write a report to a file."""
        self.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of standard output")
        self.add_argument("--force", action="store_true", help="with -o: replace FILE if it exists")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        ns = super().parse_args(args, namespace)
        if getattr(ns, "force", False) and not getattr(ns, "output", None):
            self.error("--force goes with -o/--output")
        return ns
