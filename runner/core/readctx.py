"""A log reader's context, saved with ``state.json``'s ``log_offset`` (its ``log_context``).

A runner that is SIGKILLed and replaced (``supervise``, an adoption after a reboot) reads the
log on from the offset its predecessor saved. Some lines before that offset set how the lines
after it read: the Trainer's ``Total optimization steps = N`` banner (every record's
``max_steps``), a table's header (fastai, spaCy, a transformers results table, ultralytics, a
metrics CSV: which column is which), Keras' ``Epoch 3/10`` before its batch lines, a bar's epoch
offset, unsloth's banner, a VITS-style ``Train Epoch: N [P%]`` line (its step list comes on the next
line), the count step-less dicts are numbered on from. ``LogParser.
reading_context`` gives this record of them, ``LogParser.restore_context`` puts it into a new
parser.

What it may hold: numbers, flags, and column names (the names a framework logs its values
under). Never other text of the log (a line may hold a secret): no line, message or description
is kept; a line's shape (its text with every number as ``#``, how the shape learner knows a
metric line again) and the last step-less dict (another process's copy of it on the next line is
not a new step) only as digests (``digest``, BLAKE2b, as ``log_seen``); a process label only
as ``rank N`` / ``pid N``. Bounded: at most ``MAX_COLUMNS`` names of at most ``MAX_NAME``
characters each, ``MAX_BARS`` bar totals, ``MAX_SHAPES`` shapes; a wider header is not saved (its
table reads as before: from its next header). Versioned: a runner reads a context of the versions in
``CONTEXT_READS`` only (its own ``CONTEXT_VERSION`` and the older ones that mean the same); a state saved
by an older runner (no ``log_context``, or a version not read) or a newer one reads on from the offset as before.
"""
from __future__ import annotations

import re
from typing import Annotated

import msgspec

from moeconsole.runner.core.numbers import is_finite_number

# 2: mixed_eval may hold a number's text (NUMBER_TEXT), LeRobot's cadence and scale are kept
# 3: a VITS-style epoch line's epoch (its step list on the next line) is kept (batch 40)
# 4: the count a resumed attempt's training bar starts at (``bar_start``, 3D Gaussian Splatting's
#    --start_checkpoint) and a nerfstudio table's stat names (``nerfstudio``) are kept, and the epoch
#    shape's digests hold its shape up to its last value second (``prefix_digests``; batch 46). Since
#    R42 no command sets ``bar_start`` (LangSplat's --start_checkpoint restarts its count at 0); one a
#    v4 runner saved is still restored, so the run it began reads on as it counted.
# 5: slime's step lines' numbering (``slime_shift``; review R47: a v4 runner read them by their
#    printed id, a runner before batch 47 as its dict reader's 1, 2, ...; a v4 context does not say)
# 6: a line under Spark's log4j prefix ("22/06/01 10:05:00 INFO Trainer: ") is shaped without its
#    logger's class (batch 50), so its shape's digest differs from a v5 runner's (review R56)
# 7: the Trainer's logging cadence the log printed (``logging_every``, ``logging_first``; batch 54):
#    a v6 runner numbered a step-less dict the entry after the last step whatever the log said
# 8: one epoch's steps from the Trainer's banner and the logging_steps its first step-less dict's
#    epoch told (``epoch_updates``, ``epoch_every``), the banner's rows when the offset falls inside
#    its block (``banner_rows``; batch 57): a v7 runner numbered those dicts one by one
CONTEXT_VERSION = 8
# The versions this runner restores: its own, and every older one whose fields all mean here what
# they meant there. 2 does (the review of batch 40): 3 only added ``vits_epoch``, optional; a v2
# runner never saved a header without a "step" column (its read_csv_header refused one named by
# "global_step" alone) and its rows under a saved header read as a fresh parser of this version
# reads them (test-tube's "created_at" passed over, a row with its step cell empty no end of the
# table): refusing v2 only threw away every in-flight run's context at an upgrade. The version
# still goes up when a field is added, so an older runner's own check tells it apart (for the
# contexts saved since R42: ``UNWRITTEN_VERSION``). 3 does too (batch 46): 4 only added ``bar_start`` and ``nerfstudio``, optional; a v3 context has neither because a
# v3 runner counted every bar from 0, as this one does, and read no nerfstudio table.
# 4 does too (R47): 5 only added ``slime_shift``, optional; a v4 context has none, and the parser
# tells the numbering it was read with from the next slime line (``LogParser._slime_step``).
# 5 does too (R56): 6 changed no field, only the shape of a line under Spark's log4j prefix; a
# digest a v5 runner saved of one (the logger's class kept in front) is matched as that runner made
# it (``shape.legacy_head``), so its epochs and counters are taken up. A v5 runner refuses a v6
# context (its own check): it would not know such a line's shape again.
# 6 does too (batch 54): 7 only added ``logging_every`` and ``logging_first``, optional; a v6 context
# has neither because a v6 runner read no cadence, and this one reads on as a fresh parser of this
# version would until the log prints its logging_steps again (the step-less dicts counted one by one).
# 7 does too (batch 57): 8 only added ``epoch_updates``, ``epoch_every`` and ``banner_rows``, optional; a v7 context
# has neither because a v7 runner read no banner's epoch, and this one numbers on as that one did.
CONTEXT_READS = (2, 3, 4, 5, 6, 7, CONTEXT_VERSION)
# The version of a context saved without its ``v``: ``omit_defaults`` left out a ``v`` equal to its
# default, so every runner up to version 4 saved none (reviewed in R42: a v3 runner read a v4
# context as its own and lost ``bar_start``). ``ingest_pipe._saved`` now writes it always; a context
# without one was saved by a runner of version 4 or older, all of which this runner reads.
UNWRITTEN_VERSION = 4
MAX_COLUMNS = 64
MAX_NAME = 64
MAX_BARS = 16
MAX_SHAPES = 8
MAX_PREFIXES = 16
_TOKEN_END_RE = re.compile(r"[^\s,;|](?=[\s,;|])")
PROCESS_RE = r"^(?:rank|pid) \d{1,9}$"
LABEL_RE = r"^\d{1,20}$"

