"""The history of a past log as the run screen's import reads it (``scan_history``): the chart
book fed from the batches' columns (template rows' other numbers as columns, no record decoded)
holds exactly what the line parser's records give, on every real log of the corpus and on
ms-swift output whose rows switch between the template and the parser."""
from __future__ import annotations

import random

import numpy as np
import pytest

from moeconsole.runner.ingest.history import HistoryFold, last_record, read_history, scan_history
from moeconsole.runner.ingest.parser import RECORD, LogParser
from moeconsole.runner.ingest.history import read_events
from moeconsole.runner.rundir import seriesfile
from tests.ingest.corpus_check import CORPUS

CORPUS_LOGS = sorted(p.name for p in CORPUS.glob("*.log"))


def swift_log(path, steps: int = 3000, shape_change_at: int | None = None) -> None:
    """ms-swift 4.x output (transformers 5.x dicts behind tqdm redraws, a save every 100 steps).
    Some values print as an integer ('1', which JSON writes as 1.0: the template writes that), some
    gradient norms as 'nan' (a value the template does not write: those rows go to the line parser
    between template rows). ``shape_change_at``: from that step on the dicts change shape (a MoE
    auxiliary loss appears, the token accuracy goes, an eval every 500 steps)."""
    rnd = random.Random(7)
    out = ["[INFO:swift] output_dir: /data/out/v3\n"]
    for i in range(1, steps + 1):
        grad = "nan" if i % 53 == 0 else "1" if i % 37 == 0 else f"{0.8 + rnd.random() * 0.2:.4g}"
        if shape_change_at is not None and i >= shape_change_at:
            d2 = {"loss": f"{2.2 - i / steps + rnd.random() * 0.05:.4g}", "aux_loss": f"{rnd.random() * 0.01:.4g}",
                  "grad_norm": grad, "learning_rate": f"{2e-5 * (1 - i / steps) + 1e-9:.4g}",
                  "epoch": f"{3 * i / steps:.4g}", "global_step/max_steps": f"{i}/{steps}",
                  "elapsed_time": f"{i}s", "memory(GiB)": "35.12", "train_speed(s/it)": "0.195"}
            out.append(f"\rTrain: {i}/{steps}\r{' ' * 20}\r{d2}\n")
            if i % 500 == 0:
                out.append(f"{{'eval_loss': '{1.5 - i / steps / 2:.4g}', 'eval_token_acc': '0.7', "
                           f"'epoch': '{3 * i / steps:.4g}', 'global_step/max_steps': '{i}/{steps}'}}\n")
            continue
        d = {"loss": f"{2.2 - i / steps + rnd.random() * 0.05:.4g}", "grad_norm": grad,
             "learning_rate": f"{2e-5 * (1 - i / steps) + 1e-9:.4g}", "token_acc": f"{0.6 + 0.3 * i / steps:.4g}",
             "epoch": f"{3 * i / steps:.4g}", "global_step/max_steps": f"{i}/{steps}",
             "elapsed_time": f"{i}s", "memory(GiB)": "35.12", "train_speed(s/it)": "0.195"}
        out.append(f"\rTrain: {i}/{steps}\r{' ' * 20}\r{d}\n")
        if i % 100 == 0:
            out.append(f"[INFO:swift] Saving model checkpoint to /data/out/v3/checkpoint-{i}\n")
    path.write_text("".join(out))


def history_book(path, fast: bool) -> tuple[seriesfile.SeriesBook, int]:
    """The book as the import feeds it (``moeconsole.console.foreign.Import._on_batch``), with the
    batches' other columns (``fast``) or their records only; and how many rows came as columns."""
    book = seriesfile.SeriesBook()
    as_columns = [0]

    def on_batch(batch) -> None:
        if not len(batch):
            return
        blocks = batch.other() if batch.other is not None else None
        as_columns[0] += sum(b[2] for b in blocks or () if isinstance(b, tuple))
        book.feed_arrays(np.asarray(batch.steps, dtype=np.float64), batch.values, batch.present,
                         last_record(batch) or {}, records=batch.records, other=batch.other if fast else None)
    scan_history(str(path), on_batch, chunk=4096)
    return book, as_columns[0]


def parser_book(path) -> seriesfile.SeriesBook:
    """The book of the line parser's records, one record at a time (no template, no columns)."""
    parser = LogParser()
    events = read_events(parser, [path.read_bytes()])
    book = seriesfile.SeriesBook()
    for kind, rec in events:
        if kind == RECORD:
            book.feed(rec)
    return book


def same_numbers(a: seriesfile.SeriesBook, b: seriesfile.SeriesBook) -> None:
    da, db = a.to_doc(), b.to_doc()
    assert da["metric_count"] == db["metric_count"]
    assert da["series"] == db["series"]
    assert list(da["other"]) == list(db["other"]) and da["other"] == db["other"]
    assert da["dropped"] == db["dropped"]


@pytest.mark.parametrize("name", CORPUS_LOGS)
def test_history_of_each_real_log_charts_what_the_parser_reads(name):
    path = CORPUS / name
    fast, _ = history_book(path, fast=True)
    same_numbers(fast, history_book(path, fast=False)[0])
    same_numbers(fast, parser_book(path))


