"""`moeconsole kill` ends the whole real ms-swift tree (the `swift sft` wrapper and its trainer
child), and `moeconsole restart` resumes ms-swift from the newest verified checkpoint."""
from __future__ import annotations

import json
from pathlib import Path

import psutil

from moeconsole.runner.checkpoints.watch import latest_good
from tests.swift.swift_helpers import Run, cli, require_swift, running, start
from tests.waiting import reached

# Long enough that the kill lands mid-training; short saves so a checkpoint comes within a second.
OVERRIDES = ("args.max_steps=400", "args.save_steps=5")


def tree_of(run: Run) -> dict[int, float]:
    """Wait until the runner tracks the wrapper and the trainer; check which is which; return them."""
    def both(state: dict) -> bool:
        return len(state.get("pids") or []) >= 2 and bool(run.ok_checkpoints()) and (state.get("step") or 0) > 0
    state = run.wait(both, "wrapper + trainer tracked and a verified checkpoint")
    pids = {p["pid"]: p for p in state["pids"]}
    (leader,) = [p for p in state["pids"] if p["role"] == "leader"]
    wrapper = psutil.Process(leader["pid"])
    assert "sft" in wrapper.cmdline() and Path(wrapper.cmdline()[1]).name == "swift"
    children = [(pid, _cmdline(pid), _ppid(pid)) for pid in pids if pid != leader["pid"]]
    assert any(ppid == wrapper.pid and any(a.endswith("swift/cli/sft.py") for a in cmd)
               for _pid, cmd, ppid in children), children
    return {pid: p["start_time"] for pid, p in pids.items()}


def kill_and_check_gone(run: Run) -> dict[int, float]:
    tree = tree_of(run)
    proc = cli(run.path.parent, "kill", run.id)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("killed"), proc.stdout + proc.stderr
    left = [pid for pid, created in tree.items() if running(pid, created)]
    assert left == [], f"still running after moeconsole kill: {left}"
    assert run.state()["status"] == "killed"
    assert run.events("kill_done")[-1]["survivors"] == []
    return tree


def test_kill_then_restart(swift_runs, tiny):
    """Kill ends wrapper + trainer; restart resumes from the newest verified checkpoint; kill again."""
    require_swift()
    run = start(swift_runs, tiny, *OVERRIDES)
    first_tree = kill_and_check_gone(run)
    assert json.loads((run.path / "crashes" / "attempt-1.json").read_text())["class"] == "user_kill"
    steps_before = [m["step"] for m in run.metrics(1)]
    expected = latest_good(run.path / "output", expected_recipe_hash=run.state()["recipe_hash"])
    newest_ok = max(run.ok_checkpoints(), key=lambda e: e["step"])
    assert expected is not None and str(expected.path) == newest_ok["path"]
    assert expected.step <= steps_before[-1] < 400

    proc = cli(swift_runs, "restart", run.id)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"resumed from {expected.path}" in proc.stdout
    state = run.wait(lambda s: s.get("attempt") == 2 and len(run.metrics(2)) >= 3, "attempt 2 steps")
    assert state["resumed_from"] == str(expected.path)
    # ms-swift really resumed: its argument dump names the checkpoint and the steps go on after it.
    log = (run.path / "train.log").read_text(errors="replace")
    attempt2 = log[log.index("=== moeconsole: attempt 2 start"):]
    assert f"resume_from_checkpoint={expected.path}," in attempt2
    assert [m["step"] for m in run.metrics(2)][:3] == [expected.step + 1, expected.step + 2, expected.step + 3]
    # A resume writes into a new v<N>-<time>/ dir; its checkpoints are found and verified too.
    run.wait(lambda s: any(e.get("attempt") == 2 and e["step"] > expected.step for e in run.ok_checkpoints()),
             "a verified checkpoint of attempt 2")
    new = [e for e in run.ok_checkpoints() if e.get("attempt") == 2]
    assert all(Path(e["path"]).parent != expected.path.parent for e in new)
    assert len(list((run.path / "output").glob("v*-*"))) == 2

    second_tree = kill_and_check_gone(run)
    assert not set(second_tree) & set(first_tree)
    everything = {**first_tree, **second_tree}
    # and reaped: no zombie is left behind either
    reached(lambda: not any(_exists(p, c) for p, c in everything.items()), timeout=60)
    assert [p for p, c in everything.items() if _exists(p, c)] == []


def _cmdline(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.NoSuchProcess:
        return []


def _ppid(pid: int) -> int | None:
    try:
        return psutil.Process(pid).ppid()
    except psutil.NoSuchProcess:
        return None


def _exists(pid: int, created: float) -> bool:
    """Any process (a zombie included) that is this pid with this start time."""
    try:
        return abs(psutil.Process(pid).create_time() - created) < 0.05
    except psutil.NoSuchProcess:
        return False
