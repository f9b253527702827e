"""moeconsole lives beside anyone's code: one install name, and no process of ours imports from the
user's working directory (ML repositories very often hold a ``runner.py``, ``runner/``,
``console.py``, even a ``moeconsole.py``)."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from moeconsole.runner.process import launch
from tests.runner.conftest import REPO, Run

HOSTILE = {
    "runner.py": "raise SystemExit('the user runner.py was imported')\n",
    "runner/__init__.py": "raise SystemExit('the user runner/ was imported')\n",
    "console.py": "raise SystemExit('the user console.py was imported')\n",
    "moeconsole.py": "raise SystemExit('the user moeconsole.py was imported')\n",
}


def _hostile_dir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    for name, text in HOSTILE.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    return work


def _cli(args: list[str], cwd: Path, runs_dir: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """``moeconsole ARGS`` as the installed console script runs it: the package from its install
    location (here PYTHONPATH), never the current directory."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-P", "-m", "moeconsole", *args, "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def test_a_run_started_among_the_users_runner_console_and_moeconsole_modules_succeeds(tmp_path, runs_dir):
    work = _hostile_dir(tmp_path)
    recipe = REPO / "recipes" / "tiny-moe-cpu.yaml"
    proc = _cli(["run", str(recipe), "--detach", "--name", "clash", "--set", "args.max_steps=6",
                 "--set", "args.step_delay=0", "--set", "args.save_steps=3"], work, runs_dir)
    assert proc.returncode in (0, 1), proc.stderr
    assert "imported" not in proc.stderr, proc.stderr
    run = Run(runs_dir / proc.stdout.strip().splitlines()[0])
    st = run.wait_status("succeeded", "failed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", (st, (run.path / "runner.log").read_text()[-2000:])
    assert st["step"] == 6
    for log in ("runner.log", "train.log"):
        assert "user" not in (run.path / log).read_text(), f"{log} shows a user module was imported"


def test_a_torchrun_run_among_the_users_modules_starts_its_workers_from_the_package(tmp_path, runs_dir):
    """torchrun starts each worker as a Python of its own: the recipe hands it ``{python} -P``, so
    a worker never imports the user's ``moeconsole.py`` either."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = _hostile_dir(tmp_path)
    recipe = REPO / "recipes" / "torchrun-cpu.yaml"
    proc = _cli(["run", str(recipe), "--detach", "--name", "clash-ddp", "--set", "args.max_steps=4",
                 "--set", "args.step_delay=0", "--set", "args.save_steps=2", "--set", f"preflight.port={port}",
                 "--set", f"args.master_port={port}"], work, runs_dir)
    assert proc.returncode in (0, 1), proc.stderr
    run = Run(runs_dir / proc.stdout.strip().splitlines()[0])
    st = run.wait_status("succeeded", "failed", "unsaved", timeout=240)
    assert st["status"] == "succeeded", (st, (run.path / "train.log").read_text()[-3000:])
    assert "imported" not in (run.path / "train.log").read_text()


def test_python_dash_m_moeconsole_is_the_command_line(tmp_path):
    work = _hostile_dir(tmp_path)
    proc = subprocess.run([sys.executable, "-P", "-m", "moeconsole", "--help"], capture_output=True, text=True,
                          cwd=work, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert proc.returncode == 0 and "usage: moeconsole" in proc.stdout, proc.stderr


def test_a_runner_that_never_starts_leaves_the_run_failed_with_the_reason(tmp_path, runs_dir, monkeypatch):
    """The runner dies before it writes a word: the run ends FAILED with a ``launch_failed`` crash
    report naming why (it stayed STARTING for good before)."""
    from moeconsole.runner.recipes.recipe import validate
    run = launch.create_run(runs_dir, validate({"name": "never", "command": ["true"]}))
    monkeypatch.setattr(launch, "runner_argv", lambda r: [sys.executable, "-c",
                                                          "import sys; sys.exit('moeconsole runner: cannot import x')"])
    pid = launch.spawn_runner(run)
    try:
        launch.wait_ready(run, pid, timeout=60)
    except Exception as exc:  # noqa: BLE001 - the refusal is what is asserted
        said = str(exc)
    else:
        raise AssertionError("wait_ready returned for a runner that died")
    assert "did not start" in said and "cannot import x" in said
    st = run.read_state()
    assert st["status"] == "failed"
    assert st["last_crash"]["class"] == "launch_failed" and "cannot import x" in st["last_crash"]["summary"]
    report = json.loads(run.crash_report(0).read_text())
    assert report["class"] == "launch_failed" and report["recovery"] == "fail"
    assert any("cannot import x" in line for line in report["log_tail"])
    ls = _cli(["runs", "ls", "--json"], tmp_path, runs_dir)
    row = next(r for r in json.loads(ls.stdout)["runs"] if r["id"] == run.run_id)
    assert row["status"] == "failed"


def test_no_bare_runner_or_console_import_remains():
    """Everything imports the project as ``moeconsole.*`` (a bare ``runner``/``console`` would clash
    with the user's own modules and with other distributions of those names)."""
    offenders = []
    for folder in ("runner", "console", "moeconsole", "tests", "bench", "scripts"):
        for path in (REPO / folder).rglob("*.py"):
            if "moeconsole/runner" in str(path.relative_to(REPO)) or "moeconsole/console" in str(path.relative_to(REPO)):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                offenders += [f"{path.relative_to(REPO)}:{node.lineno} {n}" for n in names
                              if n.split(".")[0] in ("runner", "console")]
    assert offenders == []