def test_swift_history_reads_other_numbers_as_columns_and_equals_the_parser(tmp_path):
    path = tmp_path / "train.log"
    swift_log(path)
    fast, as_columns = history_book(path, fast=True)
    assert as_columns > 2500, "template rows give their other numbers as columns"
    assert fast.metric_count == 3000 and set(fast.other) >= {"lr", "epoch", "token_acc"}
    same_numbers(fast, history_book(path, fast=False)[0])
    same_numbers(fast, parser_book(path))


def folded(path, out, workers: int, chunk: int = 4096):
    """The import's fold of a log (``read_history``), in one process or (``workers=2``, a split
    even for a small file) with its first part read by a second process."""
    out.mkdir()
    fold, stats = read_history(str(path), HistoryFold(out / "metrics.jsonl", out / "evals.jsonl"),
                               workers=workers, split_min_bytes=0, chunk=chunk)
    return fold, stats


def same_history(one: HistoryFold, two: HistoryFold) -> None:
    """Everything the import keeps is the same: the chart book, metrics.jsonl and evals.jsonl
    byte for byte, the (step, grad norm) arrays of the checkpoint verdicts, the record count."""
    same_numbers(one.book, two.book)
    assert one.book.to_doc() == two.book.to_doc()
    assert one.book.last_metrics == two.book.last_metrics
    # a log with evaluations only (no training record) writes no metrics.jsonl, in either way
    assert (one.metrics.read_bytes() if one.metrics.exists() else b"") == \
        (two.metrics.read_bytes() if two.metrics.exists() else b"")
    assert (one.evals.read_bytes() if one.evals.exists() else b"") == (two.evals.read_bytes() if two.evals.exists() else b"")
    assert one.steps == two.steps and one.grads.tobytes() == two.grads.tobytes() and one.records == two.records


@pytest.mark.parametrize("name", CORPUS_LOGS)
def test_history_read_in_two_processes_equals_one_on_each_real_log(name, tmp_path):
    path = CORPUS / name
    one, _ = folded(path, tmp_path / "one", workers=1)
    two, _ = folded(path, tmp_path / "two", workers=2)   # a log with no template line is read by one
    same_history(one, two)


def test_swift_history_split_by_a_second_process_whose_shape_changes_mid_file(tmp_path):
    path = tmp_path / "train.log"
    swift_log(path, steps=6000, shape_change_at=4000)
    one, _ = folded(path, tmp_path / "one", workers=1)
    two, stats = folded(path, tmp_path / "two", workers=2)
    assert stats.processes == 2, "the first part was read by the second process"
    assert one.records == 6000 and "aux_loss" in one.book.other and "token_acc" in one.book.other
    assert one.book.eval_count == 5
    same_history(one, two)
    three, _ = folded(path, tmp_path / "three", workers=2, chunk=64 << 10)   # other chunk edges
    same_history(one, three)


def history_children() -> list[int]:
    """This process's children that read a part of a history (from /proc)."""
    import os
    from pathlib import Path
    pids = []
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"moeconsole.runner.ingest.history" in cmd and os.getpid() != int(pid):
                pids.append(int(pid))
    return pids


def test_a_second_process_killed_mid_read_is_replaced_by_this_one(tmp_path):
    """The other process dies (SIGKILL, as the OOM killer would): this one reads its part and the
    history is still exactly the one-process read."""
    import os
    import signal
    path = tmp_path / "train.log"
    swift_log(path, steps=6000, shape_change_at=4000)
    one, _ = folded(path, tmp_path / "one", workers=1)
    killed: list[int] = []

    def progress(_: int) -> None:
        for pid in history_children():
            if not killed:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
    out = tmp_path / "two"
    out.mkdir()
    two, stats = read_history(str(path), HistoryFold(out / "metrics.jsonl", out / "evals.jsonl"),
                              workers=2, split_min_bytes=0, chunk=4096, progress=progress)
    assert killed and stats.processes == 1
    same_history(one, two)
    assert not history_children()
    assert sorted(p.name for p in out.iterdir()) == ["evals.jsonl", "metrics.jsonl"], "no scratch file left"


def test_a_stopped_history_read_ends_its_second_process(tmp_path):
    import threading
    path = tmp_path / "train.log"
    swift_log(path, steps=6000)
    stop = threading.Event()
    seen: list[list[int]] = []

    def progress(_: int) -> None:   # the user closes the screen once the second process reads
        seen.append(history_children())
        if seen[-1]:
            stop.set()
    out = tmp_path / "run"
    out.mkdir()
    read_history(str(path), HistoryFold(out / "metrics.jsonl", out / "evals.jsonl"), workers=2,
                 split_min_bytes=0, chunk=4096, progress=progress, stop=stop)
    assert any(seen), "a second process was reading"
    assert not history_children(), "and it was ended with the read"
    assert not [p for p in out.iterdir() if p.name.startswith(".history-")], "its scratch files are gone"


