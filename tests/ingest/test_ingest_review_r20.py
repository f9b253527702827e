"""Review R20 of batch 40's parser rules: each defect it found, checked on what a user gets (records,
evaluations, --explain's shape key, the console's rank column); the slow reading by the work counted,
never timed."""
from __future__ import annotations

import re

import pytest

from moeconsole.runner.ingest import formats
from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps
from tests.test_patterns_never_hang import _Counting


def _vocab(n: int) -> str:
    return "Vocab: {" + ", ".join(f"'tok{i}': {i}" for i in range(n)) + "}"


def _grad_norms(n: int) -> str:
    return "step: 5, loss: 2.31, grad_norms: {" + ", ".join(
        f"'model.layers.{i}.self_attn.q_proj.weight': 0.01" for i in range(n)) + "}"


def _pairs(n: int) -> str:
    return "step: 5, loss: 2.31, " + ", ".join(f"valid m{i}: 0.5" for i in range(n))


def _colon_names(n: int) -> str:
    return "step: 5, loss: 2.31 " + " ".join(f"max_size:time {i}" for i in range(n))


def _work(monkeypatch, line: str) -> int:
    """The characters formats' patterns are given to scan while read_kv reads the line."""
    seen: list[int] = []
    with monkeypatch.context() as mp:
        for name, value in list(vars(formats).items()):
            if isinstance(value, re.Pattern):
                mp.setattr(formats, name, _Counting(value, seen))
        formats.read_kv(line)
    return sum(seen)


@pytest.mark.parametrize("line", [_vocab, _grad_norms, _pairs, _colon_names])
def test_1_a_line_of_many_pairs_costs_its_length_not_its_square(monkeypatch, line):
    """A printed vocab or a grad norm per parameter on one line (each pair looked back over the whole
    line before it: 10,000 items took 28 s): the work read_kv's patterns are given grows with the
    line, a line of 4N items costing about 4 times one of N, not 16."""
    small, big = line(500), line(2000)
    w_small, w_big = _work(monkeypatch, small), _work(monkeypatch, big)
    assert w_big <= 64 * len(big), (w_big, len(big))
    assert w_big <= 6 * w_small, (w_small, w_big)


def test_1_a_table_printed_among_a_steps_pairs_reads_the_step_as_before():
    """A grad norm per parameter beside the step's loss: the step and its loss, the table's items
    not made hundreds of extras of the record."""
    recs, p = parse(_grad_norms(600))
    assert steps(recs) == [(5, 2.31)]
    assert not any(k.startswith("model.layers.") for k in recs[0]["extra"])
    recs, p = parse(_vocab(3000))
    assert recs == []


@pytest.mark.parametrize("line, want", [
    ("step: 100, metrics: {'lr': 0.0001, 'loss': 2.3}", (100, 2.3, 0.0001)),
    ("step: 100, metrics: {'loss': 2.3, 'lr': 0.0001}", (100, 2.3, 0.0001)),
    ("step: 10, train: {'grad_norm': 0.9, 'loss': 0.5}", (10, 0.5, None)),
    ("iter: 10, stats: {'lr': 0.001, 'loss': 0.5}", (10, 0.5, 0.001)),
    ("global_step: 10, train_metrics: {'loss': 2.3, 'lr': 0.1}", (10, 2.3, 0.1)),
])
def test_2_a_dicts_last_item_before_its_brace_is_read(line, want):
    """Python's dict repr closes its last item with "}" (dict_repr): that item is read as the others."""
    (r,), p = parse(line)
    assert (r["step"], r["loss"], r["lr"]) == want


TEST_TUBE_HEAD = ("train/loss_simple_step,train/loss_vlb_step,train/loss_step,global_step,epoch,created_at,"
                  "train/loss_simple_epoch,train/loss_vlb_epoch,train/loss_epoch,val/loss_simple,val/loss_vlb,val/loss")


