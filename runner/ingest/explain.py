"""``moeconsole parse LOG --explain``: why each line was (or was not) read.

The log is read line by line by the line parser (the reference reader every other path
equals), and the lines are grouped by shape: the text behind its constant prefix with every
number replaced by ``#``. For each shape, in order of first appearance: how many lines, which
reader took them (the records' ``src``, the marks' kinds), the fields they gave, how the step
was found, and for lines that gave nothing the reason, with the first line as an example.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from moeconsole.runner.core.units import clip
from moeconsole.runner.ingest.events import MARK, RECORD
from moeconsole.runner.ingest.files import LOG, resolve_log
from moeconsole.runner.ingest.lines import decode_line, terminal_bytes, visible_segment
from moeconsole.runner.ingest.records import METRIC_HINT_KEYS, STEP_KEYS, own_loss_name
from moeconsole.runner.ingest.formats import split_rank_label
from moeconsole.runner.ingest.parser import LogParser
from moeconsole.runner.ingest.records import RECORD_FIELDS
from moeconsole.runner.ingest.shape import strip_prefix_full

MAX_SHAPES = 40
_NUM_RE = re.compile(r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|\b(?:nan|inf)\b", re.IGNORECASE)
# how each named reader finds its step (the learner says it per line)
_COUNTERS = {
    "swift_dict": "global_step/max_steps", "swift_megatron": "iteration", "hf_dict": "numbered (no step in the dict)",
    "jsonl": "the object's step key", "fairseq_json": "num_updates", "fairseq": "num_updates",
    "hf_state": "step", "megatron": "iteration N/M", "megatron_swift3": "iteration N/M",
    "megatron_mem": "(after N iterations)", "deepspeed_mem": "global_step (else the last step)",
    "nanogpt_pipe": "step N/M", "kv": "step / iter key", "detectron2": "iter", "pipes": "step key",
    "nemo": "global_step", "torchtune": "global_step", "pl_bar": "the bar's count across epochs (or global_step)",
    "tqdm_postfix": "the bar's count (or a step key)", "mmengine": "(epoch-1) x N + i, or Iter i",
    "mmcv": "(epoch-1) x N + i, or Iter i", "user": "the declared (?P<step>) / step key",
    "espnet": "the batch counter + the epochs before (it restarts)", "sb3_table": "time/total_timesteps",
    "ultralytics": "the bar's count + the epochs before (its description's epoch)",
    "fastai": "the table's epoch column",
    "chainer": "the table's iteration column",
    "hf_table": "the table's Step column (else its whole Epoch)",
    "deepspeed_pipe": "steps (the pipeline engine's global_steps)",
    "mindyolo": "(epoch-1) x S + step s/S",
    "spacy": "the table's # column",
    "coqui": "GLOBAL_STEP (the report's header)",
    "open_clip": "epoch x samples per epoch + samples [n/N]",
    "basicsr": "iter (its thousands comma dropped)",
    "cosface": "the iteration glued after [samples/N (p%)]",
    "tetgan": "(iteration-1) x E + epoch of Iter[i/I], Epoch [e/E]",
}


@dataclass
class Shape:
    first_line: int
    example: str
    lines: int = 0
    srcs: Counter = field(default_factory=Counter)
    marks: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    fields: set = field(default_factory=set)
    extras: set = field(default_factory=set)
    counters: Counter = field(default_factory=Counter)


def shape_of(raw: bytes) -> tuple[str, str]:
    """(shape key, visible text) of a raw line (the line as the parser reads it: redraws glued
    without their carriage returns apart, a syslog's escapes undone: ``terminal_bytes``)."""
    seg = visible_segment(terminal_bytes(raw))
    if seg is None:
        return "", ""
    text = decode_line(seg[:4096])
    text = split_rank_label(text)[1]   # CatBoost's round, darknet's batch: their N: is no srun label
    body = strip_prefix_full(text)
    key = re.sub(r"\s+", " ", _NUM_RE.sub("#", body)).strip()
    return key[:100], text


# A line shape (``shape_of``) printed this many times in a live run's log tail, its numbers changing, with no
# training step read from the log: the trainer's own metric line in a format no reader knows. A run of
# ``#00045 1.0164 1.0e-04`` lines had shown "step —" and "no data yet" for minutes without a word of why
# (newcomer round 6).
UNREAD_REPEATS = 10
# A tqdm bar (a download's, a dataset map's) fills a tail before training with one shape too: its left part
# ends '{percentage:3.0f}%|' (tqdm/std.py ``format_meter``, l_bar), never a metric line's.
_TQDM_BAR = "%|"


# A metric line carries a name the parser reads as a training step or metric (``records.STEP_KEYS``,
# ``records.METRIC_HINT_KEYS``: loss, lr, grad norm; ``records.own_loss_name``: a loss of the loop's own name), or
# opens with a step-like counter (``#00045 1.0164 ...``, ``[12/100] 1.23 ...``, ``3: 0.52``). Lines with neither
# repeat before training with changing numbers too and no reader should read them, so "set log_format" would be
# wrong advice there (review R60): NCCL_DEBUG=INFO ``NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P``, vLLM's
# ``Avg prompt throughput: ... tokens/s``, DeepSpeed's ``finished initializing model - num_params = ...``, tqdm
# bars with no total (``45it [00:10, 4.50it/s]``, ``Generating train split: 1234 examples [...]``).
_SHAPE_WORD = re.compile(r"(?<![#\w])[A-Za-z_][\w/]*")
_SHAPE_COUNTER = re.compile(r"^[\[(]?#+(?:/#+)?[\])]?:?(?: |$)")


def _metric_like(key: str) -> bool:
    """Does the line shape ``key`` (``shape_of``) carry a step or metric name, or open with a counter?"""
    if _SHAPE_COUNTER.match(key):
        return True
    words = [w.lower() for w in _SHAPE_WORD.findall(key)]
    names = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    return any(n in STEP_KEYS or n in METRIC_HINT_KEYS or own_loss_name(n) for n in names)


def unread_shape(lines: Iterable[str]) -> tuple[int, str] | None:
    """(how many, the first) of the lines of the shape printed most among ``lines``, of those holding at
    least two numbers, when it was printed ``UNREAD_REPEATS`` times or more and not always the same text
    (a line repeated as it is is no metric line) and it looks like a metric line (``_metric_like``); else None. For a log none of whose lines gave a step:
    the console says the format is not read and where to declare it (``console.format.unread_log_words``)."""
    counts: Counter = Counter()
    first: dict[str, str] = {}
    texts: defaultdict[str, set[str]] = defaultdict(set)
    for line in lines:
        key, text = shape_of(line.encode("utf-8", "surrogateescape"))
        if key.count("#") < 2 or _TQDM_BAR in text or not _metric_like(key):
            continue
        counts[key] += 1
        first.setdefault(key, text)
        if len(texts[key]) < 2:
            texts[key].add(text)
    if not counts:
        return None
    key, n = counts.most_common(1)[0]
    return (n, first[key]) if n >= UNREAD_REPEATS and len(texts[key]) > 1 else None


def explain_lines(data: bytes, line_format: Any = None) -> str:
    parser = LogParser(line_format=line_format)
    shapes: dict[str, Shape] = {}
    n_records = n_evals = n_skipped = 0
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    line_shape: dict[int, Shape] = {}      # recent lines' shapes: a record may come from an earlier line
    waiting: dict[int, tuple[Shape, str]] = {}   # lines that gave nothing (yet): shape, why

    def count_event(sh: Shape | None, kind: str, obj: dict) -> None:
        nonlocal n_records, n_evals
        if kind == RECORD:
            n_records += 1
        elif kind == MARK:
            n_evals += obj["kind"] == "eval"
        if sh is None:
            return
        if kind == RECORD:
            sh.srcs[obj["src"]] += 1
            sh.fields.update(f for f in RECORD_FIELDS if obj.get(f) is not None)
            sh.extras.update(list(obj["extra"])[:12])
            how = parser.shapes.last_counter if obj["src"] == "learned" else _COUNTERS.get(obj["src"], "")
            if obj["src"] == "hf_dict" and obj["max_steps"] is not None and "step_inferred" in obj["extra"]:
                how = "the count of the Trainer's progress bar drawn with it"
            if how:
                sh.counters[how] += 1
        elif kind == MARK:
            sh.marks[obj["kind"]] += 1

    def attribute(events: list, line: int) -> None:
        """Each record to the line it was read from (``LogParser.origins``: a progress bar's
        last count, a step block, a dict held for the line after it give theirs later)."""
        origins = list(parser.origins)
        if len(origins) != sum(1 for kind, _ in events if kind == RECORD):
            origins = []
        k = 0
        for kind, obj in events:
            at = line
            if kind == RECORD and origins:
                at, k = origins[k], k + 1
            waiting.pop(at, None)
            count_event(line_shape.get(at), kind, obj)

    for i, raw in enumerate(lines, 1):
        key, text = shape_of(raw)
        st = parser.stats
        before = (st.metric_lines, st.mark_lines, st.ignored_lines, st.unparsed_lines)
        parser.reason = ""
        events = parser.process_line(raw)
        sh = shapes.get(key) if key else None
        if key and sh is None and len(shapes) < MAX_SHAPES * 50:
            sh = shapes[key] = Shape(i, clip(text, 160))
        if sh is not None:
            sh.lines += 1
            line_shape[i] = sh
            line_shape.pop(i - 4096, None)
        attribute(events, i)
        if sh is not None and not events:
            after = (st.metric_lines, st.mark_lines, st.ignored_lines, st.unparsed_lines)
            if after[0] == before[0] and after[1] == before[1]:
                reason = parser.reason or ("understood, carries nothing (a progress bar, a header)"
                                           if after[2] > before[2] else "no metrics")
                waiting[i] = (sh, reason)
    parser.origins.clear()
    attribute(parser.end_of_input(), len(lines))
    for sh, reason in waiting.values():
        n_skipped += 1
        sh.reasons[reason] += 1
    out = [f"{len(lines):,} lines, {n_records:,} training records, {n_evals:,} evaluations, "
           f"{n_skipped:,} lines skipped; {len(shapes):,} line shapes"]
    ordered = sorted(shapes.values(), key=lambda s: s.first_line)
    for k, sh in enumerate(ordered[:MAX_SHAPES], 1):
        took = []
        if sh.srcs:
            took.append("records by " + ", ".join(f"{s} ({n:,})" for s, n in sh.srcs.most_common()))
        if sh.marks:
            took.append("marks: " + ", ".join(f"{m} ({n:,})" for m, n in sh.marks.most_common()))
        if sh.reasons:
            took.append("skipped: " + "; ".join(f"{r} ({n:,})" for r, n in sh.reasons.most_common(3)))
        out.append(f"shape {k}: {sh.lines:,} line(s) -> " + (" | ".join(took) or "nothing"))
        if sh.srcs:
            fields = ", ".join(sorted(sh.fields)) or "none"
            extra = ", ".join(sorted(sh.extras)[:8]) + (" ..." if len(sh.extras) > 8 else "")
            out.append(f"    fields: {fields}" + (f"; extra: {extra}" if extra else ""))
            if sh.counters:
                out.append("    step: " + ", ".join(c for c, _ in sh.counters.most_common(2)))
        out.append(f"    e.g. line {sh.first_line}: {sh.example}")
    if len(ordered) > MAX_SHAPES:
        out.append(f"... {len(ordered) - MAX_SHAPES:,} more shapes")
    return "\n".join(out) + "\n"


def explain_path(path: Any, line_format: Any = None) -> str:
    """The explanation of a log file (``parse --explain``); other inputs (a trainer_state.json,
    a directory) are explained by the file they resolve to when it is a log."""
    real, kind = resolve_log(path)
    head = f"{real}\n"
    if kind != LOG:
        return head + f"  a {kind}: read as a whole document, not line by line (nothing to explain)\n"
    try:
        data = real.read_bytes()
    except OSError as exc:
        from moeconsole.runner.core.errors import InputError
        raise InputError(f"{real}: {exc.strerror or exc}") from None
    return head + explain_lines(data, line_format)
