"""KeyBar: the key footer of the run screen and the GPU view in one widget.

Textual's ``Footer`` is a container with one ``FooterKey`` widget per key (ten on the run
screen), each with its styles, render cache and message queue, rebuilt (recomposed) whenever
the screen's bindings change: 1.4 MiB of the attached console's memory. This is one line drawn
as a ``LinesView`` from the same facts the Footer reads: the screen's ``active_bindings``,
those with ``show``, one key per action (the first), in the binding order, each as the app's
key display and the description, dimmed when the key does not apply now; redrawn when the
screen publishes new bindings (``bindings_updated_signal``, as the Footer listens). A click on
a key presses it (``App.simulate_key``, as a FooterKey does); on a dimmed key, the bell. Only
the keys that fit whole are drawn (``shown_keys``), as ``KeyFooter`` does on the other screens."""
from __future__ import annotations

from typing import Sequence

from textual import events

from moeconsole.console.keys import ALWAYS_SHOWN
from moeconsole.console.widgets.lines import LinesView

KEY, DESCRIPTION = "keybar--key", "keybar--description"


def key_width(key_display: str, description: str) -> int:
    """The cells a footer key takes: `` k Kill `` (a space around the key, one after the words;
    Textual's FooterKey padding). The one rule for both footers (``KeyBar``, ``KeyFooter``)."""
    return len(key_display) + 2 + (len(description) + 1 if description else 0)


def shown_keys(keys: Sequence[tuple[str, str, str]], width: int) -> list[int]:
    """Which of a footer's keys (key name, key display, description), in their order, a footer
    ``width`` cells wide draws: those that fit whole (``key_width``), the way out and the help
    (``keys.ALWAYS_SHOWN``) before all others, then the others in order (the tables put the least
    needed last); the rest are left out (they stay in the help and keep working). The one rule
    for both footers (``KeyBar``, ``KeyFooter``). ``width`` 0 (not laid out yet): all."""
    if not width:
        return list(range(len(keys)))
    order = sorted(range(len(keys)), key=lambda i: keys[i][0] not in ALWAYS_SHOWN)
    chosen, used = [], 0
    for i in order:
        need = key_width(keys[i][1], keys[i][2])
        if used + need <= width:
            chosen.append(i)
            used += need
    return sorted(chosen)
KEY_OFF, DESCRIPTION_OFF = "keybar--key-off", "keybar--description-off"


class KeyBar(LinesView):
    COMPONENT_CLASSES = {KEY, DESCRIPTION, KEY_OFF, DESCRIPTION_OFF}
    # the colours of Textual's Footer and FooterKey (textual/widgets/_footer.py DEFAULT_CSS)
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        & > .keybar--key, & > .keybar--key-off {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .keybar--description, & > .keybar--description-off {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .keybar--key-off { text-style: bold dim; }
        /* struck through as well as dimmed: dim is a shade of colour (Textual blends it), the one
           sign a key is off under NO_COLOR or 8 colours; a strike is an attribute of its own */
        & > .keybar--description-off { text-style: dim strike; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.keys: list[tuple[str, str, bool]] = []   # (key display, description, enabled), as drawn
        self._spans: list[tuple[int, int, str, bool]] = []   # x from, x to, key, enabled

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self.show_keys()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def on_resize(self) -> None:
        self.show_keys()   # the keys that fit whole at the new width

    def _bindings_changed(self, screen) -> None:
        if self.is_attached and screen is self.screen:
            self.show_keys()

    def show_keys(self) -> None:
        seen: set[str] = set()
        keys: list[tuple[str, str, str, bool]] = []
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in seen:
                seen.add(binding.action)
                keys.append((binding.key, self.app.get_key_display(binding), binding.description, enabled))
        keys = [keys[i] for i in shown_keys([k[:3] for k in keys], self.size.width)]
        pieces: list[tuple[str, str]] = []
        spans: list[tuple[int, int, str, bool]] = []
        x = 0
        for key, shown, description, enabled in keys:
            key_text, desc_text = f" {shown} ", f"{description} " if description else ""
            pieces += [(key_text, KEY if enabled else KEY_OFF), (desc_text, DESCRIPTION if enabled else DESCRIPTION_OFF)]
            spans.append((x, x + len(key_text) + len(desc_text), key, enabled))
            x += len(key_text) + len(desc_text)
        self.keys = [(shown, description, enabled) for _key, shown, description, enabled in keys]
        self._spans = spans
        self.set_lines([[p for p in pieces if p[0]]])

    def key_at(self, x: int) -> tuple[str, bool] | None:
        """The key drawn at column ``x`` and whether it applies now."""
        for x0, x1, key, enabled in self._spans:
            if x0 <= x < x1:
                return key, enabled
        return None

    def on_mouse_down(self, event: events.MouseDown) -> None:
        hit = self.key_at(event.x)
        if hit is None:
            return
        key, enabled = hit
        if enabled:
            self.app.simulate_key(key)
        else:
            self.app.bell()
