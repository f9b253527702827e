"""Where runs live: one base directory, chosen by flag, then environment, then XDG."""
from __future__ import annotations

import os
from pathlib import Path


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
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return check_base(Path(xdg) / "moeconsole" / "runs")
