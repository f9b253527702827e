"""Operations inside a real supervised run: the recipe's metrics section starts an exporter
beside the runner, its notify section posts to a loopback webhook, and its sync section copies
each verified checkpoint to persistent storage, with the lag in state.json and --json."""
from __future__ import annotations

import http.server
import json
import threading
import urllib.request

import pytest

from tests.ops.ops_helpers import read_json, wait_for
from tests.runner.conftest import Harness


class _Hook(http.server.BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def do_POST(self):  # noqa: N802
        n = int(self.headers.get("Content-Length") or 0)
        type(self).bodies.append(json.loads(self.rfile.read(n)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def hook():
    _Hook.bodies = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_metrics_notify_and_sync_in_a_real_run(tmp_path, runs_dir, hook):
    h = Harness(tmp_path, runs_dir)
    keep = tmp_path / "persistent"
    recipe = h.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                               "--max_steps", "24", "--save_steps", "4", "--step_delay", "0.15",
                               "--fault", "segv@6#1"],
                      metrics={"port": 0, "interval_s": 0.2},
                      notify={"webhook": f"http://127.0.0.1:{hook.server_address[1]}/x", "min_interval_s": 0},
                      sync={"dest": str(keep), "keep_last": 2, "retry_s": 0.5})
    run = h.start(recipe)
    bound = wait_for(lambda: read_json(run.path / "exporter.json"), 120, "the exporter")
    assert bound["addr"] == "127.0.0.1"
    wait_for(lambda: (run.state().get("step") or 0) >= 8, 180, "steps after the restart")
    with urllib.request.urlopen(f"http://127.0.0.1:{bound['port']}/metrics", timeout=30) as resp:
        text = resp.read().decode()
    assert f'moeconsole_crashes_total{{class="segfault",run_id="{run.id}"}} 1.0' in text
    assert f'moeconsole_run_status{{run_id="{run.id}",status="running"}} 1.0' in text
    st = run.wait_status("succeeded", "failed", timeout=240)
    assert st["status"] == "succeeded"
    # every notification kind the run produced: the crash and the end
    wait_for(lambda: {b["kind"] for b in _Hook.bodies} >= {"crash", "end"}, 60, "notifications")
    crash = next(b for b in _Hook.bodies if b["kind"] == "crash")
    assert crash["run_id"] == run.id and crash["event"]["class"] == "segfault"
    # sync: the newest good checkpoints copied, retention kept two, the lag is gone
    final = wait_for(lambda: (s := run.state().get("sync")) and s.get("last_synced_step") == 24 and s, 120,
                     "the last checkpoint synced")
    assert final["pending"] is None and final["failures"] == 0
    kept = sorted(p.name for p in keep.iterdir())
    # retention keeps two copies, the newest always (a save superseded while another copied is skipped)
    assert len(kept) == 2 and "checkpoint-24" in kept, kept
    assert [e for e in run.events("sync") if e.get("ok")]
    snap = h.cli("--json", run.id, "--once", "--no-gpu", check=True)
    assert json.loads(snap.stdout)["run"]["sync"]["last_synced_step"] == 24
    # the exporter ends with its runner
    wait_for(lambda: not _alive(bound["pid"]), 60, "the exporter to exit")


def _alive(pid: int) -> bool:
    import os
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_a_runner_waiting_on_the_last_sync_still_answers_control(tmp_path, runs_dir):
    """After the run ends the runner waits for the last checkpoint's copy (here one that can
    never happen). Meanwhile `status` is answered and commands are refused with the reason,
    instead of hanging until the client gives up; SIGTERM still ends the runner at once."""
    import os
    import signal

    from moeconsole.runner.supervisor import control
    h = Harness(tmp_path, runs_dir)
    not_a_dir = tmp_path / "not-a-dir"
    not_a_dir.write_text("a file where the destination's parent should be\n")
    recipe = h.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                               "--max_steps", "8", "--save_steps", "4", "--step_delay", "0.05"],
                      sync={"dest": str(not_a_dir / "keep"), "retry_s": 0.5})
    run = h.start(recipe)
    st = run.wait_status("succeeded", "failed", timeout=240)
    assert st["status"] == "succeeded"
    runner_pid = st["runner"]["pid"]
    wait_for(lambda: "waiting for the last checkpoint's sync" in (run.path / "runner.log").read_text(), 120,
             "the runner to wait on the sync")
    sock = run.path / "control.sock"
    answer = control.send(sock, {"cmd": "status"}, timeout=60)
    assert answer["ok"] and answer["state"]["status"] == "succeeded"
    assert answer["state"]["sync"]["pending"] is not None
    refused = control.send(sock, {"cmd": "restart"}, timeout=60)
    assert refused["ok"] is False and "persistent storage" in refused["message"], refused
    os.kill(runner_pid, signal.SIGTERM)
    wait_for(lambda: not _alive(runner_pid), 60, "the runner to exit on SIGTERM")
