"""One module per ``moeconsole`` command, each with ``run(args) -> exit code``."""

# Where a command to supervise goes, for a `run` that was given one without `--` (the CLI's
# usage error and `run`'s refusal of a recipe that is a script both say it).
RUN_COMMAND_HINT = "a command to run goes after --: `moeconsole run -- python my_train.py`"
