"""``moeconsole restart RUN --from CHECKPOINT`` to a live runner from before ``--from``: its control
parser refuses the request's unknown field (msgspec's ``Object contains unknown field `resume_from```);
the command says in one line what the user can do instead of passing that refusal on."""
from __future__ import annotations

import os
import subprocess
import sys

import yaml

from moeconsole.runner.process.proctree import start_time
from moeconsole.runner.rundir import jsonio, rundir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_restart_from_to_an_older_runner_says_to_kill_and_restart(base, make_run, fake_runner):
    from tests.checkpoints.conftest import write_adapter
    run = make_run(base, "20260101-000000-old-ab12", status="paused", steps=8, runner_pid=os.getpid())
    state = run.read_state()
    root = run.path / "ckpt"
    write_adapter(root / "checkpoint-4")
    jsonio.atomic_write_json(run.state, {**state, "checkpoint_root": str(root),
                                         "runner": {**state["runner"], "start_time": start_time(os.getpid())}})
    recipe = yaml.safe_load(run.recipe.read_text())
    run.recipe.write_text(yaml.safe_dump({**recipe, "resume": {"arg": "--resume_from_checkpoint"}}))
    old = fake_runner(run, {"ok": False, "message": "restart: Object contains unknown field `resume_from`"})
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "restart", run.run_id, "--from",
                          "checkpoint-4", "--runs-dir", str(base)], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert old.requests and old.requests[-1].get("resume_from") == str(root / "checkpoint-4"), old.requests
    last = out.stderr.strip().splitlines()[-1]
    typed = rundir.command_ref(base, run.run_id)[1]   # the run as a shell types it: --runs-dir BASE
    assert last == (f"{run.run_id}: this run's runner is older and cannot take --from; kill it and restart "
                    f"(`moeconsole kill {typed}`, then `moeconsole restart {typed} --from checkpoint-4`)"), \
        out.stderr
    assert "unknown field" not in out.stderr and "Traceback" not in out.stderr
    assert rundir.RunDir(run.path).read_state()["status"] == "paused"
