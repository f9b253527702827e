"""The bulk fast path gives exactly what the line-by-line parser gives: records, marks,
statistics, summary and alerts, on a file that mixes everything, in one process or two."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.history import read_events
import os

from moeconsole.runner.ingest.bulk import concat_batches, fold_file, scan_file
from moeconsole.runner.ingest.summary import Summary, feed_batch
from moeconsole.runner.rundir.jsonio import dumps
from moeconsole.runner.core.monitors import Monitors, Thresholds
from tests.ingest import ingest_samples as S


def write_mixed(path, n: int = 3000, seed: int = 5) -> None:
    """Mostly ms-swift 4.x dict lines behind tqdm bars, with everything else mixed in:
    saves, eval dicts, a restart, NaN, a spike during a save, Megatron lines and memory
    reports, dicts without \\r, glued bars, junk, a shape change, a giant line, and a partial
    last line."""
    rnd = random.Random(seed)
    out: list[str | bytes] = ["[INFO:swift] model_kwargs: {'device_map': 'cpu'}",
                              "[INFO:swift] Start time of running main: 2026-01-02"]
    step = 0
    for i in range(n):
        step += 1
        if i == 1500:                     # a restart from an older checkpoint
            out.append("=== moeconsole: attempt 2 start")
            step = 1200
        loss = 2.0 - step / 5000 + rnd.random() * 0.05
        grad = 0.8 + rnd.random() * 0.1
        if step in (700, 701):
            grad *= 300                   # a spike, with a save inside it
        if step == 900:
            loss = math.nan
        if 2000 <= i < 2040:
            loss *= 3                     # a loss excursion
        msg = S.swift_hf_dict(step, 4000, loss, grad, mem=35.0 + (2.0 if i > 2500 else 0.0), speed=0.2)
        if i % 97 == 5:
            out.append(msg)               # printed without a bar (no \r before it)
        elif i % 211 == 7:
            out.append(S.bar(step, 4000) + msg)   # glued to the bar: not a template line
        else:
            out.append(S.tqdm_write(msg, step, 4000))
        if step % 50 == 0 or step == 700:
            out.append(f"[INFO:swift] Saving model checkpoint to /o/v0/checkpoint-{step}")
        if i % 400 == 3:
            out.append(S.tqdm_write("{'eval_loss': '1.1', 'eval_runtime': '2.0', 'epoch': '0.5', "
                                    f"'global_step/max_steps': '{step}/4000'}}", step, 4000))
        if i % 500 == 11:
            out.append(S.megatron_line(step, 4000, loss, grad))
            out.append(S.memory_report(0, step, 4096.0))
            out.append(S.memory_report(1, step, 5120.0))
        if i % 333 == 0:
            out.append(b"\xff\xfe junk \x00")
        if i % 600 == 17:                 # srun --label, a dict cut by a newline, other formats
            out.append("[gpu-a:7]: " + S.megatron_line(step, 4000, loss, grad))
            out.append("7: " + S.memory_report(7, step, 6144.0))
            out.append("{'loss': 0.5, 'grad_norm': 0.25, 'learning_rate': 1e-05,")
            out.append("'epoch': 0.5}")
            out.append(f"Epoch 0:  12%|#    | 18/156 [00:05<00:40,  3.40it/s, v_num=0, loss=1.75, global_step={step}.0]")
            out.append(f"11/23 10:05:42 - mmengine - INFO - Iter(train) [{step}/4000]  lr: 2.0000e-04  "
                       "time: 0.4567  memory: 10762  loss: 2.75  grad_norm: 3.06")
        if i == 1000:
            out.append("{'loss': '1.0', 'grad_norm': 'n/a', 'learning_rate': '2e-05', 'token_acc': '0.7', "
                       "'epoch': '0.5', 'global_step/max_steps': '1001/4000', 'elapsed_time': '1m', "
                       "'remaining_time': '1m', 'memory(GiB)': '35', 'train_speed(s/it)': '0.2'}")
        if i == 2200:
            out.append(b"x" * 300_000)    # a long line without carriage returns
    for j in range(200):                  # the format changes: ms-swift Megatron dicts
        out.append(S.tqdm_write(S.swift_megatron_dict(4001 + j, 5000, 1.0, 0.5), j, 200))
    out.append(S.swift_hf_dict(9999, 10000, 0.5, 0.5))   # partial last line (no newline)
    data = b"\n".join(x if isinstance(x, bytes) else x.encode() for x in out)
    path.write_bytes(data)


def general(path) -> tuple[list[dict], list[dict], object]:
    p = LogParser()
    data = path.read_bytes()
    events = read_events(p, [data[i:i + (1 << 16)] for i in range(0, len(data), 1 << 16)])
    recs = [o for k, o in events if k == "record"]
    marks = [o for k, o in events if k == "mark"]
    return recs, marks, (p.stats, events)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    path = tmp_path_factory.mktemp("bulk") / "train.log"
    write_mixed(path)
    return path


def fold_batches(path, workers: int, want_records: bool = True):
    batches, stats = fold_file(str(path), list, list.append, want_records=want_records, workers=workers,
                               split_min_bytes=0, chunk=48 << 10)
    return concat_batches(batches), stats


@pytest.mark.parametrize("workers", [1, 2])
def test_fast_path_records_marks_and_stats_equal_the_parser(mixed, workers):
    recs, marks, (stats, _) = general(mixed)
    batch, fast_stats = fold_batches(mixed, workers)
    assert fast_stats.processes == workers      # the two-process path really ran
    assert len(batch.records) == len(recs) > 3000
    assert all(S.same_record(a, b) for a, b in zip(recs, batch.records))
    assert [m for _, m in batch.marks] == marks
    assert [i for i, _ in batch.marks] == [m["records_before"] for m in marks]
    assert fast_stats == stats
    assert np.array_equal(batch.steps, [r["step"] for r in recs])
    for f in ("loss", "grad_norm", "mem_gib", "step_time_s", "tokens_per_s"):
        want = np.array([np.nan if r[f] is None else r[f] for r in recs], dtype=float)
        assert np.array_equal(batch.present[f], [r[f] is not None for r in recs])
        assert np.array_equal(np.where(batch.present[f], batch.values[f], 0.0),
                              np.where(np.isnan(want) & ~batch.present[f], 0.0, np.nan_to_num(want, nan=np.nan)),
                              equal_nan=True)


def test_fast_path_really_takes_the_fast_route(mixed):
    from moeconsole.runner.ingest.bulk import read_range
    from moeconsole.runner.ingest.pipe import LinePipe

    pipe = LinePipe(LogParser())
    for _ in read_range(str(mixed), 0, None, pipe, final=True, chunk=48 << 10):
        pass
    assert pipe.fast_lines > 0.8 * (pipe.fast_lines + pipe.slow_lines)


def general_summary(path) -> tuple[dict, list[dict]]:
    """The reference: records and marks one by one through Monitors.observe/on_checkpoint."""
    _, _, (stats, events) = general(path)
    mon, summary = Monitors(Thresholds()), Summary()
    alerts = []
    for kind, obj in events:
        if kind == "record":
            summary.add_records([obj])
            alerts += mon.observe(obj)
        else:
            summary.add_mark(obj)
            if obj["kind"] == "checkpoint_saved":
                alerts += mon.on_checkpoint(obj.get("step"), obj.get("path"))
            elif obj["kind"] == "attempt_marker":
                mon.reset()
    for a in alerts:
        summary.add_alert(a)
    return summary.to_dict(), alerts


@pytest.mark.parametrize("workers", [1, 2])
def test_fast_summary_and_alerts_equal_the_reference(mixed, workers):
    want, want_alerts = general_summary(mixed)
    (summary, _), stats = fold_file(
        str(mixed), lambda: (Summary(), Monitors(Thresholds())),
        lambda st, batch: feed_batch(st[0], st[1], batch), workers=workers, split_min_bytes=0, chunk=48 << 10)
    assert stats.processes == workers
    assert summary.to_dict() == want
    assert dumps(summary.alerts) == dumps(want_alerts[:len(summary.alerts)])   # NaN-safe compare
    rules = {a["rule"] for a in want_alerts}
    # the file was built to fire these; the comparison above is about all of them
    assert {"grad_norm_spike", "non_finite", "checkpoint_in_excursion", "loss_spike"} <= rules


def test_small_and_empty_files(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert [len(b) for b, _ in scan_file(str(empty))] == []
    one = tmp_path / "one.log"
    one.write_text(S.swift_hf_dict(1, 2, 1.0, 0.5))
    (batch, stats), = list(scan_file(str(one), want_records=True))
    assert batch.records[0]["step"] == 1 and stats.lines == 1


def test_no_fork_from_a_threaded_process_and_no_child_left(mixed):
    import threading

    import psutil

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert fold_batches(mixed, 2, want_records=False)[1].processes == 1
    finally:
        stop.set()
        t.join()
    assert fold_batches(mixed, 2, want_records=False)[1].processes == 2
    assert psutil.Process().children() == []


def test_a_failing_child_is_replaced_by_this_process(mixed):
    """The child dies half way: the parent folds the first part itself, same result."""
    import psutil

    parent = os.getpid()
    want, _ = fold_batches(mixed, 1)

    def step(state: list, batch) -> None:
        if os.getpid() != parent and len(state) > 3:
            raise MemoryError("simulated")
        state.append(batch)

    batches, stats = fold_file(str(mixed), list, step, want_records=True, workers=2, split_min_bytes=0,
                               chunk=48 << 10)
    got = concat_batches(batches)
    assert stats.processes == 1
    assert len(got.records) == len(want.records) and all(S.same_record(a, b) for a, b in zip(got.records, want.records))
    assert psutil.Process().children() == []


def test_an_error_in_this_process_ends_the_child(mixed):
    import psutil

    def step(state: list, batch) -> None:
        raise KeyError("consumer bug")

    with pytest.raises(KeyError):
        fold_file(str(mixed), list, step, workers=2, split_min_bytes=0, chunk=48 << 10)
    assert psutil.Process().children() == []
