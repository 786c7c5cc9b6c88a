"""python -m psuite.psrun: the native psrun (psuite/_native/psrun), exec'd
in place of this interpreter, so the program it measures is psrun's own
child as with the installed command."""

import os
import sys

from psuite.psrun import executable

try:
    os.execv(executable(), [executable(), *sys.argv[1:]])
except OSError as exc:
    sys.stderr.write(f"psrun: cannot run the native launcher {executable()}: {exc.strerror}\n")
    sys.exit(2)