def megatron_log(path, steps: int = 3000) -> None:
    """Megatron-LM training_log lines with memory reports and a validation every 500 steps,
    then ms-swift's Megatron dicts behind tqdm redraws (the template's shape), some with a grad
    norm printed as an integer (the line parser's)."""
    from tests.ingest import ingest_samples as S
    rnd = random.Random(11)
    out = []
    for i in range(1, steps + 1):
        loss, grad = 3.0 - i / steps + rnd.random() * 0.05, 0.8 + rnd.random() * 0.2
        out.append(S.megatron_line(i, steps, loss, grad, lr=3e-5 * (1 - i / steps) + 1e-7))
        if i == 10:
            out += [S.memory_report(0, i, 4096.0), S.memory_report(1, i, 5120.0)]
        if i % 500 == 0:
            out.append(f" validation loss at iteration {i} | lm loss value: {2.5 - i / steps:.6E} | "
                       f"lm loss PPL: {8.1:.6E} | ")
    for j in range(1, steps + 1):
        grad = 1 if j % 41 == 0 else round(0.5 + rnd.random() * 0.2, 8)
        out.append(S.tqdm_write(S.swift_megatron_dict(steps + j, 2 * steps, 1.5 - j / steps / 2, grad), j, steps))
    path.write_text("\n".join(out) + "\n")


def parser_files(path) -> tuple[bytes, bytes, int, seriesfile.SeriesBook]:
    """metrics.jsonl and evals.jsonl as the line parser's records and marks give them, one line
    at a time (``jsonio.dumps`` of each, each record with the offset of the line it came from,
    ``log_at``), the record count, and the chart book fed one record
    and one evaluation at a time."""
    from moeconsole.runner.ingest.records import eval_record
    from moeconsole.runner.rundir import jsonio
    data = path.read_bytes()
    parser, events, placed = LogParser(), [], []
    lines = data.split(b"\n")
    line_at = [0]   # line n (1-based) starts at line_at[n - 1]
    for line in lines:
        line_at.append(line_at[-1] + len(line) + 1)
    for line in lines[:-1] if data.endswith(b"\n") else lines:
        got = parser.process_line(line)
        events += got
        placed += parser.origins
    got = parser.end_of_input()
    events += got
    placed += parser.origins
    recs = [o for k, o in events if k == RECORD]
    assert len(placed) == len(recs)
    placed_at = [line_at[n - 1] for n in placed]   # the offset of the line each record came from
    evals = [{"v": jsonio.SCHEMA_VERSION, **eval_record(o)} for k, o in events if k != RECORD and o.get("kind") == "eval"]
    book = seriesfile.SeriesBook()
    for r in recs:
        book.feed(r)
    for e in evals:
        book.feed_eval(e)
    return (b"".join((jsonio.dumps({"v": 1, **r, seriesfile.LOG_AT: at}) + "\n").encode()
                     for r, at in zip(recs, placed_at)),
            b"".join((jsonio.dumps(e) + "\n").encode() for e in evals), len(recs), book)


@pytest.mark.parametrize("name", [*CORPUS_LOGS, "swift (generated)", "megatron (generated)"])
def test_the_bulk_history_writes_exactly_what_the_line_parser_reads(name, tmp_path):
    """The import's whole-history read (template rows, their columns and checked texts, in
    2 MiB-like chunks cut small here) writes metrics.jsonl and evals.jsonl byte for byte as the
    line parser's records do, and charts the same numbers, on every real log and on generated
    ms-swift and Megatron logs."""
    if name == "swift (generated)":
        path = tmp_path / "train.log"
        swift_log(path, steps=6000, shape_change_at=4000)
    elif name == "megatron (generated)":
        path = tmp_path / "train.log"
        megatron_log(path)
    else:
        path = CORPUS / name
    fold, _ = folded(path, tmp_path / "bulk", workers=1)
    metrics, evals, n, book = parser_files(path)
    assert (fold.metrics.read_bytes() if fold.metrics.exists() else b"") == metrics
    assert (fold.evals.read_bytes() if fold.evals.exists() else b"") == evals
    assert fold.records == n
    same_numbers(fold.book, book)
    assert fold.book.last_metrics == book.last_metrics and fold.book.last_eval == book.last_eval


# quoted numbers printed otherwise than their JSON (records.parse_number's float, written by
# jsonio.dumps as its repr: 1.0, 35.1, 1e-05, 1.5, 0.001)
NOT_AS_JSON = ["1", "35.10", "1e-5", "+1.5", "0.00100", " 2", "3.", "1E-05"]


def test_numbers_printed_otherwise_than_their_json_stay_template_rows(tmp_path):
    """ms-swift prints a value as its text ('1', '35.10', '1e-5'), the line parser's record holds
    its float, whose JSON differs: the history's template writes that JSON for such values in
    every numeric place (a row no longer leaves it for the line parser), and metrics.jsonl,
    evals.jsonl and the chart book are byte for byte what the line parser gives. The parser reads
    only the lines that are not rows: the head, the line the template is learnt from, the saves,
    and the rows with a value the template cannot write (``nan``)."""
    from moeconsole.runner.ingest.bulk import read_range
    from moeconsole.runner.ingest.pipe import LinePipe
    keys = ["loss", "grad_norm", "learning_rate", "token_acc", "epoch", "memory(GiB)", "train_speed(s/it)"]
    rnd = random.Random(3)
    out, saves, nans = ["[INFO:swift] output_dir: /data/out/v3\n"], 0, 0
    for i in range(1, 3001):
        d = {"loss": f"{2.2 - i / 3000 + rnd.random() * 0.05:.4g}", "grad_norm": f"{0.8 + rnd.random() * 0.2:.4g}",
             "learning_rate": "2e-05", "token_acc": "0.6", "epoch": f"{i / 1000:.4g}",
             "global_step/max_steps": f"{i}/3000", "elapsed_time": f"{i}s", "memory(GiB)": "35.12",
             "train_speed(s/it)": "0.195"}
        if i > 1 and i % 3 == 0:
            d[keys[i % len(keys)]] = NOT_AS_JSON[i % len(NOT_AS_JSON)]
        if i % 97 == 0:
            d["grad_norm"], nans = "nan", nans + 1
        out.append(f"\rTrain: {i}/3000\r{' ' * 20}\r{d}\n")
        if i % 100 == 0:
            out.append(f"[INFO:swift] Saving model checkpoint to /data/out/v3/checkpoint-{i}\n")
            saves += 1
    path = tmp_path / "train.log"
    path.write_text("".join(out))
    fold, _ = folded(path, tmp_path / "bulk", workers=1)
    metrics, evals, n, book = parser_files(path)
    assert n == 3000 and fold.metrics.read_bytes() == metrics
    assert (fold.evals.read_bytes() if fold.evals.exists() else b"") == evals
    same_numbers(fold.book, book)
    assert b'"memory(GiB)"' not in metrics and b'"mem_gib":35.1,' in metrics and b'"loss":1.0,' in metrics
    pipe = LinePipe(LogParser(), json_lines=True, columns=True)
    for _ in read_range(str(path), 0, None, pipe, final=True, chunk=4096):
        pass
    assert pipe.slow_lines == 2 + saves + nans


