"""Attempt engines: how an attempt's processes are started, watched and ended (``moeconsole.runner.process.attempt``)."""