_Int = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_Names = Annotated[list[Annotated[str, msgspec.Meta(max_length=MAX_NAME)]], msgspec.Meta(max_length=MAX_COLUMNS)]
_Sep = Annotated[str, msgspec.Meta(max_length=4)]
_Digest = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{32}$")]
# a value kept as the log printed it (a CSV row's "nan" is compared as read): a number's text only
# (".5" and "-.5" too, as float() reads them)
NUMBER_TEXT = r"^[-+]?(?:(?:\d{1,20}(?:\.\d{0,20})?|\.\d{1,20})(?:[eE][-+]?\d{1,4})?|nan|NaN|NAN|inf|Inf|INF|[Ii]nfinity)$"
_NUMBER_TEXT_RE = re.compile(NUMBER_TEXT)
_NumberText = Annotated[str, msgspec.Meta(pattern=NUMBER_TEXT)]


class ReadingContext(msgspec.Struct, omit_defaults=True):
    """The reading context (see the module's doc). Unknown keys are kept out, not refused: a
    newer runner's context must not make state.json unreadable to an older one."""
    v: int = CONTEXT_VERSION
    last_step: _Int | None = None          # the last training step given (step-less dicts count on)
    records: Annotated[int, msgspec.Meta(ge=0)] = 0   # the records given (a log's first record is held)
    last_epoch: float | None = None        # the epoch of the last numbered dict (an epoch going back: a new run)
    run_total: _Int | None = None          # the run's length its framework announced (max_steps)
    resume_step: _Int = 0                  # the step the attempt resumed from (its marker's argv)
    bar_start: _Int = 0                    # the count its training bar starts at behind that step (v4)
    stop_step: _Int | None = None          # modded-nanogpt's "stopping_early: ... step:N/T"
    trainer_bar: bool = False              # the Hugging Face Trainer's bar was drawn
    unsloth: bool = False                  # unsloth_train's banner was seen
    vits_epoch: _Int | None = None         # a VITS-style "Train Epoch: N [P%]" line was the last line read
    ds_off: bool = False                   # a trainer's step-less records number the steps, not DeepSpeed's
    # whose step-less dicts and whose labelled step lines are read (one process's of several that
    # print the same events): "rank N" or "pid N" only (a host's label is not kept)
    dict_process: Annotated[str, msgspec.Meta(max_length=20, pattern=PROCESS_RE)] | None = None
    text_process: Annotated[str, msgspec.Meta(max_length=20, pattern=PROCESS_RE)] | None = None
    # several processes were seen printing to the log, and the last "GPU N" line's step and N: a
    # line's "GPU N" is its process's label once several print (``LogParser._gpu_printing``)
    several_printing: bool = False
    gpu_step: tuple[_Int, _Int] | None = None
    # a progress bar without a step of its own: its epoch label (digits only), the steps of the
    # epochs before it, the epoch's total, the highest count, the last step given
    bar_label: Annotated[str, msgspec.Meta(max_length=20, pattern=LABEL_RE)] | None = None
    bar_offset: _Int = 0
    bar_total: _Int | None = None
    bar_top: _Int = 0
    bar_step: _Int | None = None
    bar_postfix_first: bool = False
    bare_bars: Annotated[list[tuple[_Int, _Int]], msgspec.Meta(max_length=MAX_BARS)] = []   # total, last count
    header_epoch: float | None = None      # an "Epoch 3/10" line before the counter lines (Keras)
    header_epochs: _Int | None = None      # ... its total
    epoch_lr: tuple[_Int, float] | None = None   # Keras' LearningRateScheduler line before its epoch's record
    # the header of the table being read: its columns (fastai, spaCy, ultralytics' loss columns,
    # a transformers results table and its separator, a metrics CSV and its separator)
    fastai: _Names | None = None
    spacy: _Names | None = None
    yolo: _Names | None = None
    yolo_flag: bool = False
    hf_table: _Names | None = None
    hf_table_sep: _Sep | None = None
    csv: _Names | None = None
    csv_sep: _Sep | None = None
    nerfstudio: _Names | None = None       # a nerfstudio LocalWriter table's stat names (v4)
    chainer: _Names | None = None          # a chainer PrintReport header's entries (widths follow from them)
    # the shape learner's line shapes (a metric line with its numbers as "#": log text, so only
    # their ``digest``): the one whose epochs are the steps (``prefix_digests``: a line of the same
    # epochs may show fewer or more values), and each one's counter across epochs (digest, offset,
    # last counter, last epoch, top, closed epoch)
    epoch_shape: Annotated[list[_Digest], msgspec.Meta(max_length=MAX_PREFIXES)] = []
    shapes: Annotated[list[tuple[_Digest, _Int, _Int | None, float | None, _Int, float | None]],
                      msgspec.Meta(max_length=MAX_SHAPES)] = []
    # ESPnet2's and WeNet's batch counters across their epochs (offset, last counter, last epoch,
    # top, closed epoch), and whether WeNet's numbers are batch/total
    espnet: tuple[_Int, _Int | None, float | None, _Int, float | None] | None = None
    wenet: tuple[_Int, _Int | None, float | None, _Int, float | None] | None = None
    wenet_batch_total: bool | None = None
    # evaluation values last printed beside training values (a Lightning bar's val_loss): the same
    # ones printed beside later steps are not a new evaluation
    mixed_eval: Annotated[dict[Annotated[str, msgspec.Meta(max_length=MAX_NAME)], float | _NumberText],
                          msgspec.Meta(max_length=MAX_COLUMNS)] | None = None
    hf_table_loss: float | None = None     # a transformers results table's last row's training loss
    last_dict: _Digest | None = None       # the last line's step-less dict (only its ``digest``)
    text_rec: tuple[_Int, float | None] | None = None   # the last step line's step and loss (its copies are one)
    # ms-swift 2.x/3.x: the last dict's step and seconds (its train_speed), and the step time given to it
    swift_rate: tuple[_Int, float] | None = None
    swift_period: float | None = None
    # the last evaluation read: its step, loss, the records read before it and a digest of its split
    # and values but each rank's own (the same one printed again by another rank is not a new one)
    last_eval: tuple[_Int | None, float, _Int, _Digest] | None = None
    # the last two exact steps of LeRobot's tracker lines: the cadence a rounded "step:1K" is read by
    lerobot_steps: Annotated[list[_Int], msgspec.Meta(max_length=2)] | None = None
    # LeRobot's banner: one step's samples and the dataset's frames (a rounded step's check)
    lerobot_samples: Annotated[int, msgspec.Meta(ge=1, le=(1 << 63) - 1)] | None = None
    lerobot_frames: Annotated[int, msgspec.Meta(ge=1, le=(1 << 63) - 1)] | None = None
    # what is added to the id of slime's "step N: {'train/...}" lines (0: the id is the step, since
    # version 5; 1: a run a runner before it read, numbered 1, 2, ... by its dict reader); None:
    # no such line was read, or a context of version 4 or older (the parser decides at the next one)
    slime_shift: Annotated[int, msgspec.Meta(ge=0, le=1)] | None = None
    # the Hugging Face Trainer's logging_steps and logging_first_step as the log printed them: the
    # steps of its step-less dicts (``LogParser._next_logged_step``; v7)
    logging_every: Annotated[int, msgspec.Meta(ge=1, le=(1 << 63) - 1)] | None = None
    logging_first: bool = False
    # one epoch's optimizer steps as the Trainer's banner told them, and the logging_steps the
    # first step-less dict's epoch told from them (``formats.epoch_logging_steps``; v8)
    epoch_updates: Annotated[int, msgspec.Meta(ge=1, le=(1 << 63) - 1)] | None = None
    epoch_every: Annotated[int, msgspec.Meta(ge=1, le=(1 << 63) - 1)] | None = None
    # the rows of the Trainer's banner read so far when the offset falls inside its block ("examples",
    # "epochs", "batch", "steps"; ``formats.read_trainer_banner_row``): the rest of the block follows (v8)
    banner_rows: dict[Annotated[str, msgspec.Meta(pattern=r"^(examples|epochs|batch|steps)$")],
                      Annotated[int, msgspec.Meta(ge=0, le=(1 << 63) - 1)]] | None = None


