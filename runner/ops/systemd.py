"""A systemd unit that keeps a recipe's runner alive across reboots and runner deaths.

The unit's main process is the runner itself (``moeconsole service RECIPE`` execs it in the
foreground). Design choices, each for a reason:

- ``Restart=always`` with ``RestartPreventExitStatus=0 2``: a runner that dies (SIGKILL, OOM,
  a bug) is started again and adopts the live training; a runner that exits 0 (the run is over,
  or it was asked to stop) or 2 (the recipe is unusable) stays down, so a finished run is never
  started again by a reboot.
- ``KillMode=process``: stopping or restarting the unit ends only the runner. Training is never
  signalled by systemd; it is ended only by the runner's own clean kill (``moeconsole kill RUN``:
  SIGTERM, grace, SIGKILL, proof that nothing survives).
- ``RestartSec`` is the recipe's cooldown floor: the same pause the runner itself observes.
- ``EnvironmentFile=-``: secrets (HF_TOKEN, ...) live in a 0600 file outside the recipe and the
  run directory; the leading ``-`` lets the unit start without one.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class UnitSpec:
    recipe_path: Path           # absolute
    recipe_name: str
    moeconsole: Path            # absolute path of the moeconsole executable
    runs_dir: Path              # absolute
    restart_sec: float
    working_dir: Path
    env_file: Path
    overrides: tuple[str, ...] = ()
    user_unit: bool = False
    user: str | None = None     # system units: the account that runs the runner


def unit_name(recipe_name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in recipe_name).strip("-") or "run"
    return f"moeconsole-{safe}.service"


def _arg(value: str) -> str:
    """One ExecStart word: systemd splits like a shell but expands % and $ itself."""
    quoted = shlex.quote(value)
    return quoted.replace("%", "%%").replace("$", "$$")


class UnitError(ValueError):
    """A value systemd cannot take in a unit file."""


def _check_path(what: str, p: Path) -> None:
    text = str(p)
    if not p.is_absolute():
        raise UnitError(f"{what} {text!r} must be an absolute path")
    if any(c.isspace() or ord(c) < 32 or c in "%$\\\"'" for c in text):
        raise UnitError(f"{what} {text!r}: paths with spaces, quotes, %, $ or control characters "
                        "cannot be written into a unit; move it")


def unit_text(spec: UnitSpec) -> str:
    for what, p in (("recipe", spec.recipe_path), ("moeconsole", spec.moeconsole), ("runs dir", spec.runs_dir),
                     ("working directory", spec.working_dir), ("environment file", spec.env_file)):
        _check_path(what, p)
    exec_start = [str(spec.moeconsole), "service", str(spec.recipe_path), "--runs-dir", str(spec.runs_dir)]
    for ov in spec.overrides:
        exec_start += ["--set", ov]
    restart_sec = max(1, int(round(spec.restart_sec)))
    lines = [
        "[Unit]",
        f"Description=moeconsole runner for recipe {spec.recipe_name}",
        f"Documentation=file://{spec.recipe_path}",
        "After=network-online.target",
        "Wants=network-online.target",
        "StartLimitIntervalSec=0",
        "",
        "[Service]",
        "Type=simple",
        f"WorkingDirectory={spec.working_dir}",
        f"EnvironmentFile=-{spec.env_file}",
        f"Environment=MOECONSOLE_RUNS_DIR={spec.runs_dir}",
        "ExecStart=" + " ".join(_arg(a) for a in exec_start),
        "Restart=always",
        f"RestartSec={restart_sec}",
        "RestartPreventExitStatus=0 2",
        "KillMode=process",
        "KillSignal=SIGTERM",
        "TimeoutStopSec=30",
        "UMask=0077",
    ]
    if not spec.user_unit and spec.user:
        lines.append(f"User={spec.user}")
    lines += ["", "[Install]", f"WantedBy={'default.target' if spec.user_unit else 'multi-user.target'}", ""]
    return "\n".join(lines)
