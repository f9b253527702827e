"""Where runs live: one base directory, chosen by flag, then environment, then XDG."""
from __future__ import annotations

import os
from pathlib import Path


def runs_base(cli_value: str | None = None) -> Path:
    if cli_value:
        return Path(cli_value).expanduser()
    env = os.environ.get("MOECONSOLE_RUNS_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "moeconsole" / "runs"
