"""Active alerts for the alert bar, and their acknowledgements.

An alert is active while it is critical or a warning (or a crash) and nobody acknowledged it.
Acknowledgements live in the run directory (``acks.json``, written by the console only, by
atomic replace), so a console that attaches later, or on another host, does not shout about
what someone already looked at. Pure apart from ``read_acks``/``write_acks``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from console import format as fmt
from console.timeline import Entry
from runner.rundir import jsonio

ACKS_NAME = "acks.json"
ACKS_VERSION = 1


class AcksFile(TypedDict):
    """``<run_dir>/acks.json``."""

    v: int
    acked: list[str]     # alert keys (see ``alert_key``)


@dataclass(frozen=True)
class Alert:
    key: str
    level: str           # "CRIT" or "WARN"
    entry: Entry

    @property
    def line(self) -> str:
        return self.entry.line


def alert_key(entry: Entry) -> str:
    """Stable identity of an alert across polls and consoles: its kind, time, rule and step
    (not its position: the snapshot keeps only the newest events)."""
    ev = entry.event
    if entry.kind == "alert" and ev.get("cause"):
        # one alert per cause: its updates keep the identity (an ack holds) until the level changes
        return f"alert|cause|{ev['cause']}|{ev.get('opened_step')}|{ev.get('level')}|{ev.get('attempt')}"
    what = ev.get("rule") or ev.get("class") or ev.get("path") or ""
    return f"{entry.kind}|{entry.t!r}|{what}|{ev.get('step')}|{ev.get('attempt')}"


def level_of(entry: Entry) -> str | None:
    if entry.kind == "crash":
        return "CRIT"
    if entry.kind == "alert":
        word = entry.text.split(" ", 1)[0]
        return word if word in ("CRIT", "WARN") else None
    return None  # a bad checkpoint arrives with its own alert from the runner


def active(entries: list[Entry], acked: frozenset[str]) -> list[Alert]:
    """Unacknowledged critical and warning alerts (and crashes), newest first. An alert with a
    ``cause`` counts once, as its newest event says (an update carries the new numbers; a
    resolved one is over)."""
    out = []
    causes: set[tuple] = set()
    for e in reversed(entries):
        cause = e.event.get("cause") if e.kind == "alert" else None
        if cause:
            if (cause, e.event.get("attempt")) in causes:
                continue
            causes.add((cause, e.event.get("attempt")))
            if e.event.get("resolved"):
                continue
        level = level_of(e)
        if level and alert_key(e) not in acked:
            out.append(Alert(alert_key(e), level, e))
    return out


def bar_lines(alerts: list[Alert], room: int) -> list[tuple[str, str]]:
    """The alert bar as (text, style) lines: a count, then the newest alerts that fit."""
    if not alerts:
        return []
    crit = sum(a.level == "CRIT" for a in alerts)
    warn = len(alerts) - crit
    counts = ", ".join(f"{n} {w}" for n, w in ((crit, "CRIT"), (warn, "WARN")) if n)
    head = f"{len(alerts)} active alert{'s' if len(alerts) != 1 else ''} ({counts}) · a: acknowledge · enter: details"
    lines = [(head, "alert--crit" if crit else "alert--warn")]
    for a in alerts[: max(0, room - 1)]:
        lines.append((f"{fmt.clock(a.entry.t)} {a.entry.text}", "alert--crit" if a.level == "CRIT"
                      else "alert--warn"))
    return lines


def read_acks(run_dir: Path) -> frozenset[str]:
    doc = jsonio.read_json(run_dir / ACKS_NAME)
    if not isinstance(doc, dict) or not isinstance(doc.get("acked"), list):
        return frozenset()
    return frozenset(str(k) for k in doc["acked"])


def write_acks(run_dir: Path, acked: frozenset[str]) -> None:
    doc: AcksFile = {"v": ACKS_VERSION, "acked": sorted(acked)}
    jsonio.atomic_write_json(run_dir / ACKS_NAME, doc)
