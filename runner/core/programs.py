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

# The interpreter's short options (CPython Python/getopt.c ``SHORT_OPTS``, "bBc:dEhiIm:OPqRsStuvVW:xX:?"):
# those followed by ``:`` take a value, the rest of the cluster or else the next argument (``_PyOS_GetOpt``:
# ``if (*opt_ptr != L'\0') optarg = opt_ptr; else optarg = argv[optind++]``), so ``-um pkg`` is ``-u -m pkg``,
# ``-uc CODE`` is ``-u -c CODE`` and ``-Wignore`` is one option. ``-c`` and ``-m`` end the interpreter's
# options (the rest is the program's argv).
_SHORT_WITH_VALUE = frozenset("cmWX")
# the long options that take a value in the next argument (``longopts``: ``check-hash-based-pycs``)
_LONG_WITH_VALUE = frozenset({"--check-hash-based-pycs"})
STDIN, STRING, MODULE = "<stdin>", "<string>", "-m:"
# a Python interpreter whose command line names no program (it retitled itself: ``setproctitle`` writes over
# ``/proc/PID/cmdline``, as Ray's workers do): any traceback may be its own
UNKNOWN = "?"


def python_program(argv: Sequence[str], cwd: str | None) -> str | None:
    """The program a Python interpreter's ``argv`` runs, as its tracebacks name it: the script's
    absolute path (a relative one joined to ``cwd``), ``<string>`` (``-c``), ``<stdin>`` (no program or
    ``-``), ``-m:NAME`` (a module). None: ``argv[0]`` is no Python interpreter (its base name does not
    start with ``python``: a shebang script's process is its interpreter, the kernel puts it first).
    Short options are walked cluster by cluster as CPython's getopt does (``_SHORT_WITH_VALUE``; review R58)."""
    if not argv or not os.path.basename(argv[0]).startswith("python"):
        return None
    args = iter(argv[1:])
    for a in args:
        if a == "-":
            return STDIN
        if a == "--":   # getopt's end of options: the program follows
            a = next(args, "-")
            return STDIN if a == "-" else _script(a, cwd)
        if a.startswith("--"):
            if a in _LONG_WITH_VALUE:
                next(args, None)
            continue
        if not a.startswith("-"):
            return _script(a, cwd)
        for i, opt in enumerate(a[1:], start=2):
            if opt not in _SHORT_WITH_VALUE:
                continue
            value = a[i:] or next(args, "")
            if opt == "c":
                return STRING
            if opt == "m":
                return MODULE + value if value else None
            break   # -W/-X: the value is the rest of the cluster or the next argument
    return STDIN


def _script(path: str, cwd: str | None) -> str:
    return os.path.normpath(path if os.path.isabs(path) or cwd is None else os.path.join(cwd, path))


# The outermost frame of a traceback the interpreter printed whole: the program's own code
# (``in <module>``: Python/pythonrun.c runs the script, ``-c``'s ``<string>`` or ``<stdin>`` as module code) or
# runpy's entry for ``-m`` and a zip or directory program (Modules/main.c ``pymain_run_module`` calls
# Lib/runpy.py ``_run_module_as_main``). A traceback whose outermost frame is another (Hydra's
# ``run_and_report`` strips its frames down to the ``@hydra.main`` function: hydra/_internal/utils.py; a
# thread's starts at threading.py ``_bootstrap_inner``) does not name the program that printed it.
_ENTRY_FUNCS = frozenset({"<module>", "_run_module_as_main"})


def traceback_complete(frames: Sequence[tuple[str, str]]) -> bool:
    """Whether a traceback's ``frames`` (file, function; outermost first) begin at the program's entry
    (``_ENTRY_FUNCS``) in a file named absolutely (``<string>``, ``<stdin>`` and ``<frozen runpy>`` name
    themselves): only then can its files prove that no process here ran its program (review R58). Python
    3.8 and older print the script as it was typed (``__main__.__file__`` relative: made absolute only from
    3.9, bpo-20443), so a relative outermost frame proves nothing."""
    if not frames:
        return False
    file, func = frames[0]
    return func in _ENTRY_FUNCS and (os.path.isabs(file) or file.startswith("<"))


def _frame_is(file: str, program: str) -> bool:
    if program.startswith(MODULE):
        tail = "/" + program[len(MODULE):].replace(".", "/")
        return file.endswith((tail + ".py", tail + "/__main__.py"))
    if program.startswith("<"):
        return file == program
    file = os.path.normpath(file)
    if not os.path.isabs(file):
        # Python <= 3.8 prints the script as typed, relative to the cwd its process started in, which the
        # program (``python_program``: cwd joined) ends with; leading ``..`` parts are the cwd's own
        parts = file.split(os.sep)
        while parts and parts[0] == os.pardir:
            parts.pop(0)
        return any(program.endswith(os.sep + os.sep.join(parts[:k])) for k in range(1, len(parts) + 1))
    # a zip or directory program (``python app.pyz``, shiv, PEX, ``python src/``): its frames are
    # ``PROGRAM/__main__.py`` and the files inside it (Lib/runpy.py ``_run_module_as_main`` of ``__main__``
    # with the archive first on sys.path)
    return file == program or file.startswith(program + os.sep)


def frames_ran_here(files: Collection[str], programs: Mapping[str, bool] | None) -> bool | None:
    """Whether a traceback whose frames name ``files`` was printed by a process of the attempt
    (``programs``: each program a Python process of the attempt ran, ``python_program``, mapped to
    whether one that ran it was under an address-space limit; None: not watched). True: a frame is a
    program run here under the limit; False: only programs run here free of it (its process raised its
    own soft limit: ``setrlimit``, ``ulimit -v unlimited`` in a wrapper); None: no frame is a program run
    here (or nothing to go on: no frames, not watched, or a Python process here under the limit whose
    program is not known: ``UNKNOWN``, so ``can_tell_program`` is False)."""
    if not files or programs is None:
        return None
    limited = [lim for program, lim in programs.items() if any(_frame_is(f, program) for f in files)]
    if not limited:
        return None
    return any(limited)


def can_tell_program(programs: Mapping[str, bool] | None) -> bool:
    """Whether ``programs`` can tell that no process here ran a traceback's program: watched, and no Python
    process under the limit ran a program its command line did not name (``UNKNOWN``)."""
    return programs is not None and not programs.get(UNKNOWN, False)
