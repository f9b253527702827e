"""The console: Textual UI, ``--json`` output and the ``moeconsole`` command line.
Steers a live runner only through the run directory and its control socket."""
