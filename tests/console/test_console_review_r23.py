"""Review R23's mend of the held training's status word: bounded whatever the number of stopped
processes or the length of the freezing cgroup's path (``state.held_words``), in `--json`, `runs ls`
and the run screen's 80-column status line; state.json's ``held`` keeps every PID and the full path."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from moeconsole.console import format as fmt
from moeconsole.console.commands.runs import ls_table
from moeconsole.runner.rundir import jsonio
from tests.console.test_console_runs import REPO

PIDS = list(range(301200, 301272))   # 72: a whole training stopped with `kill -STOP -- -PGID`
DOCKER = "/system.slice/docker-" + "0123456789abcdef" * 4 + ".scope"   # cgroup v2, systemd driver

CASES = {
    "one group": ({"how": "stopped", "pids": PIDS, "cgroups": [], "pgid": PIDS[0]},
                  "RUNNING (training stopped: kill -CONT -- -301200)"),
    "scattered": ({"how": "stopped", "pids": PIDS, "cgroups": [], "pgid": None},
                  "RUNNING (training stopped: kill -CONT 301200 and 71 more)"),
    "docker": ({"how": "frozen", "pids": PIDS[:8], "cgroups": [DOCKER]},
               "RUNNING (training frozen: thaw docker-0123456789ab.scope)"),
}


def _cli(*args: str, base) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(base)],
                          cwd=REPO, capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_held_trainings_status_word_stays_short_in_every_view_at_80_columns(base, make_run, case):
    """72 stopped PIDs gave a 542-character STATUS cell and an 80-column status line reading
    "RUNNING (training stopped: kill -CONT 301200 301201 301202…" (step and "held 2m" dropped); a
    docker scope's path read "RUNNING (training frozen its cgroup…"."""
    held, word = CASES[case]
    run = make_run(base, "20240105-000000-held-0001", name="qwen3-30b-a3b-lora", status="running", steps=40,
                   runner_pid=os.getpid())
    state = run.read_state()
    state.update(held=held, pgid=PIDS[0], updated_at=time.time())
    jsonio.atomic_write_json(run.state, state)

    out = _cli("--json", "--once", run.run_id, "--no-gpu", base=base)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout.splitlines()[-1])["run"]
    assert doc["status_word"] == word, doc["status_word"]
    line = "".join(t for t, _ in fmt.status_lines(doc, quiet_s=120.0, heartbeat_s=600.0, width=80)[0])
    assert len(line) <= 80, line
    assert word in line, line   # whole: its command, never a list cut mid-way, never a word dropped

    out = _cli("runs", "ls", "--json", base=base)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["runs"]
    assert fmt.state_word(rows[0]) == word
    table = ls_table(rows, 80, time.time()).splitlines()
    assert all(len(t) <= 80 for t in table), table
    assert table[1].startswith(word + "  ") and "qwen3-30b-a3b-lora" in table[1], table
    # the record itself is never cut: every PID and the full path stay in state.json
    kept = run.read_state()["held"]
    assert kept["pids"] == held["pids"] and kept["cgroups"] == held["cgroups"]
