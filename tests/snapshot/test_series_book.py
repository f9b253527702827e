"""The bounded chart series and series.json: a run of any length opens from a small file plus the
records after it, and shows exactly what a full read of metrics.jsonl would show."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from moeconsole.runner.rundir import jsonio, rundir, seriesfile
from moeconsole.runner.core.series import Series
from moeconsole.runner.rundir.snapshot import RunWatcher

REPO = Path(__file__).resolve().parents[2]


def _write_metrics(run: rundir.RunDir, steps: range, attempt: int = 1, nan_at: int | None = None) -> None:
    with open(run.metrics, "a") as f:
        for s in steps:
            loss = "nan" if s == nan_at else 3.0 - s / 1e5
            f.write(json.dumps({"v": 1, "t": 1.0, "attempt": attempt, "step": s, "loss": loss,
                                "grad_norm": 1.0 + (s % 7), "mem_gib": 10.0, "step_time_s": 0.5}) + "\n")


def _run(tmp_path: Path) -> rundir.RunDir:
    run = rundir.create(tmp_path / "runs", "book")
    run.write_state({"status": "running", "name": "book", "attempt": 1, "step": 0})
    return run


def test_a_million_points_stay_bounded_and_keep_spike_nan_extremes_and_last():
    s = Series(limit=512)
    for i in range(1_000_000):
        s.append(i, 9e9 if i == 654_321 else (math.nan if i == 123_456 else 1.0 + i * 1e-6))
    xs, ys = s.points()
    assert len(xs) <= 512 and s.n == 1_000_000
    assert max(v for v in ys if v == v) == 9e9, "the spike survives every merge"
    assert any(v != v for v in ys), "so does the NaN"
    assert s.last() == 1.0 + 999_999 * 1e-6 and s.last_x == 999_999
    assert s.finite_min() == (1.0, 0.0) and s.finite_max() == 9e9
    dx, dy = s.downsample(100)
    assert len(dx) == 100 and dx == sorted(dx) and 9e9 in dy


def test_series_doc_round_trips_and_continues_like_the_original():
    a = Series(limit=64)
    for i in range(1000):
        a.append(i, float(i % 13))
    b = Series.from_doc(json.loads(json.dumps(a.to_doc())), limit=64)
    for i in range(1000, 1500):
        a.append(i, float(i % 13))
        b.append(i, float(i % 13))
    assert a.points() == b.points() and a.n == b.n and a.recent(20) == b.recent(20)


def test_book_plus_tail_equals_a_full_read_and_a_stale_book_is_rebuilt(tmp_path):
    run = _run(tmp_path)
    _write_metrics(run, range(0, 30_000), nan_at=777)
    seriesfile.save_book(run, seriesfile.load_book(run))          # what the runner leaves behind
    _write_metrics(run, range(30_000, 31_000))
    _write_metrics(run, range(31_000, 32_000), attempt=2)
    cached = seriesfile.load_book(run)
    os.unlink(run.series)
    fresh = seriesfile.load_book(run)
    assert cached.to_doc() == fresh.to_doc()
    assert cached.metric_count == 32_000 and cached.restarts_at == [31_000]

    # a book that describes a longer (replaced) metrics file is not trusted
    seriesfile.save_book(run, fresh)
    run.metrics.write_text(run.metrics.read_text().splitlines(keepends=True)[0])
    assert seriesfile.load_book(run).metric_count == 1
    # nor one whose offset falls inside a line, nor a corrupt one
    doc = json.loads(run.series.read_text())
    doc["metrics_offset"] = 5
    jsonio.atomic_write_json(run.series, doc)
    assert seriesfile.load_book(run).metric_count == 1
    run.series.write_text("{not json")
    assert seriesfile.load_book(run).metric_count == 1


def test_json_once_agrees_with_and_without_the_book(tmp_path):
    """The user-visible output: `--json --once` of a 200k-step run from the book (reading only the
    tail) prints the very same run, series and last metrics as a full read."""
    run = _run(tmp_path)
    _write_metrics(run, range(200_000), nan_at=150_000)
    seriesfile.save_book(run, seriesfile.load_book(run))
    _write_metrics(run, range(200_000, 200_050))

    def once() -> dict:
        done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "--json", "--once", run.run_id,
                               "--runs-dir", str(run.path.parent), "--no-gpu"], cwd=REPO, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, done.stderr
        d = json.loads(done.stdout)
        for k in ("t", "taken_at"):
            d.pop(k, None)
        for k in ("elapsed_s", "state_age_s", "cost_so_far", "cost_projected"):
            d["run"].pop(k, None)
        return d

    with_book = once()
    os.unlink(run.series)
    without = once()
    assert with_book == without
    assert with_book["run"]["metric_count"] == 200_050
    assert with_book["last_metrics"]["step"] == 200_049
    assert "nan" in [v for _, v in with_book["series"]["loss"]], "the NaN step is still marked"


def test_run_comparison_reads_every_point(tmp_path):
    run = _run(tmp_path)
    _write_metrics(run, range(10_000))
    seriesfile.save_book(run, seriesfile.load_book(run))
    snap = RunWatcher(run, full=True).poll(with_gpu=False)
    assert len(snap.series["loss"].points()[0]) == 10_000
    assert len(RunWatcher(run).poll(with_gpu=False).series["loss"].points()[0]) <= seriesfile.DEFAULT_LIMIT


def one_by_one(recs: list[dict]) -> seriesfile.SeriesBook:
    """The reference: a book fed one record at a time."""
    book = seriesfile.SeriesBook(limit=256)
    for r in recs:
        book.feed(r)
    return book


def test_batches_give_what_one_by_one_gives():
    """The runner feeds its book a slice at a time: the result is the one-by-one result."""
    import random
    rnd = random.Random(3)
    recs = []
    for s in range(1, 20_001):
        loss = rnd.choice([math.nan, math.inf, -math.inf]) if rnd.random() < 0.01 else rnd.random() * 3
        recs.append({"attempt": 1 if s < 12_000 else 2, "step": s, "loss": loss,
                     "grad_norm": None if s % 7 == 0 else rnd.random(), "mem_gib": "nan" if s == 500 else 30.0})
    one = one_by_one(recs)
    many = seriesfile.SeriesBook(limit=256)
    i = 0
    while i < len(recs):
        k = rnd.choice([1, 3, 50, 700, 5000])
        many.feed_many(recs[i:i + k])
        i += k
    assert json.dumps(one.to_doc()) == json.dumps(many.to_doc())


def test_columns_give_what_one_by_one_gives():
    """The runner feeds its book from the log's columns (no dict per record): same book."""
    import random

    from moeconsole.runner.core.columns import records_to_columns
    rnd = random.Random(5)
    recs = []
    for s in range(1, 30_001):
        loss = math.nan if rnd.random() < 0.001 else round(rnd.random() * 3, 1)  # ties for the minimum
        recs.append({"attempt": 1 if s < 17_000 else 2, "step": s, "loss": loss,
                     "grad_norm": None if s % 7 == 0 else rnd.random(), "mem_gib": 30.0 + (s % 5),
                     "step_time_s": 0.5, "tokens_per_s": None})
    one = one_by_one(recs)
    cols = seriesfile.SeriesBook(limit=256)
    i = 0
    while i < len(recs):
        k = rnd.choice([1, 3, 50, 700, 5000])
        part = recs[i:i + k]
        if part[0]["attempt"] != part[-1]["attempt"]:  # the runner's batches are one attempt each
            part = [r for r in part if r["attempt"] == part[0]["attempt"]]
        steps, values, present = records_to_columns(part)
        cols.feed_arrays(steps.astype(float), values, present, part[-1])
        i += len(part)
    assert json.dumps(one.to_doc()) == json.dumps(cols.to_doc())


