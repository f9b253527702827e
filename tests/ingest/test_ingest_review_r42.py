"""Review R42 of log batch 46: the rules it added that read other programs' lines wrong.

The tqdm logs in ``tqdm_r42/`` are real tqdm 4.70.1 output on a fake clock (the reviewer's
generator, kept here so they can be made again)::

    import io, random, tqdm.std as S
    from tqdm import tqdm
    random.seed(1); clock = [1000.0]; S.time = lambda: clock[0]
    def tick(d): clock[0] += d
    # refresh_false.log: one bar, update() then set_postfix(..., refresh=False), then close()
    p = tqdm(total=8, file=f, ncols=100)
    for i in range(8):
        tick(0.5 + random.random() * 0.3); p.update(1); p.set_postfix(loss=round(1.0 / (i + 1), 4), refresh=False)
    tick(0.05); p.close()
    # multi_smooth0.log: three bars of 5 with smoothing=0, update() then set_postfix(), a line between
    for ep in range(3):
        p = tqdm(total=5, file=f, ncols=100, smoothing=0)
        for i in range(5):
            tick(0.5); p.update(1); tick(0.004); p.set_postfix(loss=round(1.0 / (5 * ep + i + 1), 4))
        p.close(); print(f"epoch {ep} done", file=f)
"""
from __future__ import annotations

from pathlib import Path

import msgspec

from tests.ingest.test_ingest_batch46_shapes import _gs_attempt, _read_on
from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps

TQDM = Path(__file__).with_name("tqdm_r42")


# --------------------------------------------------------------------------- finished bars (1)

RANK_BAR = "100%|##########| 500/500 [02:{s}<00:00,  {r}it/s, loss={l}]"


def test_ranks_finished_bars_one_under_another_are_one_epoch_not_one_each():
    """A DDP loop without a rank guard: every rank draws its own tqdm(loader) with its own loss
    and rate, the finished bars close one under another. Each epoch is counted once."""
    recs, p = parse("Epoch 1/2", RANK_BAR.format(s=10, r="3.83", l="0.231"), RANK_BAR.format(s=11, r="3.81", l="0.245"),
                    "Epoch 2/2", RANK_BAR.format(s=9, r="3.85", l="0.198"), RANK_BAR.format(s=10, r="3.84", l="0.203"))
    assert [r["step"] for r in recs] == [500, 1000]
    assert max(r["step"] for r in recs) == 1000
    # four ranks: still 500 steps an epoch
    recs, p = parse("Epoch 1/1", *(RANK_BAR.format(s=10 + k, r=f"3.8{k}", l=f"0.2{k}1") for k in range(4)))
    assert [r["step"] for r in recs] == [500]


def test_one_bar_closed_after_set_postfix_without_refresh_stays_one_bar():
    """close() redraws with the overall rate (tqdm std.py:1307-1308 ``self._ema_dt = lambda:
    None``) and the postfix set_postfix(refresh=False) left undrawn: a new rate and a new postfix
    on the next line, the same bar."""
    recs, p = parse((TQDM / "refresh_false.log").read_bytes())
    assert max(r["step"] for r in recs) == 8
    assert steps(recs)[-1] == (8, 0.125)


def test_bars_with_smoothing_off_count_each_epoch_once():
    """smoothing=0: the rate is n/elapsed on every draw, so update()'s and set_postfix()'s draws at
    the total differ in both; three epochs of 5 are steps 1..15, each with its own loss."""
    recs, p = parse((TQDM / "multi_smooth0.log").read_bytes())
    assert steps(recs) == [(n, float(f"{round(1.0 / n, 4):.3g}")) for n in range(1, 16)]   # tqdm prints .3g


def test_finished_bars_with_lines_between_them_are_still_the_epochs():
    """The rule that stays: a finished bar, other lines, then one of the same length."""
    bar = "100%|##########| 39/39 [01:{s}<00:00,  2.27s/it, loss={l}]"
    recs, p = parse(bar.format(s=28, l="0.5"), "saving checkpoint", bar.format(s=30, l="0.4"))
    assert steps(recs) == [(39, 0.5), (78, 0.4)]


# --------------------------------------------------------------------------- --start_checkpoint (2)

GS_BAR = "Training progress:  {pct}%|#         | {n}/{total} [00:{s:02d}<10:00, 40.00it/s, Loss=0.0{loss}]"


