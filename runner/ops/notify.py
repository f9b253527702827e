"""Tell people when a run needs them: a critical alert, a crash, a pause, the end of a run.

The recipe's ``notify`` section names a command (an argv list, never a shell string; the event
arrives as JSON on its stdin) and/or a webhook (the event is POSTed as a JSON body). Delivery is
a child process fed from a file, so the runner's loop never waits on a slow receiver or a full
pipe; each outcome (never the URL, which often is a secret) is appended to ``notify.log``.
A rate limit per kind of notification keeps a crash loop from paging fifty times.

    notify:
      command: ["/usr/local/bin/page-oncall", "--team", "ml"]
      webhook: "${SLACK_WEBHOOK_URL}"      # ${NAME} is read from the runner's environment
      on: [critical, crash, pause, end]     # the default
      min_interval_s: 300                   # per kind
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Sequence, get_args

from moeconsole.runner.process import pyexec
from moeconsole.runner.rundir import jsonio
from moeconsole.runner.core.state import TERMINAL
from moeconsole.runner.core import schema

NOTIFY_LOG = "notify.log"
URL_ENV = "MOECONSOLE_NOTIFY_URL"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


Kind = Literal["critical", "crash", "pause", "end"]
KINDS: tuple[Kind, ...] = get_args(Kind)
Arg = Annotated[str, schema.text(r"^[^\x00]+$", "a non-empty argument without a NUL byte (an argv, never a shell string)")]


class NotifySettings(schema.Section, frozen=True):
    """The recipe's ``notify:`` section (the module docstring shows it)."""
    command: Annotated[tuple[Arg, ...], schema.described("a list of arguments (an argv, never a shell string)")] = ()
    webhook: Annotated[str, schema.text(r"^(https?://.*|\$\{[A-Za-z_][A-Za-z0-9_]*\})$",
                                        "an http(s) URL or a ${NAME} environment reference")] | None = None
    # may hold ${NAME} references, expanded at send time
    on: frozenset[Kind] = frozenset(KINDS)
    min_interval_s: schema.Seconds = 300.0
    timeout_s: schema.Seconds = 10.0

    @property
    def enabled(self) -> bool:
        return bool(self.command or self.webhook)

    @classmethod
    def from_recipe(cls, section: Any) -> "NotifySettings":
        """SettingsError (a ValueError) naming the key; the recipe loader adds the file."""
        return schema.convert({} if section is None else section, cls, "notify")


@dataclass(frozen=True)
class Notification:
    kind: str           # one of KINDS
    key: str            # what the rate limit counts (kind plus rule/class)
    title: str
    event: Mapping[str, Any]


def notification_for(ev: Mapping[str, Any]) -> Notification | None:
    """Which events page someone. Pure: the rules are tested on plain event dicts."""
    kind = ev.get("type")
    if kind == "alert" and ev.get("level") == "critical" and not (ev.get("update") and not ev.get("escalated")):
        # an alert that only updates its numbers pages nobody again; one that turns critical does
        rule = str(ev.get("rule") or "alert")
        return Notification("critical", f"critical:{rule}", f"critical alert {rule}: {ev.get('message', '')}".strip(), ev)
    if kind == "crash":
        cls = str(ev.get("class") or "unknown")
        return Notification("crash", f"crash:{cls}",
                            f"attempt {ev.get('attempt')} crashed ({cls}); {ev.get('decision') or 'recovery'}: "
                            f"{ev.get('reason') or ev.get('summary') or ''}".strip(), ev)
    if kind == "pause":
        return Notification("pause", "pause", f"run paused: {ev.get('reason', '')}".strip(), ev)
    if kind == "status" and str(ev.get("status") or "").lower() in TERMINAL:
        status = str(ev["status"]).lower()
        return Notification("end", "end", f"run {status}" + (f": {ev['reason']}" if ev.get("reason") else ""), ev)
    return None


@dataclass
class RateLimiter:
    """At most one notification per key per interval; what is held back is counted and told
    with the next one that goes out."""

    interval_s: float
    last_sent: dict[str, float] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)

    def allow(self, key: str, now: float) -> tuple[bool, int]:
        last = self.last_sent.get(key)
        if last is not None and now - last < self.interval_s:
            self.held[key] = self.held.get(key, 0) + 1
            return False, 0
        self.last_sent[key] = now
        return True, self.held.pop(key, 0)


def expand_env(text: str, env: Mapping[str, str]) -> str | None:
    """``${NAME}`` from the environment; None when a referenced variable is unset."""
    missing = [m.group(1) for m in _ENV_REF.finditer(text) if m.group(1) not in env]
    if missing:
        return None
    return _ENV_REF.sub(lambda m: env[m.group(1)], text)


