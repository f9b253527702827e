"""The runner's live reader (the bulk engine on arbitrary slices) gives exactly the events the
line parser gives: records and marks in file order, however the bytes arrive."""
from __future__ import annotations

import random

import pytest

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.history import read_events
from moeconsole.runner.ingest.live import LiveReader
from tests.ingest.test_ingest_bulk import write_mixed


def random_cuts(size: int, seed: int, mean: float) -> list[int]:
    """Slice boundaries as a training process's writes fall: random sizes around ``mean``."""
    rnd = random.Random(seed)
    cuts = [0]
    while cuts[-1] < size:
        cuts.append(min(size, cuts[-1] + max(1, int(rnd.expovariate(1 / mean)))))
    return cuts


def by_parser(data: bytes, cuts: list[int]) -> list:
    return read_events(LogParser(), [data[a:b] for a, b in zip(cuts, cuts[1:])])


def by_live(data: bytes, cuts: list[int]) -> tuple[list, LiveReader]:
    r = LiveReader()
    events = []
    for a, b in zip(cuts, cuts[1:]):
        events += r.feed(data[a:b])
    return events + r.finish(), r


@pytest.mark.parametrize("seed,mean", [(1, 256 * 1024), (2, 4096), (3, 97)])
def test_live_slices_give_the_parsers_events(tmp_path, seed, mean):
    path = tmp_path / "train.log"
    write_mixed(path, n=2500, seed=seed)
    data = path.read_bytes()
    cuts = random_cuts(len(data), seed, mean)
    want = by_parser(data, cuts)
    got, reader = by_live(data, cuts)
    assert [k for k, _ in got] == [k for k, _ in want]
    assert got == want
    assert sum(1 for k, _ in got if k == "record") > 2500
    if mean > 100_000:
        assert reader.pipe.fast_lines > 2000, "big slices take the template route"


def test_template_rows_carry_the_exact_json_line_the_runner_writes(tmp_path):
    """The runner writes a template row's JSON line instead of encoding its dict: the line must
    be byte for byte what encoding gives (metrics.jsonl cannot tell the two paths apart)."""
    from moeconsole.runner.rundir import jsonio
    from moeconsole.runner.ingest.live import JsonRecord
    path = tmp_path / "train.log"
    write_mixed(path, n=2000, seed=9)
    data = path.read_bytes()
    got, _ = by_live(data, list(range(0, len(data), 50_000)) + [len(data)])
    rows = [r for k, r in got if k == "record" and isinstance(r, JsonRecord)]
    assert len(rows) > 1000
    for rec in rows:
        assert rec.raw == (jsonio.dumps({"v": 1, **rec}) + "\n").encode()


def by_batches(data: bytes, cuts: list[int]) -> tuple[list, list, LiveReader]:
    """Records (template rows loaded from their JSON lines) and marks from ``feed_batches``,
    with the columns of every batch checked against the records they stand for."""
    import json

    import numpy as np

    from moeconsole.runner.core.columns import COLUMN_FIELDS as MONITORED_FIELDS, records_to_columns
    r = LiveReader()
    events, rows = [], 0
    for a, b in zip(cuts, cuts[1:]):
        for batch in r.feed_batches(data[a:b]):
            recs = [r_ if isinstance(r_, dict) else {k: v for k, v in json.loads(r_).items() if k != "v"}
                    for r_ in batch.records]
            steps, values, present = records_to_columns(recs)
            assert np.array_equal(np.asarray(batch.steps), steps)
            for f in MONITORED_FIELDS:
                assert np.array_equal(batch.present[f], present[f]), f
                assert np.array_equal(batch.values[f][present[f]], values[f][present[f]], equal_nan=True), f
            i = 0
            for before, mark in batch.marks:
                events += [("record", x) for x in recs[i:before]] + [("mark", mark)]
                i = max(i, before)
            events += [("record", x) for x in recs[i:]]
            rows += sum(1 for x in batch.records if isinstance(x, bytes))
    return events + r.finish(), rows, r


