"""psuite.psrun: a thin Python API over the native psrun command
(csrc/psrun/psrun.c, installed as psuite/_native/psrun and on PATH).

    from psuite import psrun
    psrun.run(["-e", "task-clock", "./app"])   # a subprocess.CompletedProcess

The launcher is a compiled program: measuring a program starts no Python
interpreter."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

_NATIVE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_native")


def executable() -> str:
    """The native psrun shipped in the package (beside libpshwpc.so)."""
    return os.path.join(_NATIVE_DIR, "psrun")


def run(argv: Sequence[str], **kw) -> subprocess.CompletedProcess:
    """Run `psrun ARGV...` (the native command) with subprocess.run's
    keywords; the result's returncode is negative when the program was
    killed by a signal, as for the program itself."""
    return subprocess.run([executable(), *argv], **kw)
