"""Review R47 of log batch 47: the rules it added that lost or mislabelled records.

The two contexts below are the bytes state.json's ``log_context`` held after a runner of the code
before batch 47 (commit 9998712d) read the first lines of these logs (the reviewer's
ctx_save.py / ctx_save3.py, run on ``git archive 9998712d``)."""
from __future__ import annotations

import msgspec

from tests.ingest.test_ingest_batch46_shapes import _read_on
from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


def _read_on_saved(saved: bytes, rest: list[str]) -> tuple[list[dict], dict | None]:
    """The records a runner of this code gives for ``rest`` when started on a log whose
    state.json holds ``saved`` (read as the supervisor reads it, ``ingest_pipe._context``), and
    the context it saves after them."""
    from moeconsole.runner.ingest import LogParser
    from moeconsole.runner.ingest.history import read_events
    from moeconsole.runner.supervisor import ingest_pipe
    ctx = ingest_pipe._context(msgspec.json.decode(saved))
    assert ctx is not None     # a context of the runner before is read, not thrown away
    q = LogParser()
    q.restore_context(ctx)
    events = read_events(q, [b"".join(ln.encode() + b"\n" for ln in rest)], final=False)
    again = msgspec.json.decode(msgspec.json.encode(q.reading_context(at_end=True)))
    return [o for k, o in events if k == "record"], again


# --------------------------------------------------------------------------- D1: Megatron line wrapped after a whole loss

MEG = (" [2024-11-06 09:50:{s:02d}] iteration      {n}/   10000 | consumed samples:        51200 | elapsed time per"
       " iteration (ms): 1521.9 | throughput per GPU (TFLOP/s/GPU): 76.8 | learning rate: 1.000000E-04 | global batch"
       " size:   256 | lm loss: {loss} | loss scale: 1.0 | grad norm: 0.214 | number of skipped iterations:   0 |"
       " number of nan iterations:   0 |")


def _wrapped(width: int, *losses: tuple[int, str]) -> list[str]:
    rows: list[str] = []
    for i, (n, loss) in enumerate(losses):
        full = MEG.format(s=i, n=n, loss=loss)
        rows += [full[:width].rstrip(), full[width:]]
    return rows


def test_a_megatron_line_wrapped_right_after_its_whole_loss_keeps_the_loss_on_every_line():
    """Megatron's training_log prints its losses '{:.6E}': "lm loss: 1.927525E-01" at a row's
    end (a 248-column terminal, the paste trimmed the space before " |") is whole. Every line
    of such a paste lost its loss."""
    rows = _wrapped(248, (200, "1.927525E-01"), (300, "1.921382E-01"), (400, "1.830679E-01"))
    assert rows[0].endswith("lm loss: 1.927525E-01") and rows[1].startswith("| loss scale")
    recs, p = parse(*rows)
    assert steps(recs) == [(200, 0.1927525), (300, 0.1921382), (400, 0.1830679)]
    assert recs[0]["lr"] == 1e-04


def test_a_megatron_loss_cut_inside_its_printed_form_still_gives_no_value():
    """The other way: a row that ends inside the value ("1.927525E-0", "1.9275", "1.") is a cut
    value, never read as the number it starts."""
    for width in (247 - 2, 247 - 6, 247 - 11):
        rows = _wrapped(width, (200, "1.927525E-01"), (300, "1.921382E-01"))
        recs, p = parse(*rows)
        mine = [(r["step"], r["loss"]) for r in recs if r["step"] in (200, 300)]
        assert mine == [(200, None), (300, None)], (width, rows[0][-16:])


# --------------------------------------------------------------------------- D2: slime step dict that never closes

def test_a_slime_step_dict_the_paste_elides_is_read_as_before():
    """slime's "step N: {'train/loss': ..., ..." with the dict's rest elided (no closing brace):
    the wait for the rest gave it up as not understood; it is the line's step and values."""
    recs, p = parse("step 3: {'train/loss': 0.25, 'train/grad_norm': 1.2, ...",
                    "[FSDP] Saved checkpoint to .../checkpoints/iter_0000004",
                    "step 4: {'train/loss': 0.24, 'train/grad_norm': 1.1, ...",
                    "[FSDP] Saved checkpoint to .../checkpoints/iter_0000005")
    assert steps(recs) == [(3, 0.25), (4, 0.24)]
    assert recs[0]["grad_norm"] == 1.2


def test_a_slime_step_dict_cut_at_the_end_of_the_input_or_before_another_line_is_read():
    recs, p = parse("step 0: {'train/loss': 0.5, 'train/grad_norm': 1.0, 'train/lr-pg_0': 1e-06}",
                    "step 1: {'train/loss': 0.4, 'train/grad_norm': 0.9,")
    assert steps(recs) == [(0, 0.5), (1, 0.4)]
    recs, p = parse("(MegatronTrainRayActor pid=7) [2026-01-05 12:20:29] model.py:918 - step 3: {'train/loss': 0.25,"
                    " 'train/pg_loss': 0.2, 'train/grad_norm': 1.2,",
                    "(MegatronTrainRayActor pid=7) [2026-01-05 12:20:30] train_metric_utils.py:44 - perf 3:"
                    " {'perf/train_time': 10.0}")
    assert steps(recs) == [(3, 0.25)]
    # a crash after the cut dict: the dict's step, then the step after the traceback, in order
    recs, p = parse("step 1: {'train/loss': 0.4,",
                    "Traceback (most recent call last):",
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
                    "step 2: {'train/loss': 0.3, 'train/grad_norm': 1.0, 'train/lr-pg_0': 1e-06}")
    assert steps(recs) == [(1, 0.4), (2, 0.3)]


