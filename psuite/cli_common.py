"""What every command-line front end shares: one-line errors with exit
status 2, argparse that speaks the same way, and safe output files."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Sequence
from typing import IO, NoReturn

from psuite.errors import InputError, PsuiteError, UsageError


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


def run_cli(tool: str, main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    """Call main; turn psuite's errors into 'tool: message' and exit 2."""
    try:
        return main(argv)
    except PsuiteError as exc:
        print(f"{tool}: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def open_output(path: str, force: bool = False, binary: bool = False) -> IO:
    """Open a new output file.  An existing file is kept unless force is
    given; errors name the path and the fix."""
    mode = ("w" if force else "x") + ("b" if binary else "")
    try:
        return open(path, mode, **({} if binary else {"encoding": "utf-8"}))
    except FileExistsError:
        raise UsageError(f"{path} exists; choose another name or pass --force to replace it") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory; give a file name") from None
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise UsageError(f"cannot write {path}: its directory does not exist") from None
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def read_input(path: str) -> bytes:
    """Whole contents of an input file, with one-line errors."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory; give a file") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
