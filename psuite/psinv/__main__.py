import sys

from psuite.psinv.cli import entry

sys.exit(entry())