def test_a_batch_makes_its_other_series_in_the_order_its_records_meet_them():
    """A first record without ``epoch``/``lr`` (a Keras paste cut before its ``Epoch`` line, a
    DeepSpeed memory report before its step's line) then records with them: a batch gives the
    chart book's other columns in the order, and keeps the same 64 names, as one record at a time."""
    extras = {f"m{i}": float(i) for i in range(seriesfile.MAX_OTHER - 1)}   # with t: the cap, full
    recs = [{"attempt": 1, "step": 1, "loss": 2.0, "t": 1.0, "extra": {"acc": 0.1}},
            {"attempt": 1, "step": 2, "loss": 1.9, "t": 2.0, "lr": 1e-3, "epoch": 1.0,
             "extra": {"acc": 0.2, "val_acc": 0.3}}]
    one, many = one_by_one(recs), seriesfile.SeriesBook(limit=256)
    many.feed_many(recs)
    assert list(many.other) == list(one.other) == ["t", "acc", "lr", "epoch", "val_acc"]
    assert json.dumps(one.to_doc()) == json.dumps(many.to_doc())
    capped = [{"attempt": 1, "step": 1, "loss": 2.0, "t": 1.0, "extra": extras},
              {"attempt": 1, "step": 2, "loss": 1.9, "t": 2.0, "lr": 1e-3, "extra": {**extras, "late": 1.0}}]
    one, many = one_by_one(capped), seriesfile.SeriesBook(limit=256)
    many.feed_many(capped)
    assert "lr" not in one.other and sorted(one.dropped) == ["late", "lr"]
    assert json.dumps(one.to_doc()) == json.dumps(many.to_doc())


