import sys

from psuite.psrun.cli import entry

sys.exit(entry())