# the fields that hold names the log printed (a table's header, the evaluation values' names), each
# with the fields that go with it: a header the run's redactor would mask is left out whole
NAMED = {"fastai": (), "spacy": (), "yolo": ("yolo_flag",), "hf_table": ("hf_table_sep", "hf_table_loss"),
         "csv": ("csv_sep",), "chainer": (), "mixed_eval": (), "nerfstudio": ()}


def process_fits(who: str | None) -> bool:
    """A process label the context may hold: "rank N" or "pid N"."""
    return who is not None and re.match(PROCESS_RE, who) is not None


def label_fits(label: str | None) -> bool:
    """A bar's epoch label the context may hold: at most 20 digits."""
    return label is not None and re.match(LABEL_RE, label) is not None


def names_fit(names: list[str] | tuple[str, ...] | None) -> bool:
    """A header whose columns the context can hold (``MAX_COLUMNS`` names of ``MAX_NAME`` chars)."""
    return names is not None and len(names) <= MAX_COLUMNS and all(len(n) <= MAX_NAME for n in names)


def values_fit(values: dict | None) -> dict[str, float | str] | None:
    """Values the context can hold (``MAX_COLUMNS`` values under names of ``MAX_NAME``
    characters): finite numbers as floats, a number's text (``NUMBER_TEXT``, "nan" too) as it
    was read, so a restored value compares equal to the same one read again; None when they
    are not."""
    if values is None or len(values) > MAX_COLUMNS or not names_fit(list(values)):
        return None
    out: dict[str, float | str] = {}
    for k, v in values.items():
        if isinstance(v, str) and _NUMBER_TEXT_RE.match(v):
            out[k] = v
        elif is_finite_number(v):
            out[k] = float(v)
        else:
            return None
    return out


