"""Notifications: which events page, the rate limit, and real delivery to a loopback webhook
and to a command (argv, event JSON on stdin) without the caller ever waiting."""
from __future__ import annotations

import http.server
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.ops.ops_helpers import wait_for
from moeconsole.runner.ops.notify import NOTIFY_LOG, Notifier, NotifySettings, RateLimiter, notification_for


def test_which_events_page():
    assert notification_for({"type": "alert", "level": "critical", "rule": "non_finite", "message": "loss nan"}).kind \
        == "critical"
    assert notification_for({"type": "alert", "level": "warning", "rule": "loss_spike"}) is None
    crash = notification_for({"type": "crash", "class": "cuda_oom", "attempt": 3, "decision": "restart",
                              "reason": "cooldown 30s"})
    assert crash.kind == "crash" and crash.key == "crash:cuda_oom" and "attempt 3 crashed (cuda_oom)" in crash.title
    assert notification_for({"type": "pause", "reason": "divergence"}).kind == "pause"
    assert notification_for({"type": "status", "status": "succeeded"}).title == "run succeeded"
    assert notification_for({"type": "status", "status": "running"}) is None
    assert notification_for({"type": "checkpoint", "ok": True}) is None


def test_rate_limit_per_key_counts_what_it_held_back():
    rl = RateLimiter(interval_s=60)
    assert rl.allow("crash:cuda_oom", 0) == (True, 0)
    assert rl.allow("crash:cuda_oom", 10) == (False, 0)
    assert rl.allow("crash:cuda_oom", 20) == (False, 0)
    assert rl.allow("crash:nccl_error", 20) == (True, 0)        # another key is not held
    assert rl.allow("crash:cuda_oom", 61) == (True, 2)          # the next one says 2 were held back


@pytest.mark.parametrize("section, problem", [
    ({"command": "page-me --now"}, "argv"),
    ({"webhook": "ftp://x"}, "http(s) URL"),
    ({"on": ["crash", "sometimes"]}, "notify.on[1]: must be one of crash, critical, end, pause, got 'sometimes'"),
    ({"min_interval_s": float("nan")}, "finite"),
    ({"webhok": "http://x"}, "unknown key"),
])
def test_bad_settings_say_what_is_wrong(section, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        NotifySettings.from_recipe(section)


class _Receiver(http.server.BaseHTTPRequestHandler):
    bodies: list[dict] = []
    status = 200

    def do_POST(self):  # noqa: N802 - http.server's name
        n = int(self.headers.get("Content-Length") or 0)
        type(self).bodies.append(json.loads(self.rfile.read(n)))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    _Receiver.bodies = []
    _Receiver.status = 200
    server = http.server.HTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _log(run_dir: Path) -> list[dict]:
    try:
        return [json.loads(l) for l in (run_dir / NOTIFY_LOG).read_text().splitlines()]
    except OSError:
        return []


def test_webhook_gets_the_event_and_the_url_stays_out_of_argv_and_log(tmp_path, receiver):
    url = f"http://127.0.0.1:{receiver.server_address[1]}/hook?token=s3cr3t"
    n = Notifier(NotifySettings.from_recipe({"webhook": "${HOOK}", "min_interval_s": 60}), tmp_path, "run-1",
                 env={"HOOK": url, "PATH": "/usr/bin:/bin"})
    crash = {"v": 1, "t": 1.0, "type": "crash", "class": "cuda_oom", "attempt": 2, "decision": "restart"}
    t0 = time.monotonic()
    procs = n.on_event(crash, now=100.0)
    assert time.monotonic() - t0 < 2.0                 # dispatch does not wait for delivery
    assert len(procs) == 1 and all("s3cr3t" not in a for a in procs[0].args)
    assert n.on_event(crash, now=110.0) == []          # rate-limited
    try:
        wait_for(lambda: len(_Receiver.bodies) == 1 and _log(tmp_path))
    finally:
        for p in procs:
            p.wait(timeout=30)
    body = _Receiver.bodies[0]
    assert body["run_id"] == "run-1" and body["kind"] == "crash" and body["event"]["class"] == "cuda_oom"
    entry = _log(tmp_path)[0]
    assert entry["target"] == "webhook" and entry["ok"] is True and "s3cr3t" not in json.dumps(_log(tmp_path))


def test_failed_webhook_is_logged_not_raised(tmp_path, receiver):
    _Receiver.status = 500
    url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    n = Notifier(NotifySettings.from_recipe({"webhook": url}), tmp_path, "run-1", env={})
    procs = n.on_event({"type": "pause", "reason": "divergence"})
    for p in procs:
        assert p.wait(timeout=60) == 1
    assert _log(tmp_path)[0] == {**_log(tmp_path)[0], "ok": False, "detail": "HTTP 500"}


def test_command_gets_the_event_on_stdin(tmp_path):
    out = tmp_path / "got.json"
    script = f"import sys; open({str(out)!r}, 'w').write(sys.stdin.read())"
    n = Notifier(NotifySettings.from_recipe({"command": [sys.executable, "-c", script]}), tmp_path, "run-9")
    procs = n.on_event({"type": "status", "status": "failed", "reason": "restart cap reached"})
    for p in procs:
        assert p.wait(timeout=60) == 0
    body = json.loads(out.read_text())
    assert body["kind"] == "end" and body["title"] == "run failed: restart cap reached"
    assert _log(tmp_path)[0]["ok"] is True


def test_command_that_hangs_is_cut_at_its_timeout(tmp_path):
    n = Notifier(NotifySettings.from_recipe({"command": [sys.executable, "-c", "import time; time.sleep(60)"],
                                             "timeout_s": 0.5}), tmp_path, "run-9")
    procs = n.on_event({"type": "alert", "level": "critical", "rule": "hang", "message": "quiet"})
    for p in procs:
        assert p.wait(timeout=60) == 1
    assert "did not finish within 0.5s" in _log(tmp_path)[0]["detail"]


def test_a_hung_command_loses_its_whole_session_grandchildren_too(tmp_path):
    """The command is a shell that starts a grandchild: at the timeout every process of its
    session ends, not only the direct child."""
    import psutil
    mark = f"moeconsole-notify-grandchild-{os.getpid()}"
    sleeper = f"{sys.executable} -c 'import time; time.sleep(300)' {mark}"
    cmd = ["sh", "-c", f"{sleeper} & {sleeper} & wait"]
    n = Notifier(NotifySettings.from_recipe({"command": cmd, "timeout_s": 1.0}), tmp_path, "run-9")
    procs = n.on_event({"type": "alert", "level": "critical", "rule": "hang", "message": "quiet"})
    for p in procs:
        assert p.wait(timeout=60) == 1
    assert "did not finish within 1s" in _log(tmp_path)[0]["detail"]

    def family() -> list[int]:
        out = []
        for p in psutil.process_iter(["cmdline", "status"]):
            try:
                if p.info["status"] != psutil.STATUS_ZOMBIE and mark in " ".join(p.info["cmdline"] or []):
                    out.append(p.pid)
            except psutil.Error:
                continue
        return out
    try:
        wait_for(lambda: not family(), timeout=30, what="the command's grandchildren to be gone")
    finally:
        for pid in family():  # a failing run must not leave them behind
            os.kill(pid, 9)
