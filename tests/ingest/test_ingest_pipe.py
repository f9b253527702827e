"""Ingest as one pipe: a read goes through bytes -> lines -> records -> columns once, and one
place (``LinePipe._route``) decides which strategy reads each line."""
from __future__ import annotations

import numpy as np

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.live import LiveReader
from moeconsole.runner.ingest.history import read_events
from tests.ingest import ingest_samples as S

N = 60


def swift_log(n: int = N) -> bytes:
    """ms-swift dicts behind tqdm redraws, a save every 20 steps, an evaluation at step 30 and
    a Megatron line: the template's lines and every other family."""
    out = ["[INFO:swift] Start time of running main: 2026-01-02"]
    for s in range(1, n + 1):
        out.append(S.tqdm_write(S.swift_hf_dict(s, n, 2.0 - s / 100, 0.8), s, n))
        if s % 20 == 0:
            out.append(f"[INFO:swift] Saving model checkpoint to /o/v0/checkpoint-{s}")
        if s == 30:
            out.append("{'eval_loss': '1.25', 'eval_runtime': '3.1', 'epoch': '0.5', 'global_step/max_steps': '30/60'}")
    return ("\n".join(out) + "\n").encode()


def line_starts(data: bytes) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(data) if c == 0x0A]


def test_a_slice_is_one_batch_whatever_it_holds():
    """A slice that finishes a line the slice before left open, holds template lines, a save and
    an evaluation, and leaves a line open: the runner gets one batch (one append to
    metrics.jsonl, one pass of the monitors), in file order, with the line parser's events."""
    data = swift_log()
    starts = line_starts(data)
    cut1 = starts[10] + 25          # inside the dict line of step ~10
    cut2 = starts[50] + 40          # inside a later one
    reader = LiveReader()
    first = reader.feed_batches(data[:cut1])
    second = reader.feed_batches(data[cut1:cut2])
    assert len(first) == 1 and len(second) == 1, "one batch per slice"
    batch = second[0]
    assert isinstance(batch.records[0], dict), "the line that arrived in two slices is the parser's"
    assert all(isinstance(r, bytes) for r in batch.records[1:]), "the rest are template rows (JSON lines)"
    steps = np.asarray(batch.steps).tolist()
    assert steps == list(range(steps[0], steps[0] + len(steps))), "records in file order"
    kinds = [(before, m["kind"], m.get("step")) for before, m in batch.marks]
    assert [k[1:] for k in kinds] == [("checkpoint_saved", 20), ("eval", 30), ("checkpoint_saved", 40)]
    for before, _, step in kinds:
        assert steps[before - 1] == step, "a mark stands right after the record of its step"
    # the same events as the line parser reading the same bytes
    want = read_events(LogParser(), [data[:cut1], data[cut1:cut2]], final=False)
    reader2 = LiveReader()
    got = reader2.feed(data[:cut1]) + reader2.feed(data[cut1:cut2])
    assert got == want


class Spy(LogParser):
    """The line parser, noting the lines it is given and what it is told of the template's rows."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[bytes] = []
        self.told: list[tuple[int, int]] = []

    def process_line(self, raw: bytes):  # noqa: ANN201
        self.read.append(raw)
        return super().process_line(raw)

    def context_after_rows(self, last_step: int, records: int) -> None:
        self.told.append((last_step, records))
        super().context_after_rows(last_step, records)


def test_each_line_is_read_by_one_strategy_chosen_by_its_family():
    """Before a template is learned every line is the parser's; the first metric dict it reads
    teaches the template and the rest of the block is routed again: template lines are the
    template's, the save, the evaluation and the closing summary the parser's. The parser is
    told how far the template's rows went before each line it reads."""
    from moeconsole.runner.ingest.pipe import LinePipe
    data = swift_log()
    spy = Spy()
    pipe = LinePipe(spy, want_records=True)
    batch = pipe.feed(data)
    read = [line.rsplit(b"\r", 1)[-1][:40] for line in spy.read]
    assert read[0].startswith(b"[INFO:swift] Start time")
    assert read[1].startswith(b"{'loss'"), "the first dict line teaches the template"
    others = read[2:]
    assert [r[:30] for r in others] == [b"[INFO:swift] Saving model chec", b"{'eval_loss': '1.25', 'eval_ru",
                                        b"[INFO:swift] Saving model chec", b"[INFO:swift] Saving model chec"]
    assert pipe.fast_lines == N - 1 and pipe.slow_lines == 2 + 4
    assert spy.told == [(20, 19), (30, 10), (40, 10), (60, 20)]
    assert np.asarray(batch.steps).tolist() == list(range(1, N + 1))
    assert spy.stats.lines == data.count(b"\n") and spy.stats.metric_lines == N


def test_rows_to_write_takes_a_batch_of_template_rows_and_plain_parser_records_whole():
    """One batch per slice mixes the parser's record of a line split across slices with template
    rows: every row a new step, all written; an inferred or memory record still goes by the rule."""
    from moeconsole.runner.ingest.live import Written, rows_to_write
    t = b'{"v":1,"step":5}\n'
    plain = {"step": 5, "src": "swift_dict", "extra": {}}
    assert rows_to_write([plain, t, t], [5, 6, 7], Written.upto(4)) == ([0, 1, 2], [0, 1, 2], Written.upto(7))
    inferred = {"step": 5, "src": "hf_dict", "extra": {"step_inferred": True}}
    assert rows_to_write([inferred, t], [5, 6], Written(4, 3)) == ([0, 1], [0, 1], Written(6, 6))
    mem = {"step": 5, "src": "megatron_mem", "extra": {}}
    assert rows_to_write([mem, t], [5, 6], Written.upto(4)) == ([0, 1], [1], Written.upto(6))


