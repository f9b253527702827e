"""What a screen asks of the app, as typed Textual messages.

Screens sit below the app in the console's layers (cli > commands > app > screens > widgets) and
never import it: a screen that wants a run opened, the bell toggled or an alert toasted posts one
of these; the message bubbles from the screen to ``MoeConsole``, whose ``on_*`` handler does it.
The app's own settings a screen needs (the runs directory, the scratch directory for foreign logs)
are handed to the screen when it is made."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message
from textual.notifications import SeverityLevel

from moeconsole.runner.rundir import rundir

if TYPE_CHECKING:
    from moeconsole.console.foreign import Import


class OpenRun(Message):
    """Show this run on a run screen (``importing``: the background read of a foreign log's history)."""

    def __init__(self, run: rundir.RunDir, importing: Import | None = None) -> None:
        super().__init__()
        self.run = run
        self.importing = importing


class OpenPath(Message):
    """Open a log or directory not made by moeconsole (read in the background, then shown)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ToggleBell(Message):
    """Turn the terminal bell for new critical alerts on or off (the app holds the setting)."""


class AlertNews(Message):
    """New alerts arrived: one toast (replacing the last), and the bell when one is critical."""

    def __init__(self, title: str, text: str, severity: SeverityLevel, *, critical: bool) -> None:
        super().__init__()
        self.title = title
        self.text = text
        self.severity = severity
        self.critical = critical