def test_a_slime_step_dict_wrapped_and_closed_is_still_one_record():
    """The wait kept: a dict whose rest comes on the next rows is read whole, once."""
    recs, p = parse("step 0: {'train/loss': -2.1e-07,", "         'train/grad_norm': 14.5,",
                    "         'train/lr-pg_0': 1e-06}", "step 1: {'train/loss': 3.0e-07}")
    assert steps(recs) == [(0, -2.1e-07), (1, 3.0e-07)] and recs[0]["src"] == "slime"


# --------------------------------------------------------------------------- D3: a context saved before shapes were masked

EPOCH_LINE = "Epoch {e} x: torch.Size([16, 3, 224, 224]) batch {b}/50 loss {loss:.5f}"
EPOCH_LINES = [EPOCH_LINE.format(e=e, b=b, loss=1.0 / (e * 100 + b)) for e in range(1, 4) for b in range(10, 51, 10)]
OLD_EPOCH_CTX = (b'{"last_step":80,"records":8,"shapes":[["4592be1b7448fefc7361d4e3c1360ed1",50,30,2.0,30,null]],'
                 b'"text_rec":[80,0.00435]}')


def test_a_runner_restarted_across_the_upgrade_keeps_the_epoch_offset_of_a_line_with_a_shape():
    """The old runner saved the epoch counter of "Epoch e x: torch.Size([...]) batch b/50" under
    the digest of its shape with the dimensions as numbers; masked, the shape's digest changed,
    the offset was lost and the rest read 40, 50, ..., 100 (duplicates dropped, then 90 and 100
    for 140 and 150)."""
    recs, again = _read_on_saved(OLD_EPOCH_CTX, EPOCH_LINES[8:])
    assert [r["step"] for r in recs] == [90, 100, 110, 120, 130, 140, 150]
    # read on again by a runner of this code: the same steps (its own digest saved)
    assert [r["step"] for r in _read_on(EPOCH_LINES[:8], EPOCH_LINES[8:])] == [90, 100, 110, 120, 130, 140, 150]


def test_the_old_digest_is_no_key_of_a_line_of_another_shape():
    """The other way: a line whose shape's dimensions differ is another counter (the old digest
    is taken only for the line it was made from)."""
    other = [ln.replace("torch.Size([16, 3, 224, 224])", "torch.Size([16, 3])") for ln in EPOCH_LINES[8:]]
    recs, _ = _read_on_saved(OLD_EPOCH_CTX, other)
    assert [r["step"] for r in recs][:3] == [40, 50, 60]


# --------------------------------------------------------------------------- D4: slime's numbering across the upgrade

def _slime(n: int) -> str:
    return (f"(MegatronTrainRayActor pid=7) [2026-01-05 12:20:29] actor.py:718 - step {n}: {{'train/loss': {0.5 - n / 100},"
            f" 'train/pg_loss': 0.1, 'train/grad_norm': 1.0, 'train/lr-pg_0': 1e-06}}")


OLD_SLIME_CTX = b'{"last_step":6,"records":6,"ds_off":true}'   # after "step 0" .. "step 5", numbered 1 .. 6


def test_a_slime_run_read_before_the_upgrade_keeps_its_numbering_after_it():
    """The old runner numbered slime FSDP's dicts 1, 2, ... (printed id + 1) and saved step 6
    after "step 5"; read by the printed id, "step 6" was a duplicate of it (update 6 dropped) and
    every update after it one step back."""
    recs, again = _read_on_saved(OLD_SLIME_CTX, [_slime(n) for n in range(6, 9)])
    assert steps(recs) == [(7, 0.44), (8, 0.43), (9, 0.42)]
    assert again is not None and again["slime_shift"] == 1
    # a second restart keeps it (the context says so now)
    recs, _ = _read_on_saved(msgspec.json.encode(again), [_slime(n) for n in range(9, 11)])
    assert steps(recs) == [(10, 0.41000000000000003), (11, 0.4)]


def test_a_slime_run_read_by_this_runner_reads_on_by_the_printed_id():
    recs = _read_on([_slime(n) for n in range(6)], [_slime(n) for n in range(6, 9)])
    assert steps(recs) == [(6, 0.44), (7, 0.43), (8, 0.42)]
    # a context of the same version that read no slime line yet: the id is the step
    recs, again = _read_on_saved(b'{"last_step":5,"records":6}', [_slime(n) for n in range(6, 8)])
    assert [r["step"] for r in recs] == [6, 7] and again is not None and again["slime_shift"] == 0


# --------------------------------------------------------------------------- D5: TensorFlow's shapes with unknown dimensions

def test_tensorflow_shapes_with_unknown_dimensions_are_no_step():
    """tensor_shape.py TensorShape.__repr__: TF2 f"TensorShape({list(dims)})" (None for an
    unknown dimension, Keras' batch), v1 f"TensorShape({self.dims})" of Dimension reprs."""
    recs, p = parse("(WorkerDict pid=4) logits shape: TensorShape([None, 1024])",
                    "(WorkerDict pid=4) labels shape: TensorShape([Dimension(16), Dimension(None), Dimension(512)])")
    assert recs == []
    for shp in ("TensorShape([None, 224])", "TensorShape([Dimension(16), Dimension(None), Dimension(224)])"):
        recs, p = parse(f"Epoch 1 batch 10 x: {shp} loss 0.5", f"Epoch 1 batch 20 x: {shp} loss 0.4")
        assert steps(recs) == [(10, 0.5), (20, 0.4)]
        assert recs[0]["extra"] == {} and recs[1]["extra"] == {}, shp   # no "None": 224.0
