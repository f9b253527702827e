"""The pure core: the run lifecycle, the typed state, restart policy, monitors, crash classes and
chart series. Imports no I/O layer of the runner: everything here is a function of plain data."""
