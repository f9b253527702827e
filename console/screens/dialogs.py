"""Modal dialogs: the confirmation (y/n) for process-changing actions, the help screen built
from the key tables, a one-line text prompt (filter, search, open path) and the detail view
of an event or alert."""
from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from moeconsole.console.widgets.footer import KeyFooter
from moeconsole.console import keys
from moeconsole.console.chart import MARK_MEANINGS
from moeconsole.console.confirmations import Confirmation


def confirm_keys_line() -> str:
    """The dialog's own line of keys, from the same table as its footer (the footer said "n No"
    where this line said "n / Esc = cancel"): ``y = yes, do it    n / Esc = cancel``."""
    by_action: dict[str, list[keys.Key]] = {}
    for k in keys.CONFIRM_KEYS:
        by_action.setdefault(k.action, []).append(k)
    names = {"escape": "Esc", keys.CTRL_C: "Ctrl-C"}
    parts = [" / ".join(names.get(k.key, k.shown_key) for k in ks) + " = " + ks[0].label.lower()
             for ks in by_action.values()]
    return "    ".join(parts)


class ConfirmScreen(ModalScreen[bool]):
    """Shows what will happen (PIDs, escalation timer); dismisses True only on 'y'."""

    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.CONFIRM_KEYS)

    def __init__(self, confirmation: Confirmation) -> None:
        super().__init__()
        self.confirmation = confirmation

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.confirmation.title, style="bold"), id="dialog-title")
            # plain text: a process's command line, a pause reason are no markup (`[/x]` in a zombie's
            # arguments had ended the console in a MarkupError: newcomer round 11)
            yield Static(Text("\n".join(self.confirmation.lines)), id="dialog-body")
            yield Static(confirm_keys_line(), id="dialog-keys")
        yield KeyFooter()

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)


NOTE_WIDTH = 18

# The charts' marks are explained right after the keys of the screen that draws them.
CHART_MARKS_AFTER = "Run screen"


# Below this many columns the help has no note column: the note ends the description instead. At
# 60 columns the description was squeezed to 15 characters beside the note's 18; at 80 to 36 (the
# run browser's help ran "Open the selected run: charts, / events, crashes, checkpoints (live /
# runs attach)." over three lines: newcomer round 4), where the notes inline leave it 60.
NOTE_COLUMN_MIN_WIDTH = 100


def help_table(current: str | None = None, width: int | None = None) -> Group:
    """The help's key tables, one per screen (``current``'s first) under its name: the key column
    is as wide as the widest key of any screen, so every section lines up and a screen's name (a
    heading on its own line, never in the key column) takes no room from what the keys do.
    ``width``: the terminal's columns (None: wide enough for the notes in a column of their own)."""
    with_notes = width is None or width >= NOTE_COLUMN_MIN_WIDTH
    order = sorted(keys.SCREENS, key=lambda s: s[0] != current)
    sections = [(name, [(key, what, note) for key, what, note in keys.help_rows(table_keys)])
                for name, table_keys in order]
    key_width = max([len(key) for _, rows in sections for key, _, _ in rows]
                    + [len(mark) for mark, _ in MARK_MEANINGS])

    def table(rows: list[tuple[str, str, str]]) -> Table:
        out = Table(show_header=False, box=None, pad_edge=False, expand=True)
        out.add_column("key", no_wrap=True, width=key_width)
        out.add_column("what it does", ratio=1)
        if with_notes:
            # the note ("asks to confirm; off with --readonly") wraps in a narrow column of its own
            out.add_column("", max_width=NOTE_WIDTH)
        for key, what, note in rows:
            # plain text: "[rankN]:" is no markup
            if with_notes:
                out.add_row(Text(key), Text(what), Text(note))
            else:
                out.add_row(Text(key), Text(f"{what} ({note})" if note else what))
        return out

    parts: list[RenderableType] = []
    for name, rows in sections:
        parts += [Text(""), Text(name, style="bold underline"), table(rows)]
        if name == CHART_MARKS_AFTER:
            parts += [Text(""), Text("Chart marks", style="bold underline"),
                      table([(mark, meaning, "") for mark, meaning in MARK_MEANINGS])]
    return Group(*parts[1:])


def scroll_words(scroll_y: float, max_scroll_y: float) -> str:
    """What the bottom edge of a scrolling dialog says: where more lies and the keys that reach
    it; nothing when all of it is shown (the help at 120x35 ran on below its box, unmarked)."""
    if max_scroll_y <= 0:
        return ""
    above, below = scroll_y > 0, scroll_y < max_scroll_y
    if above and below:
        return "more above and below: ↑ ↓ PgUp PgDn"
    return "more below: ↓ PgDn End" if below else "more above: ↑ PgUp Home"


def mark_scroll(screen: ModalScreen, scroll: VerticalScroll) -> None:
    """Keep ``scroll``'s bottom border saying ``scroll_words``, as it scrolls and as the
    terminal's size changes what fits."""
    def update(*_: object) -> None:
        scroll.border_subtitle = scroll_words(scroll.scroll_y, scroll.max_scroll_y)
    screen.watch(scroll, "scroll_y", update, init=False)
    screen.watch(scroll, "virtual_size", update, init=False)
    screen.watch(scroll, "size", update, init=False)
    screen.call_after_refresh(update)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "close", "Close"),
                                             Binding(keys.CTRL_C, "close", "Close", show=False, priority=True)]

    def __init__(self, current: str | None = None) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text("moeconsole keys (the UI is a client: closing it never stops a run)",
                              style="bold"))
            yield Static(help_table(self.current, self.app.size.width), id="help-table")
        yield KeyFooter()

    def on_mount(self) -> None:
        mark_scroll(self, self.query_one("#help", VerticalScroll))

    def on_resize(self) -> None:
        """A pane resized across NOTE_COLUMN_MIN_WIDTH lays the table out again."""
        wide = self.app.size.width >= NOTE_COLUMN_MIN_WIDTH
        if wide != getattr(self, "_wide", None):
            self._wide = wide
            self.query_one("#help-table", Static).update(help_table(self.current, self.app.size.width))

    def action_close(self) -> None:
        self.dismiss(None)


class PromptScreen(ModalScreen[str | None]):
    """One line of input; Enter returns it, Esc returns None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel"),
                                             Binding(keys.CTRL_C, "cancel", "Cancel", show=False, priority=True)]

    def __init__(self, label: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.label = label
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt"):
            yield Static(self.label)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
        yield KeyFooter()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class DetailScreen(ModalScreen[None]):
    """The full text of one event or alert: every field, evidence, crash report, verdict."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,enter", "close", "Close"),
                                             Binding(keys.CTRL_C, "close", "Close", show=False, priority=True)]

    def __init__(self, title: str, lines: list[str]) -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail"):
            yield Static(Text(self.title_text, style="bold"), id="detail-title")
            yield Static(Text("\n".join(self.lines)), id="detail-body")
        yield KeyFooter()

    def on_mount(self) -> None:
        mark_scroll(self, self.query_one("#detail", VerticalScroll))

    def action_close(self) -> None:
        self.dismiss(None)
