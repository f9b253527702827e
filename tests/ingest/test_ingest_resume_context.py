"""A restarted reader reads the log as the first one did: the reading context saved with the
offset (``LiveReader.context``, state.json's ``log_context``, ``core.readctx``) and restored into
the new parser. Measured on the whole corpus by ``tests/ingest/resume_cuts.py`` (5 cuts per log:
a reader stopped there, a new one from the offset and context the first would save)."""
from __future__ import annotations

import json

import msgspec

from moeconsole.runner.ingest.live import LiveReader
from tests.ingest import resume_cuts

# What a saved context cannot give back, by design: DeepSpeed's ``see_memory_usage`` message
# (deepspeed/runtime/utils.py: logger.info(message) on the line before its numbers), which the
# record carries as ``mem_report``: free text of the log, never saved. A reader killed inside the
# numbers line reads it again without the message before it.
LEFT = {("deepspeed_zero3_memory_step", "extra.mem_report")}


def test_no_cut_of_the_corpus_loses_a_record_or_max_steps_and_only_the_text_left_out_is_missing():
    """Before: 385 of 2,395 cuts lost a record, an evaluation or a value (max_steps at 130: the
    Trainer's banner, a bar's total, Keras' epoch line). Now only DeepSpeed's memory message."""
    total, lost = resume_cuts.measure()
    assert total > 2000
    assert not [c for c in lost if any("max_steps" in m[2] for m in c.missing)]
    whole = {(c.log, name) for c in lost for m in c.missing for name in m[2]}
    unexplained = [c for c in lost if not any((c.log, n) in LEFT for m in c.missing for n in m[2])]
    assert not unexplained, [(c.log, c.at, c.missing[:2]) for c in unexplained]
    assert len(lost) <= 2, (len(lost), sorted(whole))


def _context_of(text: bytes):
    reader = LiveReader(diagnostics=lambda msg: None)
    reader.feed_batches(text, 0)
    return reader.context()


def test_the_context_holds_column_names_and_numbers_never_a_line_or_a_secret():
    """A table's header is names; its rows never reach state.json, nor the text of the epoch
    lines the shape learner knows again (a word in them may be a secret: only digests are kept),
    and a new reader still reads those lines on."""
    token = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ"
    table = (b"Training lm from random weights\n"
             b"epoch     train_loss  valid_loss  accuracy  time\n"
             b"0         3.886147    3.948560    0.430394  47:41\n")
    saved = json.dumps(msgspec.to_builtins(_context_of(table)))
    assert '"fastai": ["epoch", "train_loss", "valid_loss", "accuracy", "time"]' in saved
    assert "3.886147" not in saved and "random weights" not in saved
    lines = [f"epoch: {i}; run: {token}; loss: {1 / i:.4f}\n".encode() for i in range(1, 7)]
    ctx = _context_of(b"".join(lines[:3]))
    saved = json.dumps(msgspec.to_builtins(ctx))
    assert ctx.epoch_shape and token not in saved and "run" not in saved and "epoch:" not in saved
    reader = LiveReader(diagnostics=lambda msg: None)
    reader.restore_context(ctx)
    got = [rec["step"] for b in reader.feed_batches(b"".join(lines[3:]), 0) for rec in b.records]
    assert got == [4, 5, 6]


def test_a_header_too_long_to_save_is_left_out_and_the_context_stays_small():
    """Bounded: a header of more than MAX_COLUMNS names is not saved (its rows read as before a
    context: from its next header); the whole context of a long log stays a few hundred bytes."""
    from moeconsole.runner.core import readctx
    wide = "  ".join(["epoch", "train_loss"] + [f"metric_{i}" for i in range(readctx.MAX_COLUMNS)])
    ctx = _context_of(wide.encode() + b"\n")
    assert ctx.fastai is None
    big = b"".join(b"{'loss': %.3f, 'learning_rate': 1e-05, 'epoch': %.2f}\n" % (1 / i, i / 100) for i in range(1, 5000))
    assert len(msgspec.json.encode(_context_of(b"  Total optimization steps = 5,000\n" + big))) < 600


def test_a_state_without_a_context_or_with_a_newer_ones_reads_on_as_before():
    """state.json of an older runner (no ``log_context``) is read as before; a newer runner's
    context (another version, keys this one does not know) leaves state.json readable and is not
    restored: the new parser starts fresh, as before contexts."""
    from moeconsole.runner.core.readctx import ReadingContext
    from moeconsole.runner.core.state import StateFile
    from moeconsole.runner.supervisor.ingest_pipe import _context
    old = msgspec.json.decode(b'{"v": 1, "log_offset": 120}', type=StateFile)
    assert old.log_context is msgspec.UNSET
    newer = msgspec.json.decode(b'{"v": 1, "log_offset": 120, "log_context": {"v": 2, "last_step": 7, "cursor": 3}}',
                                type=StateFile)
    assert _context(msgspec.to_builtins(newer.log_context)) is None
    assert _context(None) is None
    assert _context({"v": 1, "last_step": 7, "run_total": 40}) == ReadingContext(last_step=7, run_total=40)


def test_a_newer_runners_context_of_other_bounds_leaves_state_json_readable():
    """A newer runner may save a context this one would refuse (another version, a column name
    longer than this one's MAX_NAME): state.json was decoded with the context strictly typed, so
    the whole file failed to read. Now the file reads and the context is not restored."""
    from moeconsole.runner.core.state import StateFile
    from moeconsole.runner.supervisor.ingest_pipe import _context
    saved = {"v": 2, "fastai": ["x" * 65]}
    state = msgspec.json.decode(json.dumps({"v": 1, "log_offset": 120, "log_context": saved}).encode(), type=StateFile)
    assert state.log_offset == 120
    assert _context(state.log_context) is None


def test_a_bar_label_too_long_to_save_is_left_out():
    """A bar's epoch label of more than 20 digits was saved (only ``isdigit`` checked): a context
    its own runner refuses. Now the label is left out and the rest of the context is kept."""
    from moeconsole.runner.core.readctx import ReadingContext
    ctx = _context_of(b"Epoch 123456789012345678901234:  50%|#####     | 5/10 [00:01<00:01, 5.00it/s, loss=1.2]\nx\n")
    assert ctx.bar_label is None and ctx.bar_total == 10
    assert msgspec.convert(msgspec.to_builtins(ctx), ReadingContext) == ctx