def test_a_later_parts_lines_are_appended_by_the_kernel(tmp_path, monkeypatch):
    """Two processes' history: the later part's metrics and evals lines follow the earlier part's
    byte for byte (a cut last line gets its newline first), copied by the kernel where the
    filesystem can (``copy_file_range``), not read through the process: of a 423 MB log that is
    about 130 MB of lines."""
    import os
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"x" * 100)
    b.write_bytes(b"")
    src, dst = os.open(a, os.O_RDONLY), os.open(b, os.O_WRONLY)
    try:
        if os.copy_file_range(src, dst, 100, 0, 0) != 100:
            pytest.skip("no copy_file_range on this filesystem")
    except OSError:
        pytest.skip("no copy_file_range on this filesystem")
    finally:
        os.close(src)
        os.close(dst)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = HistoryFold(tmp_path / "one" / "metrics.jsonl", tmp_path / "one" / "evals.jsonl")
    later = HistoryFold(tmp_path / "two" / "metrics.jsonl", tmp_path / "two" / "evals.jsonl")
    first.metrics.write_bytes(b'{"v":1,"step":1}\n{"v":1,"step":2}')   # its last line cut
    later.metrics.write_bytes(b"".join(b'{"v":1,"step":%d}\n' % i for i in range(3, 50_000)))
    later.evals.write_bytes(b'{"v":1,"step":9,"eval_loss":1.5}\n')

    read, pread = [], os.pread

    def through_this_process(fd: int, n: int, offset: int) -> bytes:
        read.append(n)
        return pread(fd, n, offset)
    monkeypatch.setattr(os, "pread", through_this_process)
    first.append_rows(later)
    assert sum(read) < 100, "at most the last byte of a file is read here (is its line cut?), no line"
    assert first.metrics.read_bytes() == b'{"v":1,"step":1}\n{"v":1,"step":2}\n' + later.metrics.read_bytes()
    assert first.evals.read_bytes() == later.evals.read_bytes()


def test_the_later_parts_rows_are_copied_in_while_it_is_still_read(tmp_path):
    """The process that read the first part copies the later part's rows in as its spool's frames
    say they are written, not all at the end: while the later part is still read, the first
    part's files already hold the later rows of every frame fed so far, and never a row past
    them (the rows of a batch are written before its frame); at the spool's end they hold all of
    it, byte for byte the one-process history's. (The copy at the end was on the path the
    history's last step waited on: 0.1-0.3 s of a 400 MB log.)"""
    import threading
    from moeconsole.runner.ingest import bulk
    from moeconsole.runner.ingest.parser import LogParser
    log = tmp_path / "train.log"
    swift_log(log, steps=3000)
    one, _ = folded(log, tmp_path / "one", workers=1)
    plan = bulk.plan_split(str(log), split_min_bytes=0, fraction=0.5, fork=False)
    assert plan is not None
    template, split = plan
    for d in ("first", "later"):
        (tmp_path / d).mkdir()
    first = HistoryFold(tmp_path / "first" / "metrics.jsonl", tmp_path / "first" / "evals.jsonl")
    for batch in bulk.read_range(str(log), 0, split, bulk.LinePipe(LogParser(), json_lines=True, columns=True),
                                 final=False, chunk=4096):
        first.feed(batch)
    first_rows = first.metrics.read_bytes()
    spool = tmp_path / "later" / "spool"
    later = HistoryFold(tmp_path / "later" / "metrics.jsonl", tmp_path / "later" / "evals.jsonl", spool=spool)
    batches = list(bulk.read_range(str(log), split, None,
                                   bulk.LinePipe(LogParser(), json_lines=True, columns=True, template=template),
                                   final=True, chunk=4096))
    assert len(batches) > 4
    fed, done = threading.Semaphore(0), threading.Semaphore(0)   # one batch read per wait of the replay
    seen: list[int] = []

    def wait() -> None:   # the replay waits for the next frame: the later part is still read
        got = first.metrics.read_bytes()[len(first_rows):]
        seen.append(len(got))
        assert (later.metrics.read_bytes() if later.metrics.exists() else b"").startswith(got) and \
            (not got or got.endswith(b"\n")), "a row copied in that the later part had not written, or a cut one"
        fed.release()
        assert done.acquire(timeout=60)

    def read_later() -> None:
        for batch in [*batches, None]:
            if not fed.acquire(timeout=60):
                return
            if batch is None:
                later.end_spool()
            else:
                later.feed(batch)
            done.release()
    reader = threading.Thread(target=read_later)
    reader.start()
    try:
        first.replay(spool, wait, later=HistoryFold(later.metrics, later.evals))
    finally:
        for _ in range(len(batches) + 1):   # a failed check: the reader is not left waiting
            fed.release()
        reader.join(timeout=60)
    # in as it came, not at the end: before the last batch was read, nearly all rows were in
    assert max(seen) >= 0.9 * later.metrics.stat().st_size, seen
    assert len(set(seen)) >= len(batches) // 2, seen
    assert first.metrics.read_bytes() == one.metrics.read_bytes()
    assert (first.evals.read_bytes() if first.evals.exists() else b"") == \
        (one.evals.read_bytes() if one.evals.exists() else b"")