def test_langsplat_started_from_a_3dgs_checkpoint_counts_its_bar_from_zero():
    """LangSplat's train.py: (model_params, first_iter) = torch.load(checkpoint), then first_iter = 0
    for a 3DGS checkpoint, tqdm(range(first_iter, opt.iterations)); its README's step 3 passes
    --start_checkpoint .../chkpnt30000.pth. Its bar's counts are its iterations."""
    marker = _gs_attempt(["python", "train.py", "-s", "data/sofa", "-m", "output/sofa", "--start_checkpoint",
                          "data/sofa/output/sofa/chkpnt30000.pth", "--feature_level", "3"])
    recs, p = parse(marker, "Optimizing output/sofa", GS_BAR.format(pct=0, n=10, total=30000, s=1, loss=9),
                    GS_BAR.format(pct=23, n=7000, total=30000, s=2, loss=8), "",
                    "[ITER 7000] Evaluating train: L1 0.0297 PSNR 27.43 [01/12 08:10:00]",
                    GS_BAR.format(pct=100, n=30000, total=30000, s=59, loss=5))
    assert steps(recs) == [(10, 0.09), (7000, 0.08), (30000, 0.05)]
    assert {r["max_steps"] for r in recs} == {30000}
    assert [m["step"] for m in p.marks if m["kind"] == "eval"] == [7000]
    # with = and without a directory: the same
    marker = _gs_attempt(["python", "train.py", "--start_checkpoint=chkpnt7000.pth"])
    recs, p = parse(marker, GS_BAR.format(pct=0, n=10, total=30000, s=1, loss=9))
    assert steps(recs) == [(10, 0.09)]


def test_a_run_a_v4_runner_began_counting_on_from_its_checkpoint_reads_on_the_same_way():
    """A v4 context saved with ``bar_start`` (the rule this review took out) is still restored:
    the run it began keeps one count, no step going back at the upgrade."""
    from moeconsole.runner.core.readctx import ReadingContext
    from moeconsole.runner.ingest import LogParser
    from moeconsole.runner.ingest.history import read_events
    saved = msgspec.convert({"last_step": 7010, "records": 1, "bar_start": 7000, "bar_offset": 7000, "bar_step": 7010,
                             "bar_total": 23000, "bar_top": 10}, ReadingContext)
    q = LogParser()
    q.restore_context(saved)
    events = read_events(q, [(GS_BAR.format(pct=0, n=20, total=23000, s=2, loss=8) + "\n").encode()])
    recs = [o for k, o in events if k == "record"]
    assert [(r["step"], r["max_steps"]) for r in recs] == [(7020, 30000)]


# --------------------------------------------------------------------------- the context's version (3)

def test_the_saved_context_names_its_version_so_an_older_runner_tells_it_apart():
    """state.json's log_context holds ``v``: a v3 runner (its ReadingContext's v defaults to 3)
    reads this runner's context as version 4 and refuses it, not as its own."""
    from moeconsole.runner.core import readctx
    from moeconsole.runner.ingest import LogParser
    from moeconsole.runner.ingest.history import read_events
    from moeconsole.runner.rundir.secrets import Redactor
    from moeconsole.runner.supervisor import ingest_pipe

    p = LogParser()
    read_events(p, [b"{'loss': 0.5, 'global_step/max_steps': '5/100'}\n"])
    saved = ingest_pipe._saved(p.reading_context(at_end=True), Redactor())
    assert saved is not None and saved["v"] == readctx.CONTEXT_VERSION
    on_disk = msgspec.json.decode(msgspec.json.encode({"log_context": saved}))["log_context"]

    class V3(msgspec.Struct):
        v: int = 3
    assert msgspec.convert(on_disk, V3).v == readctx.CONTEXT_VERSION   # not 3: refused by a v3 runner
    # this runner reads its own back, and a context saved before versions were written (no v)
    assert ingest_pipe._context(on_disk) is not None
    assert ingest_pipe._context({k: v for k, v in on_disk.items() if k != "v"}) is not None
    # a newer runner's context is not read as this one's
    assert ingest_pipe._context({**on_disk, "v": readctx.CONTEXT_VERSION + 1}) is None


# --------------------------------------------------------------------------- epoch line with a note (4)

EPOCHS = ["Epoch: 001, Loss: 1.8883, Test MAE: 1.0745", "Epoch: 002, Loss: 1.5000, Test MAE: 1.0000",
          "Epoch: 003, Loss: 1.2000, Test MAE: 0.9000"]


def test_a_summary_with_fewer_values_and_a_note_after_epoch_lines_stays_a_summary():
    recs, p = parse(*EPOCHS, "Epoch: 003, Loss: 1.2000 - saving model", "Epoch: 004, Loss: 1.1000, Test MAE: 0.8500")
    assert steps(recs) == [(1, 1.8883), (2, 1.5), (3, 1.2), (4, 1.1)]
    assert [m["step"] for m in p.marks if m["kind"] == "train_summary"] == [3]


def test_an_epoch_line_with_the_same_values_and_another_note_is_still_a_record():
    """The early-stopping notes batch 46 read stay read: more values or the same, a note after."""
    recs, p = parse(*[e + " [New Best Model Saved]" for e in EPOCHS],
                    "Epoch: 004, Loss: 1.1000, Test MAE: 0.9100 (Patience: 1/10)")
    assert steps(recs) == [(1, 1.8883), (2, 1.5), (3, 1.2), (4, 1.1)]
    assert steps(_read_on(EPOCHS[:2], ["Epoch: 003, Loss: 1.2000, Test MAE: 0.9000 (Patience: 1/10)"])) == [(3, 1.2)]
