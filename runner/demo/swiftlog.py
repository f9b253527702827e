"""Console output in the shape ms-swift 4.x on transformers 5.x produces (its log dicts and progress bars).

Pure formatting functions plus ``SwiftConsole``, which writes them: ``[INFO:swift]`` lines and a
``Train:`` tqdm-style bar on stderr (the bar redrawn with ``\\r``, never a newline), and one
Python-repr dict per logged step on stdout, preceded by the bar-clearing ``\\r`` + spaces + ``\\r``.
Every write is flushed: the log goes to a file that a supervisor tails.
"""
from __future__ import annotations

import math
import os
import sys
from typing import Any, TextIO

BAR_WIDTH = 10
_BAR_CHARS = " ▏▎▍▌▋▊▉█"


def format_time(seconds: float) -> str:
    """ms-swift's ``format_time`` (HEAD: round first): ``5s``, ``1m 0s``, ``1h 2m 5s``, ``2d 0h 0m 1s``."""
    total = int(round(seconds)) if math.isfinite(seconds) else 0
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m {secs}s"
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def as_display(logs: dict[str, Any]) -> dict[str, Any]:
    """transformers 5.x ProgressCallback: every float becomes a ``.4g`` string (nan stays 'nan')."""
    return {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in logs.items()}


def round_floats(logs: dict[str, Any], ndigits: int = 8) -> dict[str, Any]:
    """ms-swift's add_train_message rounds every float to 8 places before logging.jsonl."""
    return {k: (round(v, ndigits) if isinstance(v, float) and math.isfinite(v) else v)
            for k, v in logs.items()}


def train_message(metrics: dict[str, float], step: int, max_steps: int, elapsed: float,
                  steps_this_run: int, memory_gib: float) -> dict[str, Any]:
    """The per-step dict in ms-swift's key order: loss, grad_norm, learning_rate, token_acc, epoch
    (the trainer's), then global_step/max_steps, elapsed_time, remaining_time, memory(GiB),
    train_speed(s/it) (ms-swift's additions; the speed counts only this process's steps)."""
    speed = elapsed / max(steps_this_run, 1)
    logs: dict[str, Any] = dict(metrics)
    logs["global_step/max_steps"] = f"{step}/{max_steps}"
    logs["elapsed_time"] = format_time(elapsed)
    logs["remaining_time"] = format_time(speed * (max_steps - step))
    logs["memory(GiB)"] = round(memory_gib, 2)
    logs["train_speed(s/it)"] = round(speed, 6)
    return round_floats(logs)


def _tqdm_interval(seconds: float) -> str:
    total = int(seconds) if math.isfinite(seconds) else 0
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def progress_bar(done: int, total: int, elapsed: float, steps_this_run: int, desc: str = "Train") -> str:
    """A tqdm bar as tqdm renders it to a non-terminal (10-cell bar, ``it/s`` or ``s/it``)."""
    frac = done / total if total else 1.0
    cells = frac * BAR_WIDTH
    full = int(cells)
    bar = "█" * full
    if full < BAR_WIDTH:
        bar += _BAR_CHARS[int((cells - full) * (len(_BAR_CHARS) - 1))]
        bar = bar.ljust(BAR_WIDTH)
    rate = steps_this_run / elapsed if elapsed > 0 else 0.0
    if rate >= 1 or rate == 0:
        rate_text = f"{rate:.2f}it/s" if rate else "?it/s"
    else:
        rate_text = f"{1 / rate:.2f}s/it"
    remaining = (total - done) / rate if rate else float("nan")
    left = _tqdm_interval(remaining) if rate else "?"
    return f"{desc}: {frac * 100:3.0f}%|{bar}| {done}/{total} [{_tqdm_interval(elapsed)}<{left}, {rate_text}]"


def rss_gib() -> float:
    """Resident memory of this process in GiB: the CPU stand-in for ms-swift's GPU memory(GiB)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1024 ** 3
    except (OSError, ValueError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2


class SwiftConsole:
    """Writes the trainer's console output; silent when ``enabled`` is false (non-zero ranks)."""

    def __init__(self, enabled: bool = True, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.enabled = enabled
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._bar_len = 0

    def info(self, message: str) -> None:
        if self.enabled:
            self.err.write(f"[INFO:swift] {message}\n")
            self.err.flush()

    def bar(self, text: str) -> None:
        if self.enabled:
            self.err.write("\r" + text)
            self.err.flush()
            self._bar_len = len(text)

    def end_bar(self) -> None:
        """tqdm's close(): the bar stays, the cursor moves to a new line."""
        if self.enabled and self._bar_len:
            self.err.write("\n")
            self.err.flush()
            self._bar_len = 0

    def step_dict(self, logs: dict[str, Any]) -> None:
        """``tqdm.write(str(logs))``: clear the bar's line, then the dict line."""
        if self.enabled:
            self.out.write("\r" + " " * max(self._bar_len, 1) + "\r" + str(as_display(logs)) + "\n")
            self.out.flush()
