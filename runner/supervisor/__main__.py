"""``python -m runner.supervisor RUN_DIR``: the runner's own command line."""
import sys

from runner.supervisor.supervisor import main

sys.exit(main())