@pytest.mark.parametrize("seed,mean", [(4, 256 * 1024), (5, 4096), (6, 97)])
def test_batches_hold_the_parsers_events_and_matching_columns(tmp_path, seed, mean):
    path = tmp_path / "train.log"
    write_mixed(path, n=2500, seed=seed)
    data = path.read_bytes()
    cuts = random_cuts(len(data), seed, mean)
    want = by_parser(data, cuts)
    got, template_rows, _ = by_batches(data, cuts)
    assert [k for k, _ in got] == [k for k, _ in want]
    assert got == want
    if mean > 100_000:
        assert template_rows > 2000, "big slices take the template route, without a dict per row"


def test_rows_to_write_drops_duplicates_and_keeps_megatron_memory_reports():
    from moeconsole.runner.ingest.live import Written, rows_to_write
    t = b'{"v":1,"step":5}\n'
    recs = [t, t, {"step": 6, "src": "hf"}, {"step": 6, "src": "megatron_mem"}, {"step": 4}, {"step": None},
            {"step": 7}]
    kept, counted, last = rows_to_write(recs, [5, 5, 6, 6, 4, 0, 7], Written.upto(4))
    assert (kept, counted, last) == ([0, 2, 3, 6], [0, 2, 6], Written.upto(7))
    # the usual batch: all template rows, each a new step
    assert rows_to_write([t, t, t], [8, 9, 10], Written.upto(7)) == ([0, 1, 2], [0, 1, 2], Written.upto(10))
    # template rows repeated after an adoption: written once
    assert rows_to_write([t, t, t], [6, 7, 8], Written.upto(7)) == ([2], [2], Written.upto(8))
    # DeepSpeed reports its memory before the trainer's record of the same step: both kept,
    # only the trainer's is a new step; a report of a step already passed is a duplicate
    ds = [{"step": 10, "src": "deepspeed_mem"}, {"step": 10, "src": "hf"}, {"step": 8, "src": "deepspeed_mem"}]
    assert rows_to_write(ds, [10, 10, 8], Written.upto(9)) == ([0, 1], [1], Written.upto(10))


def test_metric_lines_are_the_bytes_encoding_gives(tmp_path):
    """A template row's line with the runner's stamp spliced in equals encoding the record."""
    import json

    from moeconsole.runner.rundir import jsonio
    from moeconsole.runner.ingest.live import metric_lines, newest_record
    path = tmp_path / "train.log"
    write_mixed(path, n=1500, seed=11)
    r = LiveReader()
    data = path.read_bytes()
    batches = [b for i in range(0, len(data), 50_000) for b in r.feed_batches(data[i:i + 50_000])]
    stamp = {"v": 1, "t": 1795590000.123456, "attempt": 3}
    seen_bytes = 0
    for b in batches:
        kept = list(range(len(b.records)))
        if not kept:
            continue
        dicts, lines = metric_lines(b.records, kept, stamp)
        for rec, d, line in zip(b.records, dicts, lines):
            if line is not None:
                seen_bytes += 1
                loaded = json.loads(line)
                assert line == (jsonio.dumps(loaded) + "\n").encode()
                assert {k: loaded[k] for k in ("v", "t", "attempt")} == stamp
            else:
                assert d == {**stamp, **rec}
        last = newest_record(b.records, kept, stamp)
        assert last["attempt"] == 3 and last["step"] == int(b.steps[-1])
    assert seen_bytes > 1000


def test_log_tail_keeps_the_last_lines_as_bytes_and_decodes_when_read():
    from moeconsole.runner.ingest.live import TailLines
    t = TailLines(keep=3, width=10)
    t.add(b"one\ntwo\nthr")
    t.add(b"ee\nfour\nError " + b"x" * 30 + b"\npart")
    # the last 3 complete lines (a long one cut to its first 5 and last 10 bytes), then the unfinished one
    assert t.text() == ["three", "four", "Error ... " + "x" * 10, "part"]
    t.add("\n\xe9".encode())
    assert t.text() == ["four", "Error ... " + "x" * 10, "part", "\xe9"], "a character split across reads is whole"


