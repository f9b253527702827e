"""The ranks of a multi-node run in one log, merged by time, each line with its rank.

Two sources, whichever the run has:

- Per-rank files. torchrun with ``--log-dir DIR --redirects 3`` (``--tee 3`` to also print)
  writes every worker's output to ``DIR/<rdzv id>_<random>/attempt_<k>/<local rank>/stdout.log``
  and ``stderr.log`` (``torch.distributed.elastic.multiprocessing.api.DefaultLogsSpecs.reify``),
  one ``<rdzv id>_<random>`` directory per node's torchrun. Each file is one rank's own order;
  across files the only shared clock is the timestamp each line carries
  (``moeconsole.runner.ingest.linetime``), so the files are merged by it, a line without one following the
  line before it in its file. The label is the local rank (``r3``), with the node's directory
  when several nodes share the log dir (``n1/r3``) and ``!`` for stderr (``r3!``).
- ``train.log`` itself, when the workers' lines carry a rank prefix (torchrun ``--tee``'s
  ``[rank3]:``/``[default3]:``, Slurm ``srun --label``'s ``3:``;
  ``moeconsole.runner.ingest.formats.split_rank_label``, which leaves a program's own leading count
  whole: CatBoost's round, darknet's batch): the lines stay in the order they arrived, the prefix moves into the label column.

Both behave like ``moeconsole.console.logfile.LogFile`` for the log view (``refresh``, ``len``, ``lines``,
``search``) plus ``labels``; the files are read on demand (a byte-offset index per file), so a
big log opens at once. UI-free.
"""
from __future__ import annotations

import os
import threading
import time
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from moeconsole.console.logfile import LogFile
from moeconsole.runner.ingest.linetime import line_time
from moeconsole.runner.ingest.formats import split_rank_label

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

LOG_DIR_FLAGS = ("--log-dir", "--log_dir")
MAX_FILES = 1024


@dataclass(frozen=True)
class RankFile:
    label: str
    path: Path


def log_dirs(recipe: "RunRecipe | None", run_dir: Path) -> list[Path]:
    """torchrun's ``--log-dir`` in the recipe's command, placeholders filled, relative to where
    the command ran (the recipe's ``workdir``, else where it was launched from)."""
    if recipe is None:
        return []
    words = list(recipe.command)
    values: list[str] = []
    for i, w in enumerate(words):
        for flag in LOG_DIR_FLAGS:
            if w == flag and i + 1 < len(words):
                values.append(words[i + 1])
            elif w.startswith(flag + "="):
                values.append(w[len(flag) + 1:])
    base = recipe.workdir or recipe.launch.cwd or str(run_dir)
    out = []
    for v in values:
        v = v.replace("{run_dir}", str(run_dir)).replace("{run_id}", run_dir.name)
        path = Path(v).expanduser()
        out.append(path if path.is_absolute() else Path(str(base).replace("{run_dir}", str(run_dir))) / path)
    return out


def rank_files(dirs: list[Path]) -> list[RankFile]:
    """Every ``<run>_<random>/attempt_<k>/<local rank>/{stdout,stderr}.log`` under the log dirs,
    labelled by local rank (and node directory when there are several)."""
    found: list[tuple[str, str, int, str, Path]] = []
    for d in dirs:
        top = str(d)
        try:
            runs = sorted((p for p in d.iterdir() if p.is_dir()), key=lambda p: (p.stat().st_mtime, p.name))
        except OSError:
            continue
        for node in runs:
            for attempt in sorted(node.glob("attempt_*")):
                for rank_dir in attempt.iterdir() if attempt.is_dir() else ():
                    if not rank_dir.name.isdigit():
                        continue
                    for stream in ("stdout", "stderr"):
                        f = rank_dir / f"{stream}.log"
                        if f.is_file():
                            found.append((top, node.name, int(rank_dir.name), stream, f))
    nodes = sorted({(d, n) for d, n, _, _, _ in found}, key=lambda dn: [x[1] for x in found].index(dn[1]))
    several = len(nodes) > 1
    out = []
    for top, n, rank, stream, f in sorted(found, key=lambda x: (nodes.index((x[0], x[1])), x[2], x[3] == "stderr")):
        label = (f"n{nodes.index((top, n))}/" if several else "") + f"r{rank}" + ("!" if stream == "stderr" else "")
        out.append(RankFile(label, f))
    return out[:MAX_FILES]


class PrefixedLog:
    """``train.log`` with each worker line's rank prefix moved into the label column; the order
    is the file's (the order the lines arrived in)."""

    kind = "prefix"

    def __init__(self, log: LogFile) -> None:
        self.log = log
        self.path = log.path
        self.describe = "ranks from the [rankN]: / srun --label prefixes of train.log, in the order they arrived"

    def refresh(self) -> bool:
        return self.log.refresh()

    def __len__(self) -> int:
        return len(self.log)

    def lines(self, start: int, count: int) -> list[str]:
        return [split_rank_label(t)[1] if t[:1] in "[0123456789" else t for t in self.log.lines(start, count)]

    def labels(self, start: int, count: int) -> list[str]:
        out = []
        for t in self.log.lines(start, count):
            rank = split_rank_label(t)[0] if t[:1] in "[0123456789" else None
            out.append("" if rank is None else f"r{rank}")
        return out

    def search(self, needle: str, start_line: int, *, backwards: bool = False) -> int | None:
        return self.log.search(needle, start_line, backwards=backwards)


