"""Alerts grouped by cause, and whether someone acknowledged them (pure, plus ``acks.json``).

The runner writes every alert it raises into ``events.jsonl``: one NaN step gives a non-finite
loss, a non-finite grad norm, a checkpoint saved in the excursion, the divergence crash and the
restart policy's pause; a leak re-fires as memory grows. A person needs one line per cause, with
how often and where (first and last step). ``AlertBook`` is fed the events in file order and keeps
one ``AlertGroup`` per cause; the snapshot (so the console and ``--json`` alike) carries them with
their acknowledgement state from ``acks.json``.

Causes: a crash groups by its class across attempts (three CUDA OOMs are one cause, seen three
times), and the restart policy's alert joins the crash it judged; monitor rules group by what went
wrong (``divergence``: non-finite values, spikes and a save inside one; ``memory``; ``throughput``);
bad saves group together (``checkpoints``). A user's kill is not an alert at all.

Acknowledging a group covers what it held at that moment: a later alert of the same cause opens it
again (a leak that keeps growing is news). A memory alert is an episode (``moeconsole.runner.core.memory``):
opened once, then *updated* as its numbers move (``update`` > 0: the group's line shows the new
numbers, but an update at the same level is not news and does not count again), and *resolved*
(``resolved``, level info) once the condition is gone, or when the attempt it was about ends
(``attempt_end``); a group whose episodes are all resolved is no longer active. A bad save is a
fact about one checkpoint: when that same checkpoint is verified ok later (its files were still
being written at the first check, then completed; the keeper reports it again), the bad-save
group holds no bad checkpoint any more and is resolved, saying why (``resolved_why``: "checkpoint-40
verified ok on a later check"); a run that finished unsaved stays an alert. A crash is resolved once a
later attempt passed the step where it happened (the runner's ``past_crash`` event,
``policy.crashes_passed``: trained past it, saved at or past it, or the run succeeded): "attempt 2
trained past step 39, where attempt 1 crashed"; only that crash's own cause group, never one holding a
fact about a checkpoint (``CHECKPOINT_FACT_RULES``). ``acks.json`` is written by a console (atomic replace)
and read on every poll, so an acknowledgement in one console clears the alert in every console.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, TypedDict

from moeconsole.runner.rundir import jsonio
from moeconsole.runner.core.policy import is_crash_class
from moeconsole.runner.core.units import fit_with_tail, path_name

ACKS_NAME = "acks.json"
ACKS_VERSION = 2
CRITICAL, WARNING = "critical", "warning"

# Monitor and runner rules -> the cause they report. Rules not listed are their own cause.
CAUSE_OF_RULE = {
    "non_finite": "divergence", "grad_norm_spike": "divergence", "loss_spike": "divergence",
    "checkpoint_in_excursion": "divergence",
    "mem_headroom": "memory", "mem_growth": "memory",  # the old monitors' rules (runs before the memory
    # watch); the watch's episodes (events with a ``cause``: mem_forecast, mem_headroom) are causes of their own
    "throughput_drop": "throughput", "step_time_unstable": "throughput",
    "checkpoint_bad": "checkpoints", "bad_saves": "checkpoints", "unsaved": "checkpoints",
}
# Crash classes whose cause a monitor or the runner reported first: the crash joins that group.
CAUSE_OF_CRASH = {"divergence": "divergence", "hang": "hang"}
# Rules that speak about the attempt that just ended: they join that attempt's crash.
ABOUT_THE_CRASH = frozenset({"restart_policy"})
# Rules that call a checkpoint bad (its path in ``values``): a later ok verdict of every one
# of their checkpoints resolves the group, unless another rule in it still holds (``unsaved``).
BAD_SAVE_RULES = frozenset({"checkpoint_bad", "bad_saves"})
# Rules that state a fact about one checkpoint on disk (a bad save, a run that finished unsaved, a
# save inside a loss/grad-norm excursion: ``core.monitors`` ``checkpoint_in_excursion``, ``supervisor.judge``
# ``unsaved``): only a verdict on that checkpoint changes them, never "a later attempt trained past
# the crash" (``AlertBook._passed``; review R44).
CHECKPOINT_FACT_RULES = BAD_SAVE_RULES | {"unsaved", "checkpoint_in_excursion"}
# Rules whose newest occurrence names the group (the newest bad save is the one a resume meets),
# with the steps from the first: every other cause keeps its first worst occurrence.
NEWEST_TITLE = frozenset({"checkpoint_bad"})


class AcksFile(TypedDict, total=False):
    """``<run_dir>/acks.json``: per cause, the time of the newest alert acknowledged."""
    v: int
    groups: dict[str, float]
    acked: list[str]     # version 1: keys of single alerts (still read, never written)


@dataclass(frozen=True)
class AlertGroup:
    """One cause: its worst level, how often it fired and where, and whether it is acknowledged."""

    key: str                     # the cause: "divergence", "memory", "crash:cuda_oom", ...
    level: str                   # critical | warning (the worst member's)
    title: str                   # one line: the first worst member's message (NEWEST_TITLE rules: the newest)
    count: int
    first_step: int | None
    last_step: int | None
    first_t: float
    last_t: float
    attempts: tuple[int, ...]
    rules: tuple[str, ...]       # the rules (and "crash") that fired
    crash_class: str | None = None
    hint: str | None = None      # the crash report's hint (filled by the snapshot)
    acknowledged: bool = False
    members: tuple[dict, ...] = field(default=(), repr=False, compare=False)
    news_t: float = 0.0          # the newest occurrence that is news (an episode's update is not)
    open_episodes: tuple[str, ...] = ()   # episode causes opened and not yet resolved
    resolved: bool = False       # every episode of the group has been resolved
    resolved_why: str | None = None   # in words, why it ended (a bad save verified ok later)
    bad_paths: tuple[str, ...] = ()   # the checkpoints this group calls bad that no later verdict cleared

    @property
    def critical(self) -> bool:
        return self.level == CRITICAL

    @property
    def active(self) -> bool:
        return not self.acknowledged and not self.resolved

    def standing(self) -> str:
        """Where the group stands, in the words every view uses: "open", "acknowledged", or
        "resolved: <why>" (a resolved group's fact is gone; an acknowledged one was only seen)."""
        if self.resolved:
            return f"resolved: {self.resolved_why}" if self.resolved_why else "resolved"
        return "acknowledged" if self.acknowledged else "open"

    def steps(self) -> str:
        """"step 10", "steps 10-42", or "" when no step is known."""
        if self.first_step is None:
            return ""
        if self.last_step is None or self.last_step == self.first_step:
            return f"step {self.first_step}"
        return f"steps {self.first_step}-{self.last_step}"

    def headline(self, width: int | None = None) -> str:
        """The group in one line, most telling part first: "checkpoint-40 is empty_stub
        (x3, steps 32-40)". Whole (what ``--json``, receipts and ``runs show`` carry); with a
        ``width`` (a screen), the title is fitted by ``moeconsole.runner.core.units.fit_words`` (low-value
        words go first, never a cut inside a word) and the count and steps always stay."""
        extra = [f"x{self.count}"] if self.count > 1 else []
        if self.steps():
            extra.append(self.steps())
        tail = f" ({', '.join(extra)})" if extra else ""
        return f"{self.title}{tail}" if width is None else fit_with_tail(self.title, tail, width)

    def latest(self) -> str:
        """The newest occurrence in one short line, with the group's count: what a toast says
        when the group gets news ("loss is inf at step 63 (divergence x3, steps 61-63)")."""
        newest = _group_title(self.members[-1]) if self.members else self.title
        if self.count == 1:
            return newest
        return f"{newest} ({self.key} x{self.count}" + (f", {self.steps()})" if self.steps() else ")")

    def to_dict(self) -> dict:
        return {"key": self.key, "level": self.level, "title": self.title, "count": self.count,
                "first_step": self.first_step, "last_step": self.last_step, "first_t": self.first_t,
                "last_t": self.last_t, "attempts": list(self.attempts), "rules": list(self.rules),
                "crash_class": self.crash_class, "hint": self.hint, "acknowledged": self.acknowledged,
                "resolved": self.resolved, "resolved_why": self.resolved_why, "active": self.active,
                "standing": self.standing(),
                "headline": self.headline()}


def short_message(message: str, limit: int = 60) -> str:
    """The part of an alert message a headline needs: up to its first ": " detail outside brackets (when that
    comes within ``limit`` + 20 characters), with a path reduced to its last part
    (``/runs/x/output/checkpoint-40`` -> ``checkpoint-40``; ``_is_path``). Never cut: a screen
    fits it (``AlertGroup.headline(width)``), data keeps it whole."""
    text = " ".join(str(message or "").split())
    cut = _detail_colon(text)
    head = text[:cut] if cut is not None and cut < limit + 20 else text
    words = [path_name(w) if _is_path(w) else w for w in head.split(" ")]
    return " ".join(words)


def _detail_colon(text: str) -> int | None:
    """Where the first ": " outside brackets is: a colon inside "(Slurm: TIMEOUT)" belongs to the
    bracket, never cut there (the headline would end "(Slurm"). Only a bracket that closes counts:
    an unclosed "(" ("checkpoint :-( bad: details", "loss is nan (step 3: see the log") holds
    nothing, so the cut is at the colon after it (reviewed R30)."""
    inside = [False] * len(text)
    opened: list[int] = []
    for i, ch in enumerate(text):
        if ch in "([":
            opened.append(i)
        elif ch in ")]" and opened:
            start = opened.pop()
            for j in range(start, i + 1):
                inside[j] = True
    for i, ch in enumerate(text):
        if ch == ":" and not inside[i] and text[i + 1:i + 2] == " ":
            return i
    return None


def _is_path(word: str) -> bool:
    """A long word that is a filesystem path (absolute, ``~``/``./``-relative, or two slashes and
    more), not a ``namespace/name`` repo id (``meta-llama/Llama-3.1-8B``): its namespace is half of
    what names the model a ``hub_access`` alert is about."""
    bare = word.strip("'\"`()[],;")
    if "/" not in bare or len(bare) <= 12:
        return False
    return bare.startswith(("/", "~", "./", "../")) or bare.rstrip("/").count("/") >= 2


def cause_of(ev: dict) -> str | None:
    """The cause an event reports, or None when it is no alert (a kill by the user, an info line)."""
    kind = ev.get("type")
    if kind == "crash":
        cls = str(ev.get("class") or "unknown")
        if not is_crash_class(cls):  # a user's kill is an event the user caused, not news
            return None
        return CAUSE_OF_CRASH.get(cls, f"crash:{cls}")
    if kind != "alert" or str(ev.get("level") or "").lower() not in (CRITICAL, WARNING):
        return None
    if isinstance(ev.get("cause"), str) and ev["cause"]:
        return ev["cause"]  # an episode (moeconsole.runner.core.memory): one alert per cause, updated in place
    rule = str(ev.get("rule") or "alert")
    if rule in ABOUT_THE_CRASH:
        values = ev.get("values")
        judged = str((values.get("crash_class") if isinstance(values, dict) else None) or "unknown")
        return CAUSE_OF_CRASH.get(judged, f"crash:{judged}")
    return CAUSE_OF_RULE.get(rule, rule)


def _level(ev: dict) -> str:
    return CRITICAL if ev.get("type") == "crash" else str(ev.get("level")).lower()


def _group_title(ev: dict) -> str:
    if ev.get("type") == "crash":  # the class, not the attempt: a group holds every attempt it hit
        what = f"crash {ev.get('class') or 'unknown'}"
        return f"{what}: {short_message(str(ev['summary']), 48)}" if ev.get("summary") else what
    values = ev.get("values")
    if isinstance(values, dict) and isinstance(values.get("headline"), str) and values["headline"].strip():
        return " ".join(values["headline"].split())  # the producer's own one-line summary, whole
    return short_message(str(ev.get("message") or ev.get("rule") or "alert"))


class AlertBook:
    """Groups fed in file order; the console and the snapshot keep one per run."""

    def __init__(self) -> None:
        self._groups: dict[str, AlertGroup] = {}
        self._passed_attempts: set[int] = set()   # crashed attempts a later one trained past (``_passed``)
        self.member_keep = 50  # per group, for the detail view

    def feed(self, ev: dict) -> None:
        if ev.get("type") == "attempt_end":
            # an episode (a forecast, a headroom) is about the attempt that ran: it ends with it;
            # the next attempt opens its own with its own numbers
            for key, g in list(self._groups.items()):
                if g.open_episodes:
                    self._groups[key] = replace(g, open_episodes=(), resolved=True,
                                                resolved_why=f"attempt {ev.get('attempt') or '?'} ended")
            return
        if ev.get("type") == "past_crash":
            self._passed(ev)
            return
        if ev.get("type") == "checkpoint":
            if ev.get("ok") is True and ev.get("path"):
                self._cleared(str(ev["path"]))
            return
        episode = ev.get("cause") if ev.get("type") == "alert" and isinstance(ev.get("cause"), str) else None
        if episode and ev.get("resolved"):
            self._resolve(CAUSE_OF_RULE.get(episode, episode), episode, " ".join(str(ev.get("message") or "").split()))
            return
        cause = cause_of(ev)
        if cause is None:
            return
        t = float(ev["t"]) if isinstance(ev.get("t"), (int, float)) else 0.0
        update = bool(episode) and isinstance(ev.get("update"), int) and ev["update"] > 0 \
            and not ev.get("escalated")
        step = ev.get("step") if isinstance(ev.get("step"), int) else None
        attempt = ev.get("attempt") if isinstance(ev.get("attempt"), int) else None
        level = _level(ev)
        rule = "crash" if ev.get("type") == "crash" else str(ev.get("rule") or "alert")
        cls = ev.get("class") if ev.get("type") == "crash" else None
        old = self._groups.get(cause)
        episodes = (episode,) if episode else ()
        if old is None:
            self._groups[cause] = AlertGroup(
                key=cause, level=level, title=_group_title(ev), count=1, first_step=step, last_step=step, first_t=t,
                last_t=t, attempts=(attempt,) if attempt is not None else (), rules=(rule,), crash_class=cls,
                members=(ev,), news_t=t, open_episodes=episodes, bad_paths=_bad_paths(ev))
            return
        worse = level == CRITICAL and old.level != CRITICAL
        steps = [s for s in (old.first_step, step) if s is not None]
        if update and old.level == level and not old.resolved:
            # the same episode with new numbers: its line says them, but it is not news
            self._groups[cause] = replace(
                old, title=_group_title(ev), last_step=max([s for s in (old.last_step, step) if s is not None], default=None),
                last_t=max(old.last_t, t), members=(old.members + (ev,))[-self.member_keep:])
            return
        # the restart policy's decision on a crash is part of that crash: one event, counted once
        decision = rule in ABOUT_THE_CRASH and "crash" in old.rules and attempt is not None \
            and attempt in old.attempts
        newest = rule in NEWEST_TITLE and (worse or level == old.level)
        self._groups[cause] = replace(
            old, level=CRITICAL if worse else old.level,
            title=_group_title(ev) if worse or newest or (episode and old.resolved) else old.title,
            news_t=max(old.news_t, t), resolved=False, resolved_why=None,
            bad_paths=old.bad_paths + tuple(p for p in _bad_paths(ev) if p not in old.bad_paths),
            open_episodes=old.open_episodes + tuple(e for e in episodes if e not in old.open_episodes),
            count=old.count + (0 if decision else 1), first_step=min(steps) if steps else None,
            last_step=max([s for s in (old.last_step, step) if s is not None], default=None),
            last_t=max(old.last_t, t),
            attempts=old.attempts + ((attempt,) if attempt is not None and attempt not in old.attempts else ()),
            rules=old.rules + ((rule,) if rule not in old.rules else ()), crash_class=cls or old.crash_class,
            members=(old.members + (ev,))[-self.member_keep:])

    def _cleared(self, path: str) -> None:
        """A checkpoint verified ok: no group calls it bad any more; a bad-save group left with
        no bad checkpoint (and no other rule) is resolved, with why."""
        for key, g in list(self._groups.items()):
            if path not in g.bad_paths:
                continue
            left = tuple(p for p in g.bad_paths if p != path)
            done = not left and set(g.rules) <= BAD_SAVE_RULES
            why = f"{Path(path.rstrip('/')).name} verified ok on a later check" if done else None
            self._groups[key] = replace(g, bad_paths=left, resolved=g.resolved or done,
                                        resolved_why=why or g.resolved_why)

    def _passed(self, ev: dict) -> None:
        """A later attempt trained past the step where an attempt crashed (``past_crash``, said by
        the runner: ``policy.crashes_passed``): the passed crash's own cause group (``cause_of`` the
        crash, never another cause's group that merely holds a crash too), once every attempt in it is
        passed, is resolved, saying so ("attempt 2 trained past step 39, where attempt 1 crashed").
        A group holding a fact about a checkpoint (``CHECKPOINT_FACT_RULES``: a save inside the
        excursion, a bad save) stays: passing a step is no verdict on a checkpoint (review R44).
        A new crash of its cause opens it again (``feed``)."""
        crashed, now = ev.get("crashed_attempt"), ev.get("attempt")
        if not isinstance(crashed, int) or not isinstance(now, int):
            return
        self._passed_attempts.add(crashed)
        key = cause_of({"type": "crash", "class": ev.get("crash_class") or "unknown"})
        g = self._groups.get(key) if key is not None else None
        if key is None or g is None or g.resolved or crashed not in g.attempts or g.crash_class is None:
            return
        if set(g.rules) & CHECKPOINT_FACT_RULES:
            return
        if set(g.attempts) <= self._passed_attempts:
            self._groups[key] = replace(g, resolved=True, resolved_why=past_crash_words(ev))

    def _resolve(self, cause: str, episode: str, why: str) -> None:
        old = self._groups.get(cause)
        if old is None or episode not in old.open_episodes:
            return
        left = tuple(e for e in old.open_episodes if e != episode)
        self._groups[cause] = replace(old, open_episodes=left, resolved=not left,
                                      resolved_why=(why or None) if not left else None)

    def feed_all(self, events: Iterable[dict]) -> "AlertBook":
        for ev in events:
            if isinstance(ev, dict):
                self.feed(ev)
        return self

    def groups(self, acks: dict[str, float] | None = None, hints: dict[str, str] | None = None) -> list[AlertGroup]:
        """Every group, newest news first, with its acknowledgement (``acks``: cause -> time of
        the newest alert acknowledged) and, for a crash, its report's hint (``hints``: class ->
        hint)."""
        acks = acks or {}
        hints = hints or {}
        out = []
        for g in self._groups.values():
            acked_through = acks.get(g.key)
            out.append(replace(g, acknowledged=acked_through is not None and g.news_t <= acked_through,
                               hint=hints.get(g.crash_class or "") or None))
        return sorted(out, key=lambda g: g.last_t, reverse=True)


def past_crash_words(ev: dict) -> str:
    """A ``past_crash`` event in words, the one wording of every view (the resolved crash's
    ``resolved_why``, the event log): "attempt 2 trained past step 39, where attempt 1 crashed";
    passed by a save (``how`` "saved") or by the run's success (``how`` "succeeded"), where no later
    step may ever be logged: "attempt 2 saved step 12 (verified ok), past step 12, ...", "attempt 2
    finished the run, past step 12, ..." (the runner's ``Supervisor._say_passed``)."""
    at = ev.get("crash_step")
    where = f"step {at}" if isinstance(at, int) and not isinstance(at, bool) else "its first step"
    tail = f"where attempt {ev.get('crashed_attempt')} crashed"
    if ev.get("how") == "saved":
        return f"attempt {ev.get('attempt')} saved step {ev.get('step')} (verified ok), past {where}, {tail}"
    if ev.get("how") == "succeeded":
        return f"attempt {ev.get('attempt')} finished the run, past {where}, {tail}"
    return f"attempt {ev.get('attempt')} trained past {where}, {tail}"


def _bad_paths(ev: dict) -> tuple[str, ...]:
    """The checkpoints a bad-save alert calls bad (``values.path``, ``values.paths``)."""
    values = ev.get("values")
    if ev.get("type") != "alert" or ev.get("rule") not in BAD_SAVE_RULES or not isinstance(values, dict):
        return ()
    paths = [values.get("path")] + (list(values["paths"]) if isinstance(values.get("paths"), list) else [])
    return tuple(dict.fromkeys(str(p) for p in paths if isinstance(p, str) and p))


def current(groups: Iterable[AlertGroup], open_now: dict[str, Any] | None) -> list[AlertGroup]:
    """Groups whose open episode has numbers that moved since its last event (a forecast's steps
    left run down at a steady leak without an event): their line re-rendered from the memory
    watch's message of now (``state.json``'s ``memory.alerts``: cause -> ``message``)."""
    now = open_now or {}
    out = []
    for g in groups:
        msg = next((str(now[e]["message"]) for e in g.open_episodes
                    if isinstance(now.get(e), dict) and now[e].get("message")), None)
        out.append(replace(g, title=short_message(msg)) if msg and not g.resolved else g)
    return out


def active(groups: Iterable[AlertGroup]) -> list[AlertGroup]:
    """The groups nobody acknowledged yet, critical ones first, then newest first (then by
    cause, so two causes of the same moment always come in the same order)."""
    return sorted((g for g in groups if g.active), key=lambda g: (not g.critical, -g.last_t, g.key))


def with_acks(groups: Iterable[AlertGroup], acks: dict[str, float]) -> list[AlertGroup]:
    """Groups with these acknowledgements applied on top (a console's own, before the next
    snapshot has read them back from acks.json)."""
    return [replace(g, acknowledged=True) if g.key in acks and g.news_t <= acks[g.key] else g for g in groups]


def read_acks(run_dir: Path) -> dict[str, float]:
    """cause -> time of the newest alert acknowledged; {} when there is no readable file."""
    doc = jsonio.read_json(Path(run_dir) / ACKS_NAME)
    if not isinstance(doc, dict) or not isinstance(doc.get("groups"), dict):
        return {}
    return {str(k): float(v) for k, v in doc["groups"].items() if isinstance(v, (int, float))
            and not isinstance(v, bool)}


def acknowledge(run_dir: Path, groups: Iterable[AlertGroup]) -> dict[str, float]:
    """Acknowledge these groups as they are now (atomic replace of ``acks.json``, merged with
    what other consoles acknowledged); returns the new acknowledgements."""
    acks = read_acks(run_dir)
    for g in groups:
        acks[g.key] = max(acks.get(g.key, float("-inf")), g.last_t)
    doc: AcksFile = {"v": ACKS_VERSION, "groups": acks}
    jsonio.atomic_write_json(Path(run_dir) / ACKS_NAME, doc)
    return acks


def crash_hints(crashes: Iterable[dict[str, Any]]) -> dict[str, str]:
    """class -> the newest crash report's hint for it."""
    out: dict[str, str] = {}
    for c in crashes:
        if isinstance(c, dict) and c.get("class") and c.get("hint"):
            out[str(c["class"])] = str(c["hint"])
    return out