@pytest.mark.parametrize("name", [*CORPUS_LOGS, "swift (generated)", "megatron (generated)"])
def test_the_widened_window_read_in_bulk_charts_what_the_line_parser_reads(name, tmp_path):
    """A big log's newest steps widened to its last 512 KiB before its history (``Import._widen``)
    are read by the history's bulk reader (``tail_book``): from the same line, the same chart
    book (series, other numbers, newest record and evaluation) as the line parser's records and
    evaluations of that window give (``read_tail``, as the first window is read), whatever the
    window's size."""
    from moeconsole.runner.ingest.history import read_tail, tail_book
    if name == "swift (generated)":
        path = tmp_path / "train.log"
        swift_log(path, steps=6000, shape_change_at=4000)
    elif name == "megatron (generated)":
        path = tmp_path / "train.log"
        megatron_log(path)
    else:
        path = CORPUS / name
    for max_bytes in (300, 4096, 64 << 10, 512 << 10):
        bulk, start = tail_book(str(path), max_bytes)
        records, marks, line_start = read_tail(str(path), max_bytes)
        book = seriesfile.SeriesBook.from_records(records, marks)
        assert start == line_start
        same_numbers(bulk, book)
        assert bulk.last_metrics == book.last_metrics and bulk.last_eval == book.last_eval


def test_the_started_process_takes_less_of_a_smaller_log():
    """The started process pays for starting Python: of a smaller log it reads a smaller part
    (the part the same CPU would read is taken off), never under MIN_SPLIT nor over HISTORY_SPLIT;
    of a log a hundred times that cost, about HISTORY_SPLIT."""
    from moeconsole.runner.ingest.history import HISTORY_SPLIT, MIN_SPLIT, SPAWN_BYTES, split_fraction
    sizes = [SPAWN_BYTES, 4 * SPAWN_BYTES, 10 * SPAWN_BYTES, 50 * SPAWN_BYTES, 1000 * SPAWN_BYTES]
    parts = [split_fraction(s) for s in sizes]
    assert parts == sorted(parts) and parts[0] == MIN_SPLIT
    assert all(MIN_SPLIT <= p < HISTORY_SPLIT for p in parts)
    assert HISTORY_SPLIT - parts[-1] < 0.01


def test_a_declared_line_format_is_read_by_this_process_even_with_a_started_one(tmp_path):
    """A log with a declared line format (``attach --log-format``) given a process started early
    (``start_part``, which plans and reads its part without the format): the started process is
    ended and the whole log read with the format, as one process reads it (the declared lines of
    the started process's part were lost)."""
    from moeconsole.runner.ingest.history import start_part
    from moeconsole.runner.ingest.userformat import line_format_of
    path = tmp_path / "train.log"
    swift_log(path, steps=3000)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "#00000# ce~9.50 ~ rate~1e-4\n" + "".join(lines[1:]))
    fmt = line_format_of(r"^#(?P<step>\d+)# ce~(?P<loss>\S+)")
    (tmp_path / "one").mkdir()
    one, _ = read_history(str(path), HistoryFold(tmp_path / "one" / "metrics.jsonl", tmp_path / "one" / "evals.jsonl"),
                          line_format=fmt, workers=1)
    assert one.book.series["loss"].finite_max() == 9.5
    (tmp_path / "two").mkdir()
    early = start_part(str(path), tmp_path / "two" / "metrics.jsonl", tmp_path / "two" / "evals.jsonl", split_min_bytes=0)
    two, _ = read_history(str(path), HistoryFold(tmp_path / "two" / "metrics.jsonl", tmp_path / "two" / "evals.jsonl"),
                          line_format=fmt, split_min_bytes=0, early=early)
    same_history(one, two)
    assert history_children() == []


