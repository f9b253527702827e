"""How alert groups read on screen: the alert bar, the one toast for news, the detail view.

The groups themselves (one per cause, with a count, the first and last step, and whether they
are acknowledged) come from the snapshot (``moeconsole.runner.rundir.alertgroups``), so the screen shows exactly
what ``--json`` carries. Pure: groups in, lines out.
"""
from __future__ import annotations

from typing import Literal

from moeconsole.console import format as fmt
from moeconsole.runner.rundir.alertgroups import AlertGroup

ToastSeverity = Literal["warning", "error"]  # a toast for news: error when one is critical

LEVEL_WORD = {"critical": "CRIT", "warning": "WARN"}
KEYS_HINT = "a: acknowledge · d: details"


def word(group: AlertGroup) -> str:
    return LEVEL_WORD.get(group.level, group.level.upper())


def style(group: AlertGroup) -> str:
    return "alert--crit" if group.critical else "alert--warn"


def bar_lines(groups: list[AlertGroup], room: int, *, in_headline: str | None = None,
              width: int | None = None) -> list[tuple[str, str]]:
    """The alert bar as (text, style) lines: a count with the keys, then the groups that fit
    (critical first), each "CRIT <what> (x<count>, steps a-b) · hh:mm:ss", fitted to ``width``
    by dropping low-value words, never cutting one (``AlertGroup.headline``). ``in_headline``: the
    cause the status line already shows; it is counted, not repeated (80x24 has no line to spare)."""
    if not groups:
        return []
    crit = sum(g.critical for g in groups)
    counts = ", ".join(f"{n} {w}" for n, w in ((crit, "CRIT"), (len(groups) - crit, "WARN")) if n)
    head = f"{len(groups)} active alert{'s' if len(groups) != 1 else ''} ({counts}) · {KEYS_HINT}"
    lines = [(head, "alert--crit" if crit else "alert--warn")]
    for g in [g for g in groups if g.key != in_headline][: max(0, room - 1)]:
        when = f" · {fmt.clock(g.last_t)}"
        fit = None if width is None else width - len(word(g)) - 1 - len(when)
        lines.append((f"{word(g)} {g.headline(fit)}{when}", style(g)))
    return lines


def toast(news: list[AlertGroup]) -> tuple[str, str, ToastSeverity]:
    """One toast for every group that got news in a poll: (title, message, severity). Several
    causes share one toast, so toasts never pile up over the screen."""
    crit = any(g.critical for g in news)
    severity: ToastSeverity = "error" if crit else "warning"
    if len(news) == 1:
        g = news[0]
        title = "crash" if g.members and g.members[-1].get("type") == "crash" else f"{word(g)} alert"
        return title, g.latest(), severity
    shown = [f"{word(g)} {g.latest()}" for g in news[:3]]
    more = f"\n…and {len(news) - 3} more (see the alert bar)" if len(news) > 3 else ""
    return f"{len(news)} new alerts", "\n".join(shown) + more, severity


def group_detail_lines(group: AlertGroup, crash_report: dict | None = None) -> list[str]:
    """The detail view of a group: what, how often and where, the hint, then every occurrence."""
    from moeconsole.console.timeline import sentence
    lines = [f"{word(group)} {group.headline()}", "",
             f"cause: {group.key}", f"level: {group.level}",
             f"seen: {group.count} time{'s' if group.count != 1 else ''}, first {fmt.clock(group.first_t)}, "
             f"last {fmt.clock(group.last_t)}",
             f"steps: {group.steps() or fmt.NA}",
             f"attempts: {', '.join(map(str, group.attempts)) or fmt.NA}",
             f"rules: {', '.join(group.rules)}",
             f"acknowledged: {'yes' if group.acknowledged else 'no'}",
             f"state: {group.standing()}"]
    if group.hint:
        lines += ["", f"hint: {group.hint}"]
    lines += ["", "occurrences (newest last):"]
    lines += [f"  {fmt.clock(ev.get('t'))} {sentence(ev)[0]}" for ev in group.members]
    if crash_report:
        lines += ["", f"crash report (attempt {crash_report.get('attempt')}):",
                  f"summary: {crash_report.get('summary') or ''}",
                  f"recovery: {crash_report.get('recovery') or fmt.NA}"]
        mem = crash_report.get("memory")
        if isinstance(mem, dict) and mem.get("verdict"):
            lines.append(f"memory verdict: {mem['verdict']}: {mem.get('summary') or ''}")
        evidence = crash_report.get("evidence") or []
        if evidence:
            lines.append("evidence:")
            lines += [f"  {line}" for line in evidence]
    return lines