def digest(text: str) -> str:
    """What a context keeps of a line's shape: BLAKE2b (16 bytes, hex), never the text."""
    # BLAKE2 from its own module: `import hashlib` loads OpenSSL's libcrypto (about 4 MiB of the
    # console's RSS, issue 37), and every console process imports this module through state.json's
    # model while only a runner makes digests
    from _blake2 import blake2b
    return blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def prefix_digests(shape: str) -> list[str]:
    """The digests of a shape, of the shape up to its last value (``through_last_value``, since
    version 4) and of its prefixes that end a token (before a space, ``,``, ``;`` or ``|``), in
    that order: a line of the same epochs that shows fewer values or another note after them
    (``shape.same_epoch_lines``) is one of them (at most ``MAX_PREFIXES``)."""
    cuts = [m.end() for m in _TOKEN_END_RE.finditer(shape)]
    return ([digest(shape), digest(through_last_value(shape))] + [digest(shape[:i]) for i in reversed(cuts)])[:MAX_PREFIXES]


def same_epoch_shape(shape: str, saved: list[str]) -> bool:
    """A line shape whose epochs are the steps, as a shape a reader before read (``saved``:
    ``prefix_digests`` of it): that shape, a prefix of it that ends a token, a longer one, or one
    with the same values and more, and another note after them (``shape.same_epoch_lines``)."""
    if not saved:
        return False
    mine = prefix_digests(shape)
    return mine[0] in saved or saved[0] in mine or len(saved) > 1 and saved[1] in mine


def through_last_value(shape: str) -> str:
    """A line's shape up to its last value (every number is ``#`` in a shape; what follows the
    last names no value of its own)."""
    cut = shape.rfind("#")
    return shape if cut < 0 else shape[:cut + 1]