def test_a_log_no_second_process_would_read_is_read_without_sampling_the_cores(tmp_path, monkeypatch):
    """Whether a second core is free is sampled (0.1 s) only for a log big enough to split and
    without a declared format: a small log's history, or one read with a format, starts at once."""
    from moeconsole.runner.ingest import bulk
    from moeconsole.runner.ingest.userformat import line_format_of
    sampled = []
    monkeypatch.setattr(bulk, "second_core_free", lambda sample_s=0.1: sampled.append(1) or True)
    path = tmp_path / "train.log"
    swift_log(path, steps=200)
    for i, (least, fmt) in enumerate(((None, None), (0, line_format_of(r"^#(?P<step>\d+)# ce~(?P<loss>\S+)")))):
        (tmp_path / str(i)).mkdir()
        fold, _ = read_history(str(path), HistoryFold(tmp_path / str(i) / "metrics.jsonl", tmp_path / str(i) / "evals.jsonl"),
                               split_min_bytes=least, line_format=fmt)
        assert fold.records == 200
    assert sampled == []
    (tmp_path / "big").mkdir()
    read_history(str(path), HistoryFold(tmp_path / "big" / "metrics.jsonl", tmp_path / "big" / "evals.jsonl"), split_min_bytes=0)
    assert sampled == [1]


def test_a_started_process_hands_its_template_over_and_the_head_is_not_read_again(tmp_path, monkeypatch):
    """The process started early (``start_part``) learns the template from the log's head to find
    its cut; the reading thread takes that template from the line it was learnt from (in the
    plan), without reading and parsing the log's head again, and the history is the one a single
    process reads."""
    from moeconsole.runner.ingest import bulk, pipe
    from moeconsole.runner.ingest.history import start_part
    path = tmp_path / "train.log"
    swift_log(path, steps=6000, shape_change_at=5500)
    one, _ = folded(path, tmp_path / "one", workers=1)
    heads: list[str] = []
    real_learn = pipe.learn_template
    monkeypatch.setattr(bulk, "learn_template", lambda *a, **k: heads.append("learn") or real_learn(*a, **k))
    out = tmp_path / "two"
    out.mkdir()
    early = start_part(str(path), out / "metrics.jsonl", out / "evals.jsonl", chunk=4096, split_min_bytes=0)
    two, stats = read_history(str(path), HistoryFold(out / "metrics.jsonl", out / "evals.jsonl"),
                              split_min_bytes=0, chunk=4096, early=early)
    assert stats.processes == 2, "the first part was read by the started process"
    assert heads == [], "the log's head was read for a template again"
    same_history(one, two)
    assert history_children() == []


def test_a_process_started_before_the_first_frame_takes_the_larger_part(tmp_path):
    """Started before a UI's first frame (``start_part``), the second process reads while the UI
    starts, and the reading thread shares its process with the UI: the started process cuts the
    log later than a process started by the read itself would (``split_fraction(early=True)``,
    at most MAX_SPLIT), and the history is still the one a single process reads."""
    import os

    from moeconsole.runner.ingest import bulk
    from moeconsole.runner.ingest.history import MAX_SPLIT, SPAWN_BYTES, split_fraction, start_part
    for size in (SPAWN_BYTES, 10 * SPAWN_BYTES, 50 * SPAWN_BYTES, 1000 * SPAWN_BYTES):
        assert split_fraction(size) < split_fraction(size, early=True) <= MAX_SPLIT
    path = tmp_path / "train.log"
    swift_log(path, steps=6000, shape_change_at=5500)
    size = os.path.getsize(path)
    one, _ = folded(path, tmp_path / "one", workers=1)
    out = tmp_path / "two"
    out.mkdir()
    early = start_part(str(path), out / "metrics.jsonl", out / "evals.jsonl", chunk=4096, split_min_bytes=0)
    at, _ = early.split()
    late = bulk.plan_split(str(path), split_min_bytes=0, fraction=split_fraction(size), fork=False)
    assert late is not None and at > late[1] and size * MAX_SPLIT <= at < size
    two, stats = read_history(str(path), HistoryFold(out / "metrics.jsonl", out / "evals.jsonl"),
                              split_min_bytes=0, chunk=4096, early=early)
    assert stats.processes == 2
    same_history(one, two)


def test_a_log_whose_dicts_change_shape_before_the_larger_cut_is_still_read_in_two(tmp_path):
    """The template is learnt from the log's head: where the dicts have changed shape by the
    larger part's cut (a MoE auxiliary loss appearing at 60% of the run) no line of the template
    stands there, and the started process cuts where a process started by the read would; the
    history is the one a single process reads."""
    from moeconsole.runner.ingest.history import start_part
    path = tmp_path / "train.log"
    swift_log(path, steps=6000, shape_change_at=3600)
    one, _ = folded(path, tmp_path / "one", workers=1)
    out = tmp_path / "two"
    out.mkdir()
    early = start_part(str(path), out / "metrics.jsonl", out / "evals.jsonl", chunk=4096, split_min_bytes=0)
    two, stats = read_history(str(path), HistoryFold(out / "metrics.jsonl", out / "evals.jsonl"),
                              split_min_bytes=0, chunk=4096, early=early)
    assert stats.processes == 2, "the first part was read by the started process"
    same_history(one, two)
    assert history_children() == []


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cycle_the_ui_drops_while_the_history_is_read_is_collected_before_the_read_ends(tmp_path, workers):
    """The console reads a past log's history in a thread of its UI process, and the cyclic
    collector is the process's: it is paused while each block is read and folded, not for the
    whole read (it was: every object in a reference cycle the UI dropped meanwhile, a closed
    screen's widgets, waited for the read's end). A cycle the UI thread drops as the read begins,
    with enough new objects beside it that a pass is due, is collected while blocks are still
    being read; in one process and when the started process reads the first part."""
    import gc
    import threading
    import weakref

    path = tmp_path / "train.log"
    swift_log(path, steps=6000)   # 2.3 MB: 18 blocks of 128 KiB
    (tmp_path / "out").mkdir()
    began, dropped, freed = threading.Event(), threading.Event(), threading.Event()
    kept: list[list] = []
    freed_before: list[int] = []   # the blocks read when the cycle was seen freed

    class Widget:
        def __init__(self) -> None:
            self.me = self   # a reference cycle: only the cyclic collector frees it

    def ui() -> None:
        began.wait(60)
        widget = Widget()
        weakref.finalize(widget, freed.set)
        del widget
        kept.extend([] for _ in range(5 * gc.get_threshold()[0]))   # the UI's new objects: a pass is due
        dropped.set()

    blocks: list[int] = []

    def progress(pos: int) -> None:   # the reading thread, before each block
        blocks.append(pos)
        if len(blocks) == 1:
            began.set()
            assert dropped.wait(60)
        elif freed.is_set() and not freed_before:
            freed_before.append(len(blocks))
    was = gc.isenabled()
    gc.enable()
    thread = threading.Thread(target=ui)
    thread.start()
    try:
        _, stats = read_history(str(path), HistoryFold(tmp_path / "out" / "metrics.jsonl", tmp_path / "out" / "evals.jsonl"),
                                workers=workers, split_min_bytes=0, chunk=128 << 10, progress=progress)
    finally:
        began.set()
        thread.join(60)
        (gc.enable if was else gc.disable)()
    assert stats.processes == workers
    assert len(blocks) > 4
    assert freed_before, f"the UI's cycle waited for the end of the read ({len(blocks)} blocks)"
    assert gc.isenabled()