class MergedLog:
    """Per-rank files merged by the time their lines carry (see the module docstring)."""

    kind = "files"

    def __init__(self, files: list[RankFile], *, redact: Callable[[str], str] | None = None,
                 year: int | None = None) -> None:
        self.files = files
        self.logs = [LogFile(f.path, redact=redact) for f in files]
        self.year = year
        self.path = files[0].path if files else Path(os.devnull)
        self.describe = f"{len(files)} per-rank files merged by the time their lines carry"
        self._lock = threading.Lock()
        self._refreshes = 0
        self._read = [0] * len(files)          # lines of each file already merged
        self._last_t = [float("-inf")] * len(files)
        self._t = array("d")                   # merged order: time, file, line
        self._src = array("i")
        self._line = array("q")

    def refresh(self) -> bool:
        """Index what the files gained and merge it in (a worker thread calls this). A line
        without a timestamp follows the last one its file had; in a file that had none yet, a
        line read while following the log takes the time it was first seen (what was there
        when the view opened goes first)."""
        new: list[tuple[float, int, int]] = []
        seen = time.time() if self._refreshes else float("-inf")
        self._refreshes += 1
        for i, log in enumerate(self.logs):
            log.refresh()
            n = len(log)
            done = self._read[i]
            if n <= done:
                continue
            last = self._last_t[i]
            for k in range(done, n, 4096):
                for j, text in enumerate(log.lines(k, min(4096, n - k))):
                    t = line_time(text, self.year)
                    if t is not None and t >= last:
                        last = t
                    new.append((last if last > float("-inf") else seen, i, k + j))
            self._last_t[i] = last
            self._read[i] = n
        if not new:
            return False
        new.sort()
        with self._lock:
            first = new[0][0]
            if not len(self._t) or first >= self._t[-1]:
                cut = len(self._t)
            else:
                cut = bisect_right(self._t, first)
                # lines merged after ``first`` are merged again with the new ones
                tail = list(zip(self._t[cut:], self._src[cut:], self._line[cut:]))
                new = sorted(tail + new)
                del self._t[cut:], self._src[cut:], self._line[cut:]
            self._t.extend(t for t, _, _ in new)
            self._src.extend(s for _, s, _ in new)
            self._line.extend(ln for _, _, ln in new)
        return True

    def __len__(self) -> int:
        return len(self._t)

    def _slice(self, start: int, count: int) -> list[tuple[int, int]]:
        with self._lock:
            stop = min(len(self._t), max(0, start) + max(0, count))
            return list(zip(self._src[max(0, start):stop], self._line[max(0, start):stop]))

    def lines(self, start: int, count: int) -> list[str]:
        pairs = self._slice(start, count)
        out: list[str] = []
        i = 0
        while i < len(pairs):   # runs of consecutive lines of one file are read in one go
            src, line = pairs[i]
            j = i + 1
            while j < len(pairs) and pairs[j] == (src, line + (j - i)):
                j += 1
            texts = self.logs[src].lines(line, j - i)
            out += texts + [""] * (j - i - len(texts))
            i = j
        return out

    def labels(self, start: int, count: int) -> list[str]:
        return [self.files[src].label for src, _ in self._slice(start, count)]

    def search(self, needle: str, start_line: int, *, backwards: bool = False) -> int | None:
        """The first merged line at/after (before, backwards) ``start_line`` holding ``needle``
        (case-insensitive), wrapping around once."""
        n = len(self)
        if not needle or not n:
            return None
        low = needle.lower()
        start_line = min(max(0, start_line), n - 1)
        spans = [(start_line, n), (0, start_line)] if not backwards else [(0, start_line), (start_line, n)]
        for lo, hi in spans:
            blocks = range(lo, hi, 2048) if not backwards else range(hi - 2048, lo - 2048, -2048)
            for b in blocks:
                a, z = max(lo, b), min(hi, b + 2048)
                if a >= z:
                    continue
                texts = self.lines(a, z - a)
                hits = [a + j for j, t in enumerate(texts) if low in t.lower()]
                if hits:
                    return hits[-1] if backwards else hits[0]
        return None


def open_ranks(recipe: "RunRecipe | None", run_dir: Path, log: LogFile, **kw: Any) -> PrefixedLog | MergedLog:
    """The ranks view of a run: its per-rank files when torchrun's ``--log-dir`` holds any, else
    train.log's rank prefixes."""
    files = rank_files(log_dirs(recipe, run_dir))
    if files:
        return MergedLog(files, **kw)
    return PrefixedLog(log)