def test_3_test_tube_rows_with_an_empty_step_do_not_end_the_table():
    """test-tube's metrics.csv is the union of every dict logged (Experiment.save: pd.DataFrame(
    self.metrics).to_csv); latent-diffusion logs global_step on_step only, so its epoch-end and val
    rows leave it empty. The rows after them are read; the val row is the evaluation at the last
    step (its keys the evaluation's split names); the epoch means stand at no step."""
    recs, p = parse(TEST_TUBE_HEAD,
                    "0.2514,0.0017,0.2514,49.0,0,2025-11-07 06:02:10.484610,,,,,,",
                    "0.0960,0.0004,0.0960,99.0,0,2025-11-07 06:09:01.771131,,,,,,",
                    ",,,,0,2025-11-07 06:10:00.000001,0.1500,0.0010,0.1500,,,",
                    ",,,,0,2025-11-07 06:11:00.000001,,,,0.1400,0.0009,0.1400",
                    "0.0900,0.0004,0.0900,149.0,1,2025-11-07 06:12:00.000001,,,,,,",
                    "0.0800,0.0003,0.0800,199.0,1,2025-11-07 06:13:00.000001,,,,,,")
    assert steps(recs) == [(49, 0.2514), (99, 0.096), (149, 0.09), (199, 0.08)]
    assert eval_losses(p) == [(99, 0.14)]
    assert p.stats.unparsed_lines == 0


def test_3_a_line_that_is_no_row_still_ends_the_table():
    """The guard beside the mend (passes before it too): a row of another count of cells, or a
    cell that is no number, ends the table as before."""
    recs, p = parse("loss,global_step", "0.5,10", "step 20 loss 0.4")
    assert steps(recs) == [(10, 0.5), (20, 0.4)]


def test_4_explain_gives_a_darknet_line_one_shape_whatever_its_count():
    """--explain's shape key: darknet's "N:" is its batch count, whatever its digits (it was taken
    for srun's label below 5 digits and kept above)."""
    from moeconsole.runner.ingest.explain import shape_of
    small = shape_of(b"7: 812.335999, 905.112000 avg, 0.000100 rate, 3.417520 seconds, 448 images")[0]
    big = shape_of(b"145404: 4.543089, 7.319715 avg, 0.001000 rate, 0.027213 seconds, 768 images")[0]
    assert small == big == "#: #, # avg, # rate, # seconds, # images"


def test_4_the_consoles_rank_column_leaves_a_programs_own_count(tmp_path):
    """The console's rank view of train.log: darknet's and CatBoost's leading count is no rank label
    (no "r7"; the line keeps its count); srun's label before another line still is one."""
    from moeconsole.console.logfile import LogFile
    from moeconsole.console.ranklog import PrefixedLog
    dark = "7: 812.335999, 905.112000 avg, 0.000100 rate, 3.417520 seconds, 448 images"
    cat = "100:\tlearn: 0.1706\ttest: 0.1812\tbest: 0.1812 (100)\ttotal: 1.2s\tremaining: 10s"
    path = tmp_path / "train.log"
    path.write_text("\n".join([dark, cat, "3: step 9 loss 1.0"]) + "\n")
    log = PrefixedLog(LogFile(path))
    log.refresh()
    assert log.labels(0, 3) == ["", "", "r3"]
    # the view lays tabs out as columns of its own: the words compared
    assert [ln.split() for ln in log.lines(0, 3)] == [t.split() for t in (dark, cat, "step 9 loss 1.0")]


def test_5_a_context_saved_by_the_runner_before_batch_40_is_restored():
    """Version 2's fields all mean what they mean now: an upgrade keeps an in-flight run's context."""
    from moeconsole.runner.core.readctx import ReadingContext
    from moeconsole.runner.supervisor.ingest_pipe import _context
    got = _context({"v": 2, "last_step": 7, "run_total": 40, "csv": ["step", "loss"], "csv_sep": ","})
    assert got is not None and (got.last_step, got.run_total, list(got.csv or ())) == (7, 40, ["step", "loss"])
    assert _context({"v": 1, "last_step": 7}) is None
    assert isinstance(got, ReadingContext)
