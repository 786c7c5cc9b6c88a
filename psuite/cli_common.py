"""What every command-line front end shares: one-line errors with exit
status 2 and safe input and output files.  (The shared argparse parser is
in cli_parser, so that psrun's fast path does not import argparse.)"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Sequence

from psuite.errors import InputError, PsuiteError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a few ms of start-up, paid by every psrun
    from typing import IO



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
