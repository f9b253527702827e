"""A run directory a newer moeconsole writes, read by this one (a console left open across an
upgrade, ``kill``/``runs ls``/``--json`` of the older version still on the PATH).

The contract (docs/run-directory.md, "Versions"): a newer runner of the same schema ``v`` only
adds keys; every reader ignores a key it does not know, and a runner of this version rewriting the
state carries the newer top-level keys as they were. A newer ``v`` is another schema: refused with
one line, never taken over. Real runs of the real runner, the real CLI, the real Textual app."""
from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path

import pytest

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.runner.rundir import rundir
from tests.runner.conftest import NO_SAVES, Harness
from tests.waiting import until, until_ui

SLEEPER = ["{python}", "-c", "import time\nprint(\"{'loss': '1.0', 'global_step/max_steps': '1/100'}\", "
                             "flush=True)\ntime.sleep(600)\n"]
NEWER = {"gpu_topology": {"nvlink": [[0, 1]], "v": 1}, "energy_j": 12.5}   # keys a newer runner writes


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def _replace_json(path: Path, change) -> None:
    """The file with ``change(doc)`` applied, replaced atomically (as its writer replaces it)."""
    doc = json.loads(path.read_text())
    change(doc)
    tmp = path.with_name(path.name + ".newer")
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, path)


def _add_to_lines(path: Path, extra: dict) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps({**rec, **extra}) + "\n" for rec in lines))


def test_a_live_run_with_a_newer_runners_keys_is_read_live_by_every_reader_and_killed(harness, runs_dir):
    run = harness.start(harness.recipe(command=SLEEPER, **NO_SAVES))
    first = run.wait(lambda s: s.get("status") == "running" and s.get("step") == 1, what="the first step")

    def newer(doc: dict) -> None:
        doc.update(NEWER)
        doc["runner"]["zone"] = "rack 4"    # a newer key inside a record too
    state = run.path / "state.json"

    def replaced_and_kept() -> bool:
        # the live runner may read state.json just before this replace and write after it (its own
        # read-modify-write): that write drops the keys; replace again until one of its writes keeps them
        _replace_json(state, newer)
        written = json.loads(state.read_text()).get("updated_at", 0)
        st = run.wait(lambda s: s.get("updated_at", 0) > written, what="the runner's next write")
        return all(st.get(k) == v for k, v in NEWER.items())
    until(replaced_and_kept, 120, what="a runner write that keeps the newer keys")
    _add_to_lines(run.path / "events.jsonl", {"trace_id": "abc"})
    _add_to_lines(run.path / "metrics.jsonl", {"moe_aux_loss": 0.01})
    # the live runner rewrites state.json and keeps what it does not know
    st = run.wait(lambda s: s.get("updated_at", 0) > first["updated_at"] + 2 and "runner" in s,
                  what="the runner's next writes")
    assert {k: st.get(k) for k in NEWER} == NEWER, st

    with sqlite3.connect(runs_dir / "index.sqlite") as index:   # a newer version's column in the index
        index.execute("ALTER TABLE runs ADD COLUMN energy_j REAL")
    ls = harness.cli("runs", "ls", "--json", check=True)
    row = {r["id"]: r for r in json.loads(ls.stdout)["runs"]}[run.id]
    assert row["status"] == "running" and not row.get("problem"), row
    snap = json.loads(harness.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    assert snap["run"]["status_word"] == "RUNNING" and not snap["run"].get("damaged"), snap["run"]
    assert snap["run"]["step"] == 1

    async def screen() -> dict:
        app = MoeConsole(runs_dir, rundir.RunDir(run.path), interval=0.2, gpu=False, host=None)
        async with app.run_test(size=(120, 40)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None,
                           timeout=60, what="the run screen")
            return dict(app.screen.snapshot.run)
    shown = asyncio.run(screen())
    assert shown["status_word"] == "RUNNING" and not shown.get("damaged"), shown

    kill = harness.cli("kill", run.id, "--grace", "2")
    assert kill.returncode == 0 and kill.stdout.strip() == f"{run.id}: killed", kill.stdout + kill.stderr
    assert "None" not in kill.stderr, kill.stderr
    end = run.wait_status("killed")
    assert {k: end.get(k) for k in NEWER} == NEWER, end


def test_a_newer_runners_crash_report_and_exit_record_are_read_not_damaged(harness):
    run = harness.start(harness.recipe(command=["sh", "-c", "sleep 0.2; exit 3"], restart={"max_restarts": 0}))
    run.wait_status("failed")
    until(lambda: not rundir.runner_locked(rundir.RunDir(run.path)), what="its runner to exit")
    cls = run.crash(1)["class"]
    _replace_json(run.path / "crashes" / "attempt-1.json", lambda d: d.update(power_w=700.0))
    _replace_json(run.path / "exits" / "attempt-1.json", lambda d: d.update(cgroup="/run.slice"))
    show = harness.cli("runs", "show", run.id, check=True)
    assert "damaged" not in show.stdout and cls in show.stdout, show.stdout
    snap = json.loads(harness.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    assert snap["crashes"][0]["class"] == cls and snap["crashes"][0]["attempt"] == 1, snap["crashes"]


def test_a_newer_schema_is_refused_in_one_line_and_never_taken_over(harness):
    run = harness.start(harness.recipe(command=["sleep", "0.3"], **NO_SAVES))
    run.wait_status("succeeded")
    until(lambda: not rundir.runner_locked(rundir.RunDir(run.path)), what="its runner to exit")
    _replace_json(run.path / "state.json", lambda d: d.update(v=2, status="drained"))
    (harness.runs_dir / "index.sqlite").unlink()   # an ended run's row is not read again: rebuilt from the dirs
    said = "state.json: written by a newer moeconsole (schema v2; this one reads v1)"
    rows = {r["id"]: r for r in json.loads(harness.cli("runs", "ls", "--json", check=True).stdout)["runs"]}
    assert rows[run.id]["status"] == "damaged" and said in rows[run.id]["problem"], rows[run.id]
    sup = harness.cli("supervise", run.id)
    lines = sup.stderr.strip().splitlines()
    assert sup.returncode == 2 and len(lines) == 1 and said in lines[0], sup.stderr
    assert "no runner of this version takes it over" in lines[0]
    assert json.loads((run.path / "state.json").read_text())["v"] == 2, "the newer file is left as it is"
