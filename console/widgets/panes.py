"""Panes of the run screen: the events list (Enter opens an event), the log tail, and which
zombies/blockers are listed (their table is ``widgets/blockers.py``, mounted at the first one)."""
from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from moeconsole.console import format as fmt
from moeconsole.console import timeline
from moeconsole.console.logtail import MetricColumns
from moeconsole.console.timeline import Entry
from moeconsole.console.widgets.lines import LinesView


def _styled_text(lines: list[tuple[str, str]], widget: Static) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for i, (line, style) in enumerate(lines):
        if i:
            text.append("\n")
        text.append(line, widget.get_component_rich_style(style, partial=True) if style else "")
    return text


def event_pane_entries(events) -> list[Entry]:
    """The events pane: every event of the snapshot as a sentence, oldest first (time order,
    stable sequence), de-duplicated."""
    return timeline.timeline(list(events))


def event_pane_lines(events, width: int | None = None) -> list[str]:
    """The pane's lines, each fitted to ``width`` columns (``Entry.fitted``; None: whole)."""
    entries = event_pane_entries(events)
    return [e.fitted(width) for e in entries] if entries else ["no events yet"]


class EventPane(OptionList):
    """Events in time order; the cursor follows the newest unless moved; Enter opens the detail
    view of the highlighted event (``EventPane.Chosen``)."""

    COMPONENT_CLASSES = OptionList.COMPONENT_CLASSES | {"event--crit", "event--warn", "event--ok", "event--dim"}

    class Chosen(Message):
        def __init__(self, entry: Entry) -> None:
            super().__init__()
            self.entry = entry

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: object = None
        self.entries: list[Entry] = []
        self.plain_lines: list[str] = []
        self._fitted_to: int | None = None

    def show(self, events) -> None:
        key = (len(events), events[-1].get("t") if events else None, id(events[-1]) if events else None)
        if key == self._shown:
            return
        self._shown = key
        entries = event_pane_entries(events)
        following = self.highlighted is None or self.highlighted >= len(self.entries) - 1
        old = self.entries[self.highlighted].seq if (self.highlighted is not None and self.entries
                                                      and not following) else None
        self.entries = entries
        self._set_prompts()
        if not entries:
            return
        if following or old is None:
            self.highlighted = len(entries) - 1
        else:
            self.highlighted = next((i for i, e in enumerate(entries) if e.seq == old), len(entries) - 1)
        if self.highlighted == len(entries) - 1:
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True)
        else:
            self.scroll_to_highlight()

    def _fit_width(self) -> int | None:
        """The columns an event's line has (None before the pane has a size: lines whole)."""
        width = self.scrollable_content_region.width
        return width if width > 0 else None

    def _set_prompts(self) -> None:
        """The options for the entries, each line fitted by words to the pane's width
        (``Entry.fitted``); ``plain_lines`` is what shows."""
        self._fitted_to = width = self._fit_width()
        self.plain_lines = [e.fitted(width) for e in self.entries] or ["no events yet"]   # event_pane_lines' own
        self.set_options([Option(self._prompt(line, e), id=str(i))
                          for i, (line, e) in enumerate(zip(self.plain_lines, self.entries))]
                         or [Option(Text("no events yet", style=self._style("event--dim")), disabled=True)])

    def on_resize(self) -> None:
        if self.entries and self._fit_width() != self._fitted_to:   # new width: the lines fitted again
            highlighted = self.highlighted
            self._set_prompts()
            self.highlighted = highlighted
        # The alert bar or the blocker table came or went: keep the newest event in view.
        if self.entries and self.highlighted == len(self.entries) - 1:
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True)

    def _style(self, name: str):
        return self.get_component_rich_style(name, partial=True) if name else ""

    def _prompt(self, line: str, e: Entry) -> Text:
        return Text(line, style=self._style(e.style), no_wrap=True, overflow="ellipsis")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.entries):
            self.post_message(self.Chosen(self.entries[event.option_index]))


class AlertBar(Static):
    """Active critical and warning alerts above the charts: a count, then the newest first."""

    COMPONENT_CLASSES = {"alert--crit", "alert--warn"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._shown: object = None
        self.plain_lines: list[str] = []

    def show_alerts(self, alerts, room: int, in_headline: str | None = None, width: int | None = None) -> None:
        from moeconsole.console.alerts import bar_lines
        lines = bar_lines(alerts, room, in_headline=in_headline, width=width)
        if lines == self._shown:
            return
        self._shown = lines
        relayout = len(lines) != len(self.plain_lines)  # height auto: only a new line count moves things
        self.plain_lines = [t for t, _ in lines]
        self.update(_styled_text(lines, self), layout=relayout)


class LogTail(LinesView):
    """The last lines of train.log that fit, oldest at the top (a following tail); metric lines
    as aligned columns (``moeconsole.console.logtail``). A line is drawn once: as the tail moves up, the
    lines already on screen are reused."""

    COMPONENT_CLASSES = {"event--dim"}
    OVERFLOW = "ellipsis"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines_in: tuple[str, ...] = ()
        self._records_in: tuple[dict | None, ...] | None = None
        self._shown: object = None
        self._columns = MetricColumns()
        self.plain_lines: list[str] = []

    def show(self, lines: tuple[str, ...], records: tuple[dict | None, ...] | None = None) -> None:
        """The tail's lines and the runner's record of each (``Snapshot.tail_records``: a metric
        line shows its record's values; None: the lines are parsed)."""
        self._lines_in = lines
        self._records_in = records
        self._draw()

    def read_with(self, line_format: object) -> None:
        """The log's declared line format (the recipe's ``log_format``, ``attach --log-format``):
        when the lines are parsed (no records name them), its metric lines become columns too."""
        if line_format is not self._columns.line_format:
            self._columns = MetricColumns(line_format)
            self._shown = None
            self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        h = max(1, self.content_size.height or 10)
        recs = self._records_in[-h:] if self._records_in is not None else None
        key = (h, self._lines_in[-h:], recs)
        if key == self._shown:
            return
        self._shown = key
        self.plain_lines = self._columns.rows(self._lines_in, h, self._records_in) or ["(train.log is empty)"]
        self.set_lines([((line, ""),) for line in self.plain_lines])


def shown_blockers(blockers) -> list[dict]:
    """The zombies and blockers the run screen lists: the telemetry layer's judgement
    (``moeconsole.runner.telemetry.procs.standing``, as --json carries it, ``shown``); the run's
    own processes are not listed. The screen mounts its table (``widgets/blockers.py``, a
    DataTable) only once this is not empty."""
    return [b for b in blockers if isinstance(b, dict) and b.get("pid") is not None and b.get("shown")]
