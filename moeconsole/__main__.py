"""``python -m moeconsole``: the same command line as ``moeconsole``."""
import sys

from moeconsole.console.cli import main

sys.exit(main())
