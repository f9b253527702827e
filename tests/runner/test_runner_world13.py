"""The supervised run in a hostile world, round 13. Each test drives the real CLI, the real
detached runner and real processes (a real cgroup freezer, real signals, libfaketime), and
asserts on what the user sees: state.json, `--json --once`, `runs show`, `runs ls`, the status
line the run screen draws."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys


from moeconsole.console import format as fmt
from tests.runner.conftest import REPO
from tests.runner.test_runner_world12 import ONE_ATTEMPT, _run_pids, _steady, freeze, freezer, thaw
from tests.waiting import until


def _cli(*args: str, runs_dir, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    full.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(runs_dir)],
                          capture_output=True, timeout=120, env=full, cwd=REPO)


def _shown(run_id: str, runs_dir) -> dict:
    """`--json --once`'s run, as a user's script reads it."""
    out = _cli("--json", "--once", run_id, "--no-gpu", runs_dir=runs_dir)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.decode().splitlines()[-1])["run"]


def _views_say(run, runs_dir, word: str) -> None:
    """`--json`, `runs show`, `runs ls` (text and JSON) and the run screen's status line all say ``word``."""
    doc = _shown(run.id, runs_dir)
    assert doc["status_word"] == word and doc["eta_s"] is None, doc
    assert word.encode() in _cli("runs", "show", run.id, runs_dir=runs_dir).stdout
    row = next(r for r in json.loads(_cli("runs", "ls", "--json", runs_dir=runs_dir).stdout)["runs"]
               if r["id"] == run.id)
    assert fmt.state_word(row) == word, row
    line = "".join(text for text, _ in fmt.status_lines(doc, quiet_s=120.0, heartbeat_s=4.0)[0])
    assert word in line and "held 2m" in line and "quiet" not in line and "ETA" not in line, line


def test_a_training_frozen_by_its_cgroup_is_said_frozen_in_every_view_and_not_once_thawed(harness):
    """The training frozen by its cgroup while the runner runs (round 12's open item): only the
    `stopped` warning said so; state.json, `--json`, `runs show`, `runs ls` and the status line
    said RUNNING with an ETA and "quiet 2m (hang limit 4s)". state.json's ``held`` is the one fact
    (the runner sets it and clears it), and every view says "RUNNING (training frozen by its
    cgroup CGROUP: thaw it)" from it, with no ETA; once thawed it is gone within a recheck."""
    run = harness.start(harness.recipe(command=_steady(40), heartbeat={"timeout_s": 4, "startup_s": 60},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    with freezer() as group:
        pids = _run_pids(st)
        freeze(group, pids)
        st = run.wait(lambda s: s.get("held"), 60, what="state.json to say the training is held")
        assert st["held"] == {"how": "frozen", "pids": sorted(st["held"]["pids"]), "cgroups": [f"/{group.name}"]}, st
        assert set(st["held"]["pids"]) <= set(pids), (st["held"], pids)
        _views_say(run, harness.runs_dir, f"RUNNING (training frozen by its cgroup /{group.name}: thaw it)")
        thaw(group)
        st = run.wait(lambda s: s.get("held") is None, 60, what="state.json to forget the freeze")
    assert _shown(run.id, harness.runs_dir)["status_word"] in ("RUNNING", "SUCCEEDED")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=180)
    assert st["status"] == "succeeded" and st.get("held") is None, (st, run.events("crash"))
    assert [m["step"] for m in run.metrics()] == list(range(1, 41))


def test_a_training_stopped_by_sigstop_is_said_stopped_in_every_view_until_continued(harness):
    """The training's leader stopped (SIGSTOP, a debugger): the same fact, "training stopped:
    kill -CONT PID", in every view while it lasts; gone once continued, silent or not."""
    run = harness.start(harness.recipe(command=_steady(30), heartbeat={"timeout_s": 4, "startup_s": 60},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    leader = next(int(p["pid"]) for p in st["pids"] if p.get("role") == "leader")
    os.kill(leader, signal.SIGSTOP)
    try:
        st = run.wait(lambda s: s.get("held"), 60, what="state.json to say the training is held")
        assert st["held"] == {"how": "stopped", "pids": [leader], "cgroups": []}, st
        _views_say(run, harness.runs_dir, f"RUNNING (training stopped: kill -CONT {leader})")
    finally:
        os.kill(leader, signal.SIGCONT)
    run.wait(lambda s: s.get("held") is None, 60, what="state.json to forget the stop")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=180)
    assert st["status"] == "succeeded", (st, run.events("crash"))
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"]
