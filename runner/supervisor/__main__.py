"""``python -m moeconsole.runner.supervisor RUN_DIR``: the runner's own command line."""
import sys

from moeconsole.runner.supervisor.supervisor import main

sys.exit(main())