def test_the_history_is_read_without_collection_passes_in_either_process(tmp_path):
    """The read makes a tuple per row and frees it a block later, none in a cycle: the cyclic
    collector's passes over them (about a tenth of the read's CPU) are paused while each block is
    read and folded in the reading process (one part or the whole log: at most the one pass due
    when the collector is on again after a block) and for the whole part in the started one
    (``_part_main``), and the collector is on again after. The history is the same."""
    import gc
    import os
    import pickle

    from moeconsole.runner.ingest import bulk
    from moeconsole.runner.ingest.history import HISTORY_CHUNK, _part_main
    path = tmp_path / "train.log"
    swift_log(path, steps=6000)   # 2.3 MB: read in 2 MiB blocks, as a big log is
    passes: list[int] = []
    blocks: list[int] = []

    def block(pos: int) -> None:   # progress: told once per block read
        blocks.append(pos)

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            passes.append(info["generation"])

    def counted(read):
        """``read()`` with the passes counted from a fresh count (the collector's young objects
        collected first: no pass is due from what came before). One pass may come as the read
        ends: the containers counted meanwhile are due once the collector is on again."""
        gc.collect(0)
        passes.clear()
        blocks.clear()
        return read()
    was = gc.isenabled()
    gc.enable()
    gc.callbacks.append(count)
    try:
        for name in ("one", "two"):
            (tmp_path / name).mkdir()
        one, _ = counted(lambda: read_history(str(path), HistoryFold(tmp_path / "one" / "metrics.jsonl", tmp_path / "one" / "evals.jsonl"),
                                              workers=1, progress=block))
        assert 0 < len(blocks) <= 3, blocks   # 2 MiB blocks
        assert len(passes) <= len(blocks) + 1, f"{len(passes)} collection passes while one process read {len(blocks)} blocks"
        two, stats = counted(lambda: read_history(str(path), HistoryFold(tmp_path / "two" / "metrics.jsonl", tmp_path / "two" / "evals.jsonl"),
                                                  workers=2, split_min_bytes=0, progress=block))
        assert stats.processes == 2 and len(passes) <= len(blocks) + 1, passes
        assert gc.isenabled()
        same_history(one, two)

        # the started process's side, run here: the first part, folded, its result written
        split = bulk.plan_split(str(path), split_min_bytes=0, fraction=0.5, fork=False)
        assert split is not None
        work = tmp_path / "work"
        work.mkdir()
        (work / "progress").write_bytes(bytes(8))
        (work / "spool").write_bytes(bytes(8))   # the later part's spool: its last (empty) frame only
        out = tmp_path / "part"
        out.mkdir()
        assert counted(lambda: _part_main(["part", str(path), str(split[1]), str(HISTORY_CHUNK), str(out / "metrics.jsonl"),
                           str(out / "evals.jsonl"), str(work), str(os.getppid())])) == 0
        assert len(passes) <= 1, f"{len(passes)} collection passes while the started process read its part"
        assert gc.isenabled()
        first, _ = pickle.loads((work / "result.pickle").read_bytes())
        assert 0 < first.records < 6000
        assert one.metrics.read_bytes().startswith(first.metrics.read_bytes())
    finally:
        gc.callbacks.remove(count)
        (gc.enable if was else gc.disable)()


