"""The footer of every screen: Textual's ``Footer`` showing only the keys that fit whole.

Textual's footer lays its keys out in a row and cuts the row at the screen's edge, so on an
80-column terminal the run screen's last key read ``c Chart`` (and the next was gone without a
trace). ``KeyFooter`` leaves out the keys that do not fit whole (``keybar.shown_keys``: the way
out and the help kept first, then the others in the order of ``keys.py``'s tables, the least
needed last); every key stays in the help (``?``) and keeps working."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from moeconsole.console.widgets.keybar import shown_keys


class KeyFooter(Footer):
    _composed_width = -1

    def compose(self) -> ComposeResult:
        width = self._composed_width = self.size.width
        widgets = list(super().compose())
        footer_keys = [w for w in widgets if isinstance(w, FooterKey)]
        shown = {id(footer_keys[i]) for i in
                 shown_keys([(w.key, w.key_display, w.description) for w in footer_keys], width)}
        yield from (w for w in widgets if not isinstance(w, FooterKey) or id(w) in shown)

    def on_resize(self, event: Resize) -> None:
        if event.size.width != self._composed_width:
            self.call_after_refresh(self.recompose)
