# Run by `make` with the interpreter it is about to build .venv/ from ($(PYTHON)), before anything is
# created: one line and exit 2 where that interpreter cannot make a working .venv. Written for any
# Python a login node may have (3.6 on RHEL 8, 2.7 even): no f-strings, no tomllib, no annotations.
#
# Two ways the next steps fail with a misleading message (newcomer round 7):
# - a Python older than pyproject.toml's requires-python: pip's first error is about torch
#   ("Cannot install torch==2.13.0 ... conflicting dependencies"), not about Python;
# - Debian's / Ubuntu's python3 without the python3.X-venv package: `venv` is there but `ensurepip` is
#   not (Debian ships ensurepip in python3.X-venv), and `python3 -m venv` leaves a .venv with no pip.
import os
import re
import sys


class Unreadable(Exception):
    """pyproject.toml has a requires-python this check cannot read a floor from."""


def required_version(pyproject):
    """(3, 11) from pyproject.toml's `requires-python = ">=3.11"` (the one place the floor is written;
    single quotes, `~=3.11` and a list such as ">=3.11,<4" as well); None where there is no
    requires-python; Unreadable where there is one with no `>=`/`~=` floor (it is not passed over)."""
    with open(pyproject) as fh:
        text = fh.read()
    line = re.search(r"""^requires-python\s*=\s*(["'])(.*?)\1""", text, re.M)
    if line is None:
        if re.search(r"^requires-python\s*=", text, re.M):
            raise Unreadable(re.search(r"^requires-python\s*=.*$", text, re.M).group(0).strip())
        return None
    found = re.search(r"(?:>=|~=)\s*(\d+)\.(\d+)", line.group(2))
    if found is None:
        raise Unreadable(line.group(0).strip())
    return int(found.group(1)), int(found.group(2))


def problem(pyproject, python_name, again="make"):
    try:
        need = required_version(pyproject)
    except Unreadable as exc:
        return ("cannot read the lowest Python moeconsole needs from pyproject.toml's `%s` (a `>=X.Y` or "
                "`~=X.Y` is expected)" % exc.args[0])
    have = sys.version_info[:2]
    shown = "%s is Python %d.%d.%d" % (python_name, have[0], have[1], sys.version_info[2])
    if need is not None and have < need:
        return ("%s; moeconsole needs %d.%d or newer: %s PYTHON=python%d.%d (or the path of a conda, uv or "
                "`module load` Python %d.%d+)" % (shown, need[0], need[1], again, need[0], need[1], need[0], need[1]))
    try:
        import venv  # noqa: F401
        import ensurepip  # noqa: F401
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "venv"
        other = "another Python %d.%d+" % need if need else "another Python"
        return ("%s without the %s module, so it cannot make .venv/ with pip in it: install "
                "python%d.%d-venv (Debian/Ubuntu), or %s PYTHON=the path of %s (conda, uv, "
                "`module load`)" % (shown, missing, have[0], have[1], again, other))
    return None


def main():
    python_name = sys.argv[1] if len(sys.argv) > 1 else sys.executable
    again = sys.argv[2] if len(sys.argv) > 2 else "make"   # the make command the user ran: `make demo`
    pyproject = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml")
    said = problem(pyproject, python_name, again)
    if said is not None:
        sys.stderr.write("make: " + said + "\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