def test_a_token_in_a_template_rows_text_is_masked_as_the_line_parser_masks_it(tmp_path):
    """A text value of ms-swift's dicts (the template's quoted text) that holds a token the
    training printed, in some rows: the history writes metrics.jsonl byte for byte as the line
    parser's records (each token masked), whether the block's rows come as columns or not."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    rnd = random.Random(5)
    out = ["[INFO:swift] output_dir: /data/out/v3\n"]
    for i in range(1, 2001):
        d = {"loss": f"{2.2 - i / 2000 + rnd.random() * 0.05:.4g}", "grad_norm": f"{0.8 + rnd.random() * 0.2:.4g}",
             "learning_rate": "2e-05", "global_step/max_steps": f"{i}/2000", "elapsed_time": f"{i}s",
             "remaining_time": f"push {token}" if i % 37 == 0 else f"{2000 - i}s"}
        out.append(f"\rTrain: {i}/2000\r{' ' * 20}\r{d}\n")
    path = tmp_path / "train.log"
    path.write_text("".join(out))
    fold, _ = folded(path, tmp_path / "bulk", workers=1)
    metrics, _, n, book = parser_files(path)
    assert n == 2000 and fold.metrics.read_bytes() == metrics
    assert token.encode() not in metrics and metrics.count(b"push ") == 2000 // 37
    same_numbers(fold.book, book)


def awkward_swift_log(path, steps: int = 1500) -> None:
    """ms-swift dicts whose texts repeat across blocks (a held rate, 4-digit losses) with awkward
    rows among them: 'nan' and 'inf' values, a value printed otherwise than its JSON ('1e-5'), a
    row without a key, a row cut in two by a stray newline, a dict of another shape between two
    rows, an evaluation, a save; the log ends in the middle of a row."""
    rnd = random.Random(11)
    out = ["[INFO:swift] output_dir: /data/out/v3\n"]
    for i in range(1, steps + 1):
        d = {"loss": f"{2.2 - i / steps + rnd.random() * 0.05:.4g}", "grad_norm": f"{0.8 + rnd.random() * 0.2:.4g}",
             "learning_rate": "2e-05" if i < steps // 2 else "1e-5", "token_acc": f"{0.6 + rnd.random() * 0.01:.3g}",
             "epoch": f"{i / 500:.4g}", "global_step/max_steps": f"{i}/{steps}", "elapsed_time": f"{i}s",
             "memory(GiB)": "35.12", "train_speed(s/it)": "0.195"}
        if i % 89 == 0:
            d["grad_norm"] = "nan"
        if i % 97 == 0:
            d["loss"] = "inf" if i % 2 else "-inf"
        if i % 131 == 0:
            del d["token_acc"]
        line = f"\rTrain: {i}/{steps}\r{' ' * 20}\r{d}"
        if i % 113 == 0:   # a stray newline in the middle of the dict
            cut = line.index("'epoch'")
            line = line[:cut] + "\n" + line[cut:]
        if i == steps:   # the log ends here
            out.append(line[:len(line) // 2])
            break
        out.append(line + "\n")
        if i % 71 == 0:   # a dict of another shape between two rows
            out.append(f"{{'grad_norm': '0.5', 'aux_loss': '0.01', 'global_step/max_steps': '{i}/{steps}'}}\n")
        if i % 250 == 0:
            out.append(f"{{'eval_loss': '1.5', 'eval_token_acc': '0.7', 'epoch': '{i / 500:.4g}', "
                       f"'global_step/max_steps': '{i}/{steps}'}}\n")
            out.append(f"[INFO:swift] Saving model checkpoint to /data/out/v3/checkpoint-{i}\n")
    path.write_text("".join(out))


@pytest.mark.parametrize("known_texts", [None, 40])
def test_template_rows_checked_by_their_known_texts_give_the_line_parsers_records_and_columns(
        tmp_path, monkeypatch, known_texts):
    """The template checks each row's number texts by the texts it found in form in earlier
    blocks (one lookup per value, which is also the value's float): with awkward rows among the
    rows ('nan', 'inf', a missing key, a row cut by a newline, a dict of another shape between
    two, '1e-5'), read in small blocks so texts repeat across them, and with the texts kept per
    group capped low (``known_texts``: most texts checked again in each block), metrics.jsonl
    is byte for byte the line parser's, and the batches' columns (steps, values, present) and
    other numbers are the ones the parser's records give."""
    from moeconsole.runner.core.columns import records_to_columns
    from moeconsole.runner.ingest import template
    if known_texts is not None:
        monkeypatch.setattr(template, "KNOWN_TEXTS", known_texts)
    path = tmp_path / "train.log"
    awkward_swift_log(path)
    fold, _ = folded(path, tmp_path / "bulk", workers=1, chunk=8192)
    metrics, _, n, book = parser_files(path)
    assert fold.metrics.read_bytes() == metrics
    same_numbers(fold.book, book)
    steps, values, present, other_rows = [], {}, {}, [0]

    def on_batch(batch) -> None:
        steps.append(np.asarray(batch.steps, dtype=np.int64))
        for f in batch.values:
            values.setdefault(f, []).append(batch.values[f])
            present.setdefault(f, []).append(batch.present[f])
        other_rows[0] += sum(b[2] for b in (batch.other() or ()) if isinstance(b, tuple))
    scan_history(str(path), on_batch, chunk=8192)
    recs = [o for k, o in read_events(LogParser(), [path.read_bytes()]) if k == RECORD]
    want_steps, want_values, want_present = records_to_columns(recs)
    assert len(recs) == n and other_rows[0] > n // 2, "most rows came as the template's columns"
    np.testing.assert_array_equal(np.concatenate(steps), want_steps)
    for f in want_values:
        np.testing.assert_array_equal(np.concatenate(present[f]), want_present[f])
        np.testing.assert_array_equal(np.concatenate(values[f]), want_values[f])