def test_a_series_read_between_a_steps_append_and_its_values_gives_pairs():
    """The console draws while its poll thread feeds the series (a newer snapshot no longer
    waits for the screen): a read that lands between the append of a step and of its value
    still gives equal lengths, never an IndexError in the chart."""
    s = Series(limit=64)
    for i in range(200):
        s.append(i, float(i))
    s._x[s._len] = 999.0   # the poll thread is here: the step stored, its value, mean and count not yet
    xs, ys = s.points()
    assert len(xs) == len(ys) and 999.0 not in xs
    assert len(s.means()[0]) == len(s.means()[1])
    dx, dy = s.downsample(8)
    assert len(dx) == len(dy) == 8


def test_extend_keeps_exactly_what_appending_one_point_at_a_time_keeps():
    """A batch of points (the history read feeds thousands at once) leaves the series bit for bit
    as appending them one by one: the bucket maxima and the bucket means (summed in the same
    order, so rounded the same), with NaN and inf in some batches, across many halvings."""
    import random
    rnd = random.Random(3)
    one, many = Series(limit=64), Series(limit=64)
    step = 0
    while step < 20_000:
        n = rnd.choice([1, 3, 17, 500, 2048, 5000])
        xs = [float(step + i) for i in range(n)]
        ys = [rnd.random() * 10 ** rnd.randint(-8, 8) for _ in range(n)]
        if rnd.random() < 0.2:
            ys[rnd.randrange(n)] = rnd.choice([math.nan, math.inf, -math.inf])
        for x, y in zip(xs, ys):
            one.append(x, y)
        many.extend(xs, ys)
        step += n
    assert one.stride > 64
    assert json.dumps(many.to_doc()) == json.dumps(one.to_doc())
    assert [v.hex() for v in many.means()[1]] == [v.hex() for v in one.means()[1]]


