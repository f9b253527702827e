"""Screens of the console: the run screen (live or past), run browser, comparison, log view,
confirmation and help."""
