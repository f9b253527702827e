"""Attempt engines: how an attempt's processes are started, watched and ended (``runner.process.attempt``)."""