def test_extend_array_keeps_exactly_what_appending_one_point_at_a_time_keeps():
    """A history read's numpy columns (``extend_array``: whole buckets reduced by numpy) leave the
    series bit for bit as appending the points one by one: maxima, means summed in the same order,
    the bucket being filled, the extremes and their steps; with NaN, inf, sums that overflow, batches
    without a finite value, a negative zero (which numpy and Python order differently), with a
    limit and without."""
    import random

    import numpy as np
    rnd = random.Random(5)
    one, many = Series(limit=8), Series(limit=8)   # a batch of whole buckets: none left being filled
    for x in range(64):
        one.append(float(x), x * 1.5)
    many.extend_array(np.arange(64.0), np.arange(64.0) * 1.5)
    assert one.stride == 16 and one.to_doc()["pend"][2] == 0
    assert json.dumps(many.to_doc()) == json.dumps(one.to_doc())
    for limit in (64, 2, None):
        one, many = Series(limit=limit), Series(limit=limit)
        step = 0
        while step < 30_000:
            n = rnd.choice([1, 3, 63, 64, 65, 500, 512, 1024, 2048, 5000])   # some end on a bucket's end
            xs = np.arange(step, step + n, dtype=np.float64)
            ys = np.array([rnd.random() * 10 ** rnd.randint(-8, 8) for _ in range(n)])
            kind = rnd.random()
            if kind < 0.2:
                ys[rnd.randrange(n)] = rnd.choice([math.nan, math.inf, -math.inf])
            elif kind < 0.25:
                ys[:] = math.nan
            elif kind < 0.3:
                ys[:] = 1e308   # finite values whose sum is inf
            elif kind < 0.35:
                ys[:] = 0.0
                ys[rnd.randrange(2)::2] = -0.0   # zeros of both signs: a max, a min, a sum of them
            elif kind < 0.4:
                ys[:] = 0.5     # ties: the minimum's step is its first
            for x, y in zip(xs.tolist(), ys.tolist()):
                one.append(x, y)
            many.extend_array(xs, ys)
            step += n
            if limit is not None:   # after every batch: the bucket being filled too
                assert json.dumps(many.to_doc()) == json.dumps(one.to_doc())
        assert limit is None or one.stride > 64
        assert json.dumps(many.to_doc()) == json.dumps(one.to_doc())
        assert [v.hex() for v in many.means()[1]] == [v.hex() for v in one.means()[1]]


def test_a_tied_minimum_after_steps_start_again_keeps_the_step_appending_keeps():
    """A log whose steps start again (a Megatron job resumed from iteration 1 after iterations
    25-27, a Lightning fit after its last epoch) with its minimum tied across the restart: a batch
    (``extend``, ``extend_array``, the history read's way) gives the minimum the step one-by-one
    appending (the live line parser's way) gives it, the first point met, not the smallest step:
    the run screen's lowest value said "at step 1" where the live run said "at step 25"."""
    import numpy as np
    xs = [25.0, 26.0, 27.0] + [float(x) for x in range(1, 100)]
    for ys in ([0.0] * len(xs),                                  # Megatron's "number of nan iterations"
               [2.0, 0.5, 1.0] + [0.5] * (len(xs) - 3),          # the minimum met at 26, again at 1..
               [math.nan, 0.5, math.inf] + [0.5, math.nan] * 49 + [0.5]):   # with non-finite values
        one = Series(limit=16)
        for x, y in zip(xs, ys):
            one.append(x, y)
        for feed in ("extend", "extend_array"):
            many = Series(limit=16)
            if feed == "extend":
                many.extend(xs, ys)
            else:
                many.extend_array(np.array(xs), np.array(ys))
            assert many.finite_min() == one.finite_min() and one.finite_min()[1] in (25.0, 26.0), feed
            assert json.dumps(many.to_doc()) == json.dumps(one.to_doc()), feed