def test_log_tail_keeps_the_head_of_a_long_line_it_is_the_exception():
    """ms-swift 4.6's refusal of an unknown --template is one line of 3.5 KB (the name, then every
    template it knows; swift/template/register.py l.50); it comes in pieces and whole."""
    from moeconsole.runner.core.crash import classify
    from moeconsole.runner.ingest.live import TailLines
    names = ", ".join(f"'template_{i}'" for i in range(250))
    refusal = (f"ValueError: template_type: 'qwen9_nope' not in [{names}]").encode()
    assert len(refusal) > 3500
    frames = (b"Traceback (most recent call last):\n"
              b'  File "/v/lib/python3.11/site-packages/swift/utils/utils.py", line 186, in parse_args\n'
              b"    args, remaining_args = parser.parse_args_into_dataclasses(argv, return_remaining_strings=True)\n"
              b'  File "/v/lib/python3.11/site-packages/swift/arguments/base_args/template_args.py", line 154, in __post_init__\n'
              b"    self.template_meta = get_template_meta(self.model_info, self.model_meta, template_type=self.template)\n"
              b'  File "/v/lib/python3.11/site-packages/swift/template/register.py", line 50, in get_template_meta\n'
              b"    raise ValueError(f\"template_type: '{template_type}' not in {list(TEMPLATE_MAPPING.keys())}\")\n")
    for pieces in ([frames + refusal + b"\n"], [frames, refusal[:1000], refusal[1000:3000], refusal[3000:], b"\n"],
                   [frames + refusal]):
        t = TailLines()
        for p in pieces:
            t.add(p)
        verdict = classify(1, t.text(), steps_seen=0, attempt=1)
        assert verdict.cls == "config_error", (pieces, verdict)
        assert "template_type: 'qwen9_nope' not in" in verdict.summary


def test_a_first_slice_holding_the_whole_log_turns_to_the_template_once_learned(tmp_path):
    """A runner adopting a long log reads a big first slice: the lines after the first dict that
    teaches the template go through the template, with the same events as the line parser."""
    path = tmp_path / "train.log"
    write_mixed(path, n=2500, seed=7)
    data = path.read_bytes()
    cuts = [0, len(data)]
    want = by_parser(data, cuts)
    got, template_rows, reader = by_batches(data, cuts)
    assert got == want
    assert template_rows > 2000
    assert reader.pipe.slow_lines < 0.2 * (reader.pipe.fast_lines + reader.pipe.slow_lines)


def _stepless_between(n: int = 40) -> bytes:
    """ms-swift lines, the first with invalid UTF-8 in its step, each followed by a metric line
    that carries no step at all (the parser infers one)."""
    lines = []
    for s in range(1, n + 1):
        gs = f"{s}/{n}".encode()
        if s == 1:
            gs = b"\xff" + gs
        lines.append(b"{'loss': " + f"{1 + s / 1000:.4f}".encode() + b", 'grad_norm': 0.5, 'learning_rate': 1e-05, "
                     b"'epoch': 0.1, 'global_step/max_steps': '" + gs + b"'}")
        lines.append(b"{'loss': " + f"{9 + s / 1000:.4f}".encode() + b", 'grad_norm': 0.7}")
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("cut", [None, 97, 4096])
def test_an_inferred_step_never_replaces_a_real_record_and_live_agrees_with_parse(tmp_path, cut):
    """Live ingestion (slices, duplicates dropped) keeps what ``parse`` keeps: every real record,
    and the records whose step was inferred beside them."""
    import io
    import json
    from moeconsole.runner.ingest.live import Written, rows_to_write
    from moeconsole.runner.ingest.ndjson import write_ndjson
    data = _stepless_between()
    log = tmp_path / "train.log"
    log.write_bytes(data)
    buf = io.BytesIO()
    write_ndjson(str(log), buf)
    offline = [json.loads(line) for line in buf.getvalue().splitlines()]
    reader, last, live = LiveReader(), Written(), []
    for i in range(0, len(data), cut or len(data)):
        for batch in reader.feed_batches(data[i:i + (cut or len(data))]):
            kept, _, last = rows_to_write(batch.records, list(batch.steps), last)
            live += [json.loads(batch.records[k]) if isinstance(batch.records[k], bytes) else batch.records[k]
                     for k in kept]
    real = sorted(r["loss"] for r in live if r["loss"] < 5)
    assert real == [round(1 + s / 1000, 4) for s in range(1, 41)], "no real record dropped as a duplicate"
    assert [(r["step"], r["loss"]) for r in live] == [(r["step"], r["loss"]) for r in offline]