class Notifier:
    """Decides, rate-limits and dispatches notifications for one run; never blocks the caller."""

    def __init__(self, settings: NotifySettings, run_dir: Path, run_id: str, *,
                 env: Mapping[str, str] | None = None, python: str = sys.executable) -> None:
        self.settings = settings
        self.run_dir = run_dir
        self.run_id = run_id
        self.env = dict(os.environ if env is None else env)
        self.python = python
        self.limiter = RateLimiter(settings.min_interval_s)
        self.children: list[subprocess.Popen] = []

    def on_event(self, ev: Mapping[str, Any], now: float | None = None) -> list[subprocess.Popen]:
        """Dispatch what this event calls for; returns the delivery processes it started."""
        if not self.settings.enabled:
            return []
        note = notification_for(ev)
        if note is None or note.kind not in self.settings.on:
            return []
        ok, held = self.limiter.allow(note.key, time.monotonic() if now is None else now)  # an interval: monotonic
        if not ok:
            return []
        body = {"v": jsonio.SCHEMA_VERSION, "run_id": self.run_id, "kind": note.kind, "title": note.title,
                "held_back": held, "event": dict(note.event)}
        started = self._dispatch(jsonio.dumps(body).encode())
        self.children = [c for c in self.children if c.poll() is None] + started
        return started

    def _stdin_file(self, payload: bytes) -> int:
        """The payload as an unlinked file: the child reads it at its own pace, nobody blocks."""
        fd, path = tempfile.mkstemp(prefix=".notify-", dir=self.run_dir)
        os.unlink(path)
        os.write(fd, payload)
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def _dispatch(self, payload: bytes) -> list[subprocess.Popen]:
        log = str(self.run_dir / NOTIFY_LOG)
        deliveries: list[tuple[str, list[str], dict[str, str]]] = []
        if self.settings.command:
            deliveries.append(("command", [*pyexec.module_argv("moeconsole.runner.ops.notify", python=self.python), "command", log,
                                           str(self.settings.timeout_s), "--", *self.settings.command], self.env))
        if self.settings.webhook:
            url = expand_env(self.settings.webhook, self.env)
            if url is None:
                _log_line(log, "webhook", False, "its ${NAME} variable is not set in the runner's environment")
            else:  # the URL travels in the environment, never in an argv that `ps` shows
                deliveries.append(("webhook", [*pyexec.module_argv("moeconsole.runner.ops.notify", python=self.python), "webhook", log,
                                               str(self.settings.timeout_s)], {**self.env, URL_ENV: url}))
        started = []
        for target, argv, env in deliveries:
            fd = self._stdin_file(payload)
            try:
                started.append(subprocess.Popen(argv, stdin=fd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                env=env, close_fds=True, start_new_session=True))
            except OSError as exc:
                _log_line(log, target, False, f"could not start delivery: {exc}")
            finally:
                os.close(fd)
        return started


def _log_line(path: str, target: str, ok: bool, detail: str) -> None:
    jsonio.append_jsonl(path, {"v": jsonio.SCHEMA_VERSION, "t": time.time(), "target": target, "ok": ok,
                               "detail": detail})


def _deliver(argv: Sequence[str]) -> int:
    """The delivery child: ``notify command LOG TIMEOUT -- ARGV...`` or ``notify webhook LOG TIMEOUT``."""
    mode, log, timeout = argv[0], argv[1], float(argv[2])
    payload = sys.stdin.buffer.read()
    if mode == "command":
        cmd = list(argv[4:])
        try:
            # A session of its own: on a timeout the command and everything it started (a
            # `curl` under a shell script) is ended, not only the direct child.
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    start_new_session=True)
        except OSError as exc:
            _log_line(log, "command", False, f"{cmd[0]}: {exc.strerror or exc}")
            return 1
        try:
            _, err = proc.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            from moeconsole.runner.process.proctree import kill_session
            kill_session(proc.pid)
            proc.wait()
            _log_line(log, "command", False, f"{cmd[0]} did not finish within {timeout:g}s (its session was killed)")
            return 1
        ok = proc.returncode == 0
        _log_line(log, "command", ok, f"{cmd[0]} exited {proc.returncode}"
                  + ("" if ok else f": {err.decode(errors='replace').strip()[-200:]}"))
        return 0 if ok else 1
    url = os.environ.get(URL_ENV, "")
    req = urllib.request.Request(url, data=payload, method="POST",
                                 headers={"Content-Type": "application/json", "User-Agent": "moeconsole"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        _log_line(log, "webhook", False, f"not delivered: {getattr(exc, 'reason', exc)}")
        return 1
    ok = 200 <= status < 300
    _log_line(log, "webhook", ok, f"HTTP {status}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(_deliver(sys.argv[1:]))