def test_a_deepspeed_memory_report_after_a_dict_line_reads_the_same_however_the_reads_fall(tmp_path):
    """DeepSpeed's ``see_memory_usage`` prints its message, then the ``MA ...`` line; a metric
    dict between them means the message was not this report's. The template (one read) and the
    line parser (a read cut inside the dict line) used to disagree on that: the record's
    ``mem_report`` depended on where the runner's reads fell, and ``parse`` said otherwise."""
    from moeconsole.runner.ingest.files import records_from_path
    lines = [S.tqdm_write(S.swift_hf_dict(s, 10, 1.0, 0.5), s, 10) for s in range(1, 6)]
    lines += ["After forward", S.tqdm_write(S.swift_hf_dict(6, 10, 1.0, 0.5), 6, 10),
              "MA 1.5 GB         Max_MA 2.5 GB         CA 3.0 GB         Max_CA 4 GB ",
              "Before backward", "MA 1.6 GB         Max_MA 2.6 GB         CA 3.0 GB         Max_CA 4 GB "]
    data = ("\n".join(lines) + "\n").encode()
    cut = data.index(b"'global_step/max_steps': '6/10'")

    def reports(cuts: list[int]) -> list:
        reader = LiveReader()
        events = [ev for a, b in zip(cuts, cuts[1:]) for ev in reader.feed(data[a:b])]
        return [(o["step"], o["extra"].get("mem_report")) for k, o in events
                if k == "record" and o["src"] == "deepspeed_mem"]
    want = [(6, None), (6, "Before backward")]
    assert reports([0, len(data)]) == want
    assert reports([0, cut, len(data)]) == want
    assert reports([0, cut, cut + 3, len(data)]) == want
    path = tmp_path / "train.log"
    path.write_bytes(data)
    recs, _ = records_from_path(path)
    assert [(r["step"], r["extra"].get("mem_report")) for r in recs if r["src"] == "deepspeed_mem"] == want


def test_the_line_parser_has_one_api_and_the_pipe_holds_the_unfinished_line():
    """The parser had three generations of entry points (records-only ``feed``/``flush``/
    ``take_marks``, ``feed_events``/``flush_events`` with a partial-line buffer of its own, and
    the line API the pipe uses); it keeps the line API, and bytes are cut into lines only by
    the pipe."""
    public = {name for name in vars(LogParser) if not name.startswith("_") and callable(getattr(LogParser, name))}
    assert public == {"process_line", "read_completed", "end_of_input", "context_after_rows", "release_held",
                      "read_redraws", "release_waiting",   # a line not finished yet; an attempt over
                      "waiting_line",   # where a reader that starts again must start
                      "reading_context", "restore_context"}   # ... and with what the lines before gave
    assert not hasattr(LogParser(), "partial")
    line = S.kv_line(7, 1.0, 0.5, 2.0, 5).encode()
    assert read_events(LogParser(), [line[:9], line[9:]], final=False) == []   # no newline yet
    ((kind, rec),) = read_events(LogParser(), [line[:9], line[9:]])             # the end of the log
    assert kind == "record" and rec["step"] == 7


def _trainer_marks(lines: list[str]) -> list[dict]:
    reader = LiveReader()
    batches = reader.feed_batches(("\n".join(lines) + "\n").encode())
    return [m for b in batches for _, m in b.marks if m["kind"] == "trainer_loop"]


def test_the_trainers_opening_block_marks_a_run_that_saves_through_the_trainer_and_the_banner_alone_does_not():
    """transformers' Trainer opens its loop with "***** Running training *****" ... "  Number of
    trainable parameters = N" (trainer.py 5.19.0 l.1604-1614), here as its default handler prints
    it, as its explicit format does, and behind a torchrun rank prefix: one ``trainer_loop`` mark.
    diffusers' scripts print the same banner and counts, without the trainable-parameter line, and
    save ``checkpoint-N`` with accelerate's ``save_state``: no mark; nor a count far from any banner."""
    block = ["  Num examples = 64", "  Num Epochs = 13", "  Instantaneous batch size per device = 2",
             "  Total train batch size (w. parallel, distributed & accumulation) = 2",
             "  Gradient Accumulation steps = 1", "  Total optimization steps = 400"]
    for prefix in ("", "[transformers] ", "[INFO|trainer.py:1604] 2026-11-30 00:06:01,020 >> ", "[rank0]: "):
        lines = [prefix + "***** Running training *****", *(prefix + b for b in block),
                 prefix + "  Number of trainable parameters = 4,592", "{'loss': 3.89, 'grad_norm': 1.1, 'epoch': 0.03}"]
        assert len(_trainer_marks(lines)) == 1, prefix
    diffusers = ["01/02/2026 10:00:00 - INFO - __main__ - ***** Running training *****",
                 *("01/02/2026 10:00:00 - INFO - __main__ - " + b for b in block)]
    assert _trainer_marks(diffusers) == []
    far = ["***** Running training *****", *block, *[f"line {i}" for i in range(20)],
           "  Number of trainable parameters = 4,592"]
    assert _trainer_marks(far) == []
    assert _trainer_marks(["print: Number of trainable parameters = 12"]) == []
