"""Errors that reach the user as one line and exit code 2 (bad input), never a traceback."""


class InputError(Exception):
    """Unreadable file, invalid YAML, unknown run, bad flag value: the user must fix the input."""
