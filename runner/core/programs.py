"""Which Python program a process runs, and whether a traceback's frames are of one: the proof that a
refusal a traceback printed came from a process the runner watched (round 20).

A Python interpreter names the program it runs in every traceback it prints: the script's path as
``__main__.__file__`` (made absolute at start-up since 3.9: Modules/main.c ``pymain_run_python`` and
Python/pylifecycle.c ``_PyPathConfig_ComputeSysPath0``), ``<string>`` for ``-c`` and ``<stdin>`` for a
program read from standard input (Python/pythonrun.c ``_PyRun_SimpleStringFlagsWithName``,
``PyRun_AnyFileExFlags``), a module's own file for ``-m`` (Lib/runpy.py ``_run_module_as_main``). A
traceback none of whose frames is a program a process of the attempt ran here was printed by a process
the runner never had: work a client (``ray job submit``, ``enroot``, a site's ``remote.sh``) ran
elsewhere, under that place's limits. Pure.
"""
from __future__ import annotations

import os
from typing import Collection, Mapping, Sequence

# The interpreter's options that take a value in the next argument (Modules/main.c, ``python --help``):
# the program follows them.
_VALUE_OPTIONS = frozenset({"-W", "-X", "--check-hash-based-pycs"})
# ``-m`` and ``-c`` end the interpreter's options (the rest is the program's argv)
STDIN, STRING, MODULE = "<stdin>", "<string>", "-m:"
# a Python interpreter whose command line names no program (it retitled itself: ``setproctitle`` writes over
# ``/proc/PID/cmdline``, as Ray's workers do): any traceback may be its own
UNKNOWN = "?"


def python_program(argv: Sequence[str], cwd: str | None) -> str | None:
    """The program a Python interpreter's ``argv`` runs, as its tracebacks name it: the script's
    absolute path (a relative one joined to ``cwd``), ``<string>`` (``-c``), ``<stdin>`` (no program or
    ``-``), ``-m:NAME`` (a module). None: ``argv[0]`` is no Python interpreter (its base name does not
    start with ``python``: a shebang script's process is its interpreter, the kernel puts it first)."""
    if not argv or not os.path.basename(argv[0]).startswith("python"):
        return None
    args = iter(argv[1:])
    for a in args:
        if a == "-c" or (a.startswith("-c") and not a.startswith("--")):
            return STRING
        if a == "-m":
            mod = next(args, "")
            return MODULE + mod if mod else None
        if a.startswith("-m") and not a.startswith("--"):
            return MODULE + a[2:]
        if a == "-":
            return STDIN
        if a in _VALUE_OPTIONS:
            next(args, None)
            continue
        if a.startswith("-"):
            continue
        path = a if os.path.isabs(a) or cwd is None else os.path.join(cwd, a)
        return os.path.normpath(path)
    return STDIN


def _frame_is(file: str, program: str) -> bool:
    if program.startswith(MODULE):
        tail = "/" + program[len(MODULE):].replace(".", "/")
        return file.endswith((tail + ".py", tail + "/__main__.py"))
    if program.startswith("<"):
        return file == program
    return os.path.normpath(file) == program


def frames_ran_here(files: Collection[str], programs: Mapping[str, bool] | None) -> bool | None:
    """Whether a traceback whose frames name ``files`` was printed by a process of the attempt
    (``programs``: each program a Python process of the attempt ran, ``python_program``, mapped to
    whether one that ran it was under an address-space limit; None: not watched). True: a frame is a
    program run here under the limit; False: only programs run here free of it (its process raised its
    own soft limit: ``setrlimit``, ``ulimit -v unlimited`` in a wrapper); None: no frame is a program run
    here (or nothing to go on: no frames, not watched, or a Python process here under the limit whose
    program is not known: ``UNKNOWN``, so ``settled`` is False)."""
    if not files or programs is None:
        return None
    limited = [lim for program, lim in programs.items() if any(_frame_is(f, program) for f in files)]
    if not limited:
        return None
    return any(limited)


def settled(programs: Mapping[str, bool] | None) -> bool:
    """Whether ``programs`` can tell that no process here ran a traceback's program: watched, and no Python
    process under the limit ran a program its command line did not name (``UNKNOWN``)."""
    return programs is not None and not programs.get(UNKNOWN, False)
