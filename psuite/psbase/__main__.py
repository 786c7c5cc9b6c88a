import sys

from psuite.psbase.cli import entry

sys.exit(entry())