def test_a_book_fed_numpy_columns_is_the_book_fed_one_record_at_a_time():
    """``feed_arrays`` (the runner's live batches and the history read's, as they are) builds the
    book ``feed`` builds of the same rows one record at a time: chart series with values missing
    in some rows, the other numbers of template rows (columns, a constant, the batch's time) and
    of the parser's records among them, new series in the order the rows meet them, batches of a
    few rows (the per-value path) and of thousands (whole buckets by numpy)."""
    import random

    import numpy as np
    rnd = random.Random(7)
    one, arrays = seriesfile.SeriesBook(limit=64), seriesfile.SeriesBook(limit=64)
    step = 1
    for b in range(60):
        n = rnd.choice([5, 200, 3000])
        steps = np.arange(step, step + n, dtype=np.float64)
        values = {k: np.array([rnd.random() for _ in range(n)]) for k in seriesfile.CHART_KEYS}
        present = {k: np.ones(n, dtype=bool) for k in seriesfile.CHART_KEYS}
        present["tokens_per_s"][:] = False
        present["grad_norm"] = np.array([rnd.random() < 0.9 for _ in range(n)])
        values["grad_norm"][~present["grad_norm"]] = math.nan
        cut = n // 2
        proto = {"lr": 1e-5, "epoch": 0.5, "extra": {"token_acc": 0.7, "moe_aux": 0.01}}
        cols = {"lr": np.array([rnd.random() * 1e-5 for _ in range(cut)]),
                "token_acc": np.array([rnd.random() for _ in range(cut)])}
        recs = [{"step": int(s), "lr": rnd.random(), **({"epoch": 1.0} if rnd.random() < 0.5 else {}),
                 "extra": {"token_acc": rnd.random(), **({f"new_{b}": 2.0} if i == 1 else {})}}
                for i, s in enumerate(steps[cut:].tolist())]
        blocks = [(proto, cols, cut), recs]
        last = {"step": int(steps[-1]), "attempt": 1 + b // 30, "t": 1000.0 + b}
        arrays.feed_arrays(steps, values, present, last, other=lambda: blocks)
        for i in range(n):   # the same rows as the records they stand for, stamped as the batch
            rec = {"step": int(steps[i]), "attempt": last["attempt"], "t": last["t"]}
            rec.update({k: float(values[k][i]) for k in seriesfile.CHART_KEYS if present[k][i]})
            if i < cut:
                rec.update(lr=float(cols["lr"][i]), epoch=0.5,
                           extra={"token_acc": float(cols["token_acc"][i]), "moe_aux": 0.01})
            else:
                rec.update({k: v for k, v in recs[i - cut].items() if k != "step"})
            one.feed(rec)
        step += n
    a, o = arrays.to_doc(), one.to_doc()
    assert a.pop("last_metrics") == last and o.pop("last_metrics")["step"] == last["step"]
    assert json.dumps(a) == json.dumps(o)
    assert list(arrays.other) == list(one.other)


def _metrics_text(steps: range, loss: float) -> str:
    return "".join(json.dumps({"v": 1, "t": 1.0, "attempt": 1, "step": s, "loss": loss}) + "\n" for s in steps)


def _losses(watcher: RunWatcher) -> list[tuple[float, float]]:
    from moeconsole.runner.core.series import to_pairs
    return [tuple(p) for p in to_pairs(*watcher.poll(with_gpu=False).series["loss"].downsample(1000))]


def test_a_metrics_file_replaced_by_a_new_one_with_the_freed_inode_is_read_anew(tmp_path):
    """metrics.jsonl deleted and written again (a run directory synced back, a run's records
    rebuilt), the filesystem giving the new file the freed inode, at least as long: the chart book
    went on from the old offset as if it were a continuation (the old losses kept, the new file's
    first steps never read, its later ones glued on). The log tail's rule (``tail.text_changed``)
    tells the new file; it is read from its start."""
    run = _run(tmp_path)
    run.metrics.write_text(_metrics_text(range(1, 4), 5.0))
    watcher = RunWatcher(run)
    assert _losses(watcher) == [(1, 5.0), (2, 5.0), (3, 5.0)]
    old = os.stat(run.metrics).st_ino
    new = _metrics_text(range(1, 6), 1.0)
    for _ in range(2000):   # unlink and create until the filesystem gives the freed inode again
        os.unlink(run.metrics)
        run.metrics.write_text(new)
        if os.stat(run.metrics).st_ino == old:
            break
    else:
        import pytest
        pytest.skip(f"the filesystem under {tmp_path} gave no freed inode again (tmpfs numbers every new file anew)")
    assert _losses(watcher) == [(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0), (5, 1.0)]


def test_a_quiet_metrics_file_is_not_read_again_at_each_poll(tmp_path, monkeypatch):
    """The check costs a stat a poll: the bytes before the offset are read only when the file's
    stat changed (a quiet run's console polls two or three times a second)."""
    run = _run(tmp_path)
    run.metrics.write_text(_metrics_text(range(1, 4), 5.0))
    reads: list[int] = []
    real = seriesfile.bytes_before
    monkeypatch.setattr(seriesfile, "bytes_before", lambda *a: (reads.append(1), real(*a))[1])
    watcher = RunWatcher(run)
    for _ in range(5):
        watcher.poll(with_gpu=False)
    assert len(reads) <= 2, reads   # the first feed's seen bytes, and one look at its stat's first change
    with open(run.metrics, "a") as f:
        f.write(_metrics_text(range(4, 5), 4.0))
    assert _losses(watcher)[-1] == (4, 4.0)


def _book_losses(book: seriesfile.SeriesBook) -> list[tuple[float, float]]:
    from moeconsole.runner.core.series import to_pairs
    return [tuple(p) for p in to_pairs(*book.series["loss"].downsample(1000))]


def test_a_metrics_file_replaced_while_its_last_records_are_read_is_read_anew(tmp_path):
    """metrics.jsonl replaced (a rename over it: a sync, records rebuilt) while the book reads its
    last records: the bytes kept to tell the file came from a second open, after the read, of the
    new file, and were taken for the ones read: the book went on in the new file from the old
    offset. They are the bytes read, on the one descriptor: the new file is read from its start."""
    run = _run(tmp_path)
    run.metrics.write_text(_metrics_text(range(1, 4), 5.0))
    book = seriesfile.SeriesBook()

    def replaced_at_the_last(rec: dict) -> None:
        if rec["step"] == 3:
            tmp = run.metrics.with_name("metrics.jsonl.new")
            tmp.write_text(_metrics_text(range(1, 6), 1.0))
            os.replace(tmp, run.metrics)

    book.feed_file(run, each=replaced_at_the_last)
    assert _book_losses(book) == [(1, 5.0), (2, 5.0), (3, 5.0)]
    book.feed_file(run)
    assert _book_losses(book) == [(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0), (5, 1.0)]


def test_a_metrics_file_replaced_while_no_reader_ran_is_read_anew_from_the_saved_book(tmp_path):
    """series.json (the runner's, a console's, --json's chart book) was saved; metrics.jsonl was
    then written anew, as long or longer with a line ending at the saved offset: a reader loading
    the book checked only the size and that newline, and went on in the new file from the old
    offset. The book keeps the digest of the bytes before its offset (``tail.seen_digest``); a file
    with other bytes there is read from its start. A book saved before the digest reads as before."""
    run = _run(tmp_path)
    run.metrics.write_text(_metrics_text(range(1, 4), 5.0))
    seriesfile.save_book(run, seriesfile.load_book(run))
    run.metrics.write_text(_metrics_text(range(1, 6), 1.0))
    assert _book_losses(seriesfile.load_book(run)) == [(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0), (5, 1.0)]
    # the same file written on: the saved book goes on from its offset
    run.metrics.write_text(_metrics_text(range(1, 4), 5.0))
    seriesfile.save_book(run, seriesfile.load_book(run))
    with open(run.metrics, "a") as f:
        f.write(_metrics_text(range(4, 6), 4.0))
    doc = jsonio.read_json(run.series)
    assert doc["metrics_seen"]
    assert _book_losses(seriesfile.load_book(run)) == [(1, 5.0), (2, 5.0), (3, 5.0), (4, 4.0), (5, 4.0)]
    # a book from before the digest: the offset on a line ending, as it was read
    jsonio.atomic_write_json(run.series, {k: v for k, v in doc.items() if k != "metrics_seen"})
    assert _book_losses(seriesfile.load_book(run))[-1] == (5, 4.0)
