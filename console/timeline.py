"""The run's events as a time-ordered list of sentences: what the events pane shows and what
Enter opens. Pure (event dicts in, ``Entry`` out), so tests need no UI and no processes.

Each event keeps its position in ``events.jsonl`` as a stable sequence number: entries sort by
(time, sequence), so events of the same second keep the order the runner wrote them in. A
status change that only repeats the event just before it (``attempt 2 started`` followed by
``status running: attempt 2 started``) is dropped, and identical sentences in a row are shown
once with a count.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from moeconsole.console import format as fmt
from moeconsole.runner.core.units import human_bytes
from moeconsole.runner.rundir.alertgroups import past_crash_words
from moeconsole.runner.rundir.snapshot import preflight_reason

LEVEL_STYLE = {"CRIT": "event--crit", "WARN": "event--warn"}
# Event fields holding a unix time: shown as a clock time, never as 1.80e+09.
TIME_FIELDS = frozenset({"t", "until", "ceiling_at", "detected_at", "started_at", "ended_at", "submitted_at",
                         "since", "last_synced_at", "pending_since", "first_t", "last_t"})

# A status event right after one of these (same attempt, within a few seconds) says nothing new.
STATUS_IMPLIED_BY = {"running": {"attempt_start", "adopt"}, "paused": {"pause"}, "cooldown": {"cooldown"},
                     "stopping": {"kill"}, "succeeded": {"success"}, "unsaved": {"unsaved"}}
IMPLIED_WITHIN_S = 5.0


@dataclass(frozen=True)
class Entry:
    """One line of the events pane and what its detail view shows."""

    seq: int                 # position in events.jsonl (stable across polls)
    t: float | None
    kind: str                # the event's type
    text: str                # the sentence, without the time
    style: str = ""          # TCSS component class; the first word carries the meaning alone
    count: int = 1           # identical sentences in a row, shown once
    event: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def line(self) -> str:
        return self.fitted(None)

    def fitted(self, width: int | None) -> str:
        """The line in ``width`` columns (None: whole): the sentence loses words
        from its end (``units.fit_words``, ``from_end``: a `from` dropped had read `attempt 1 started
        scratch`), never a cut inside one; the time and the count stay (newcomer
        round 15: the 40-column pane at 80 columns read `PRE-FLIGHT: checking leftove…`). Enter
        opens the whole event."""
        times = f" (×{self.count})" if self.count > 1 else ""
        head = fmt.clock(self.t)
        room = None if width is None else width - len(head) - 1 - len(times)
        text = self.text if room is None or len(self.text) <= room else fmt.fit_words(self.text, max(8, room), from_end=True)
        return f"{head} {text}{times}"


def _pids(items: Any) -> str:
    pids = [str(p.get("pid") if isinstance(p, dict) else p) for p in items or ()]
    return ", ".join(pids) if pids else fmt.NA


def _values(d: Any) -> str:
    if not isinstance(d, dict) or not d:
        return ""
    return ", ".join(f"{k.replace('_', ' ')} {_field(v, k)}" for k, v in d.items())


def sentence(ev: dict) -> tuple[str, str]:
    """One event as (sentence, style): the first word names the kind, never a Python dict."""
    kind = str(ev.get("type") or "event")
    attempt = ev.get("attempt")
    if kind == "alert":
        level = fmt.LEVEL_WORD.get(str(ev.get("level") or "").lower(), str(ev.get("level") or "ALERT").upper())
        step = f" @{ev['step']}" if ev.get("step") is not None else ""
        return f"{level} {ev.get('rule') or 'alert'}{step}: {ev.get('message') or ''}".rstrip(": "), \
            LEVEL_STYLE.get(level, "")
    if kind == "status":
        word = str(ev.get("status") or fmt.NA)
        reason = fmt.strip_word(str(ev.get("reason") or ""), word)
        style = "event--crit" if word in ("failed", "killed", "unsaved") else ""
        return f"{word.upper()}" + (f": {reason}" if reason else ""), style
    if kind == "attempt_start":
        if ev.get("error"):
            return f"attempt {attempt} could not start: {ev['error']}", "event--crit"
        where = f"resuming from {fmt.path_name(ev['resumed_from'])}" if ev.get("resumed_from") else "from scratch"
        # The roles as state.json (and the kill dialog) name them: the waiter is the attempt's
        # root, the leader the command it runs.
        roles = [f"{role} {ev[key]}" for key, role in (("pid", "waiter"), ("command_pid", "leader")) if ev.get(key)]
        pid = f", pids {', '.join(roles)}" if roles else ""
        port = f", port {ev['port']}" if ev.get("port") else ""
        # what the resume does not restore (step_count.partial_resume, as the runner judged it at the start)
        partial = f". {fmt.partial_resume_words(ev['partial'])}" if ev.get("resumed_from") and ev.get("partial") else ""
        return f"attempt {attempt} started {where}{pid}{port}{partial}", ""
    if kind == "attempt_end":
        return f"attempt {attempt} ended: {fmt.exit_words(ev)}", ""
    if kind == "crash" and ev.get("class") == "user_kill":  # the user's own act: an event, not an alert
        return f"STOPPED attempt {attempt}: killed by the user; no restart", ""
    if kind == "crash":
        text = f"CRASH attempt {attempt}: {ev.get('class') or 'unknown'}"
        if ev.get("summary"):
            text += f", {ev['summary']}"
        nxt = ev.get("decision") or ev.get("recovery")
        if nxt:
            text += f"; next: {nxt}"
        return text, "event--crit"
    if kind == "past_crash":
        return f"RECOVERED: {past_crash_words(ev)} ({ev.get('crash_class') or 'unknown'})", ""
    if kind == "cooldown" and ev.get("reason") == preflight_reason():
        return (f"PRE-FLIGHT: checking leftovers, the port and the GPUs before the first attempt "
                f"(launching by {fmt.clock(ev.get('ceiling_at'))} at the latest)"), ""
    if kind == "cooldown":
        why = f" ({ev['reason']})" if ev.get("reason") else ""
        return f"COOLDOWN until {fmt.clock(ev.get('until'))} at the earliest{why}", "event--warn"
    if kind == "restart":
        return f"RESTART of attempt {attempt} requested by {ev.get('requested_by') or 'the runner'}", "event--warn"
    if kind == "checkpoint":
        return fmt.checkpoint_line(ev)
    if kind == "kill" and ev.get("joins"):   # a user's kill taking over the runner's kill under way (round 32)
        return (f"KILL by {ev.get('requested_by') or fmt.NA}: the {ev['joins']} kill under way goes on "
                f"(SIGKILL in {fmt.num(ev.get('grace_s'), 3)}s), and the run stops after it"), "event--warn"
    if kind == "kill":
        why = f" ({ev['reason']})" if ev.get("reason") else ""
        return (f"KILL by {ev.get('requested_by') or fmt.NA}{why}: SIGTERM to pids {_pids(ev.get('pids'))}, "
                f"SIGKILL after {fmt.num(ev.get('grace_s'), 3)}s"), "event--warn"
    if kind == "kill_done":
        how = "escalated to SIGKILL" if ev.get("escalated") else "no SIGKILL needed"
        why = f" ({ev['reason']})" if ev.get("reason") else ""
        return f"kill done{why} in {fmt.num(ev.get('seconds'), 3)}s, {how}", ""
    if kind == "kill_escalate":
        return f"SIGKILL to pids {_pids(ev.get('pids'))}: {ev.get('why') or 'still alive'}", "event--warn"
    if kind == "pause":
        return f"PAUSE: {fmt.strip_word(str(ev.get('reason') or ''), 'paused')}", "event--warn"
    if kind == "drift":
        return (f"DRIFT: {fmt.path_name(ev.get('checkpoint'))} was saved by recipe {str(ev.get('checkpoint_hash'))[:8]}, "
                f"this recipe is {str(ev.get('recipe_hash'))[:8]} (policy {ev.get('policy')})"), "event--warn"
    if kind == "adopt":
        return f"runner adopted attempt {attempt} (pids {_pids(ev.get('pids'))})", ""
    if kind == "port_change":
        return f"rendezvous port moved from {ev.get('old')} to {ev.get('new')}", "event--warn"
    if kind == "blocker_kill":
        res = ev.get("result")
        if not isinstance(res, dict):
            res = {}
        ok = "ended" if res.get("ok") else "not ended"
        why = f": {res['reason']}" if res.get("reason") else ""
        return f"blocker pid {ev.get('pid')} {ok}{why}", "event--warn"
    if kind == "sync":
        # checkpoints.sync's result (runner/checkpoints/sync.py ``poll``), in words: the generic line had
        # printed `sync: attempt 1, ok True, src /tmp/...` (newcomer round 14)
        name = fmt.path_name(ev.get("src"))
        if not ev.get("ok"):
            return f"SYNC FAILED {name}: {ev.get('reason') or 'no reason recorded'}", "event--warn"
        size = f"{human_bytes(ev['bytes'])}, " if isinstance(ev.get("bytes"), (int, float)) else ""
        secs = ev.get("seconds")
        took = size + (f"{secs:.1f}s" if secs < 60 else fmt.duration(secs)) if isinstance(secs, (int, float)) \
            else size.rstrip(", ")
        return f"SYNC {name} copied to {ev.get('dest') or 'sync.dest'} and verified" + (f" ({took})" if took else ""), ""
    if kind in ("unsaved", "success"):   # "log entry N" where the log names no step (``step_numbered``)
        at = fmt.step_words(ev.get("step"), None, bool(ev.get("step_numbered")))
        if kind == "unsaved":
            return (f"UNSAVED: training finished at {at} (attempt {attempt}) but "
                    f"{ev.get('reason') or 'no checkpoint verified ok'}"), "event--crit"
        return f"SUCCESS: training finished at {at} (attempt {attempt})", "event--ok"
    rest = {k: v for k, v in ev.items() if k not in ("v", "t", "type")}
    return (f"{kind.replace('_', ' ')}: {_values(rest)}" if rest else kind.replace("_", " ")), ""


def _implied(ev: dict, prev: dict | None) -> bool:
    if prev is None or ev.get("type") != "status":
        return False
    kinds = STATUS_IMPLIED_BY.get(str(ev.get("status")), set())
    t, pt = ev.get("t"), prev.get("t")
    close = isinstance(t, (int, float)) and isinstance(pt, (int, float)) and abs(t - pt) <= IMPLIED_WITHIN_S
    return prev.get("type") in kinds and close


def timeline(events: list[dict] | tuple[dict, ...], first_seq: int = 0) -> list[Entry]:
    """Events (in file order, the first at ``first_seq``) as entries in time order."""
    numbered = [(i + first_seq, ev) for i, ev in enumerate(events) if isinstance(ev, dict)]
    numbered.sort(key=lambda p: (p[1].get("t") if isinstance(p[1].get("t"), (int, float)) else 0.0, p[0]))
    out: list[Entry] = []
    prev: dict | None = None
    for seq, ev in numbered:
        if _implied(ev, prev):
            prev = ev
            continue
        prev = ev
        text, style = sentence(ev)
        if out and out[-1].text == text:
            last = out[-1]
            out[-1] = Entry(last.seq, last.t, last.kind, last.text, last.style, last.count + 1, last.event)
            continue
        out.append(Entry(seq, ev.get("t"), str(ev.get("type") or "event"), text, style, 1, ev))
    return out


def entry_detail_lines(entry: Entry, crash_report: dict | None = None) -> list[str]:
    """The full text of an entry for the detail view: the sentence, every field, and for a crash
    its report (evidence lines), for a checkpoint its verdict."""
    ev = entry.event
    lines = [f"{fmt.clock(entry.t)}  {entry.text}", ""]
    if entry.count > 1:
        lines.append(f"seen {entry.count} times in a row")
    if entry.kind == "checkpoint":
        lines += [f"verdict: {ev.get('verdict') or fmt.NA} ({'ok' if ev.get('ok') else 'NOT ok'})",
                  f"path: {ev.get('path') or fmt.NA}", f"step: {fmt.intc(ev.get('step'))}"]
        if ev.get("reason"):
            lines.append(f"reason: {ev['reason']}")
        if ev.get("tensors") is not None:
            lines.append(f"tensors: {ev['tensors']}")
        if ev.get("suspect"):
            lines.append("suspect: yes (the monitors flagged the steps before it)")
    elif entry.kind == "alert":
        lines += [f"level: {ev.get('level')}", f"rule: {ev.get('rule')}", f"step: {fmt.intc(ev.get('step'))}",
                  f"attempt: {ev.get('attempt') if ev.get('attempt') is not None else fmt.NA}",
                  f"message: {ev.get('message') or ''}"]
        values = ev.get("values")
        if isinstance(values, dict) and values:
            lines.append("evidence:")
            lines += [f"  {k}: {v}" for k, v in values.items()]
    else:
        for k, v in ev.items():
            if k in ("v", "t", "type"):
                continue
            lines.append(f"{k.replace('_', ' ')}: {_field(v, k)}")
    if crash_report:
        lines += ["", f"crash report (attempt {crash_report.get('attempt')}):",
                  f"class: {crash_report.get('class') or 'unknown'}", f"how it ended: {fmt.exit_words(crash_report)}",
                  f"summary: {crash_report.get('summary') or ''}", f"recovery: {crash_report.get('recovery') or fmt.NA}"]
        from moeconsole.runner.core.oom import crash_hint  # only with a crash report (~1.6 MiB with the memory rules)
        hint = crash_hint(crash_report)
        if hint:
            lines.append(f"hint: {hint}")
        evidence = crash_report.get("evidence") or []
        if evidence:
            lines.append("evidence:")
            lines += [f"  {line}" for line in evidence]
        mem = crash_report.get("memory")
        if isinstance(mem, dict):
            lines += ["", f"memory verdict: {mem.get('verdict')}: {mem.get('summary') or ''}",
                      f"advice: {mem.get('advice') or fmt.NA}"]
            lines += [f"  {line}" for line in mem.get("evidence") or []]
    return lines


def _field(v: Any, key: str = "") -> str:
    """A value in words: times as clock times, numbers short, lists joined, mappings as
    "key value" pairs."""
    if key in TIME_FIELDS and isinstance(v, (int, float)) and not isinstance(v, bool):
        return fmt.clock(v)
    if isinstance(v, float):
        return fmt.num(v)
    if isinstance(v, dict):
        return _values(v) or fmt.NA
    if isinstance(v, (list, tuple)):
        return ", ".join(_field(x) for x in v) or fmt.NA
    if v is None:
        return fmt.NA
    return str(v)
