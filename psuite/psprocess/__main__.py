import sys

from psuite.psprocess.cli import entry

sys.exit(entry())
