"""One module per ``moeconsole`` command, each with ``run(args) -> exit code``."""
