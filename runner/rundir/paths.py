"""Where runs live: one base directory, chosen by flag, then environment, then XDG."""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


# The next step where the runs directory cannot be made or written (a read-only or full HOME on
# someone else's cluster): the two ways to choose another, in ``runs_base``'s order.
ELSEWHERE = "runs can live in any directory you can write: `export MOECONSOLE_RUNS_DIR=DIR` (or --runs-dir DIR)"


def runs_base(cli_value: str | None = None) -> Path:
    """The runs directory; one that exists must be a directory (``rundir.check_base``)."""
    from moeconsole.runner.rundir.rundir import check_base
    if cli_value is not None:
        if not cli_value.strip():
            from moeconsole.runner.core.errors import InputError
            raise InputError("--runs-dir is empty: give a directory")
        return check_base(Path(cli_value).expanduser())
    env = os.environ.get("MOECONSOLE_RUNS_DIR")
    if env:
        return check_base(Path(env).expanduser())
    return check_base(data_home(os.environ) / "moeconsole" / "runs")


def runs_dir_words(base: Path) -> str:
    """What a printed command needs to find a run under ``base``: nothing when ``base`` is the
    runs directory a bare command uses (``runs_base(None)``: environment, then XDG), else
    `` --runs-dir DIR`` (a shell word, ``shellwords.quote``). Without it `moeconsole kill c282` printed for a run
    under ``--runs-dir /other`` looked in the default directory, where ``c282`` may name another
    run (reviewed, R29)."""
    from moeconsole.runner.core import shellwords
    from moeconsole.runner.core.errors import InputError
    try:
        default = runs_base(None)
        if default.resolve() == base.resolve():
            return ""
    except (InputError, OSError):
        pass
    return f" --runs-dir {shellwords.quote(str(base))}"


def data_home(environ: Mapping[str, str]) -> Path:
    """The user's data directory, the same from every working directory: ``$XDG_DATA_HOME`` when
    it is an absolute path (the XDG Base Directory spec: a relative one is invalid and ignored),
    else ``~/.local/share``, ``~`` being ``$HOME`` when that is an absolute path, else the home
    directory of the user's password entry. A relative value had put the runs under the working
    directory: ``moeconsole run`` in one directory and ``moeconsole`` in another did not find
    the run (and an empty HOME meant ``/``)."""
    xdg = environ.get("XDG_DATA_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg)
    home = environ.get("HOME", "")
    if not os.path.isabs(home):
        import pwd
        try:
            home = pwd.getpwuid(os.getuid()).pw_dir
        except KeyError:   # no password entry (a container's arbitrary uid): the HOME as it is
            home = home or "/"
    return Path(home) / ".local" / "share"
