"""The run screen's source reads recipe.yaml once for the log's declared format and the numbers
it shows (grace, cooldown, hang limit), and a FIFO planted as recipe.yaml never blocks it."""
from __future__ import annotations

import os
import sys
import threading

from moeconsole.console.source import RunSource
from tests.console.conftest import write_run

SPEC = r"^#(?P<step>\d+)# ce~(?P<loss>\S+)"
_watching: list[str] = []
_opens: list[str] = []


def _audit(event: str, args: tuple) -> None:
    if event == "open" and _watching and args and isinstance(args[0], (str, bytes, os.PathLike)):
        if os.fsdecode(args[0]) in _watching:
            _opens.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)   # every open(2) of the watched path, through io.open or os.open


def test_the_recipe_is_read_once_for_the_format_and_the_dialog_numbers(tmp_path):
    run = write_run(tmp_path / "runs", recipe={"name": "odd", "command": ["train"], "log_format": SPEC,
                                                "kill": {"grace_s": 7.0}, "heartbeat": {"timeout_s": 123}})
    source = RunSource(run, gpu=False, host=None)
    _opens.clear()
    _watching[:] = [str(run.recipe)]
    try:
        fmt = source.line_format()
        recipe = source.recipe()
        heartbeat = source.heartbeat_s()
    finally:
        _watching.clear()
    assert fmt is not None and fmt.read("#00010# ce~2.50") is not None
    assert recipe is not None and recipe.kill.grace_s == 7.0 and heartbeat == 123.0
    assert len(_opens) == 1, _opens
    # a recipe that names no format is looked at, not parsed (the YAML reader waits for a dialog)
    plain = RunSource(write_run(tmp_path / "runs2"), gpu=False, host=None)
    assert plain.line_format() is None and not plain._recipe_read


def test_a_fifo_as_recipe_never_blocks_the_poller(tmp_path):
    run = write_run(tmp_path / "runs")
    run.recipe.unlink()
    os.mkfifo(run.recipe)
    source = RunSource(run, gpu=False, host=None)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(source.line_format()), daemon=True)
    reader.start()
    reader.join(timeout=20)
    blocked = reader.is_alive()
    if blocked:   # release the reader (the code before this change blocked in open)
        fd = os.open(run.recipe, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        reader.join(timeout=20)
    assert not blocked, "reading a FIFO recipe.yaml blocked"
    assert got == [None]
