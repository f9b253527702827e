"""Past logs by path: files, ms-swift output dirs, checkpoint dirs, run dirs."""
from __future__ import annotations

import json

import pytest

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.ingest import LogParser, marks_from_path, records_from_path, resolve_log
from tests.ingest import ingest_samples as S
from tests.ingest.ingest_samples import parsed


def logging_jsonl(path, steps: int, last_ckpt: str) -> None:
    """ms-swift logging.jsonl: per-step records (numbers as JSON numbers, step/time as
    strings), the train summary, then the final record with the whole log_history."""
    rows = []
    for s in range(1, steps + 1):
        rows.append({"loss": 2.0 - s / 100, "grad_norm": 0.8, "learning_rate": 2e-5, "token_acc": 0.7,
                     "epoch": s / steps, "global_step/max_steps": f"{s}/{steps}", "elapsed_time": "5s",
                     "remaining_time": "1m 0s", "train_speed(s/it)": 0.18})
    rows.append({"train_runtime": 12.3, "train_samples_per_second": 4.1, "train_loss": 1.9, "epoch": 1.0,
                 "global_step/max_steps": f"{steps}/{steps}"})
    rows.append({"last_model_checkpoint": last_ckpt, "best_model_checkpoint": None, "best_metric": None,
                 "global_step": steps, "log_history": rows[:2], "memory": None})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def trainer_state(path, steps: int) -> None:
    hist = []
    for s in range(10, steps + 1, 10):
        hist.append({"epoch": s / steps, "grad_norm": 0.8765432, "learning_rate": 1.98e-05, "loss": 1.2345678,
                     "step": s})
    hist.append({"epoch": 0.5, "eval_loss": 1.1, "eval_runtime": 2.0, "eval_samples_per_second": 5.0,
                 "eval_steps_per_second": 1.0, "step": steps // 2})
    hist.append({"epoch": 1.0, "step": steps, "total_flos": 1.0, "train_loss": 1.3, "train_runtime": 60.0,
                 "train_samples_per_second": 2.0, "train_steps_per_second": 0.5})
    state = {"best_global_step": None, "best_metric": None, "epoch": 1.0, "global_step": steps,
             "log_history": hist, "logging_steps": 10, "max_steps": steps, "train_batch_size": 1}
    path.write_text(json.dumps(state, indent=2, sort_keys=True))


def test_a_trainers_output_dir_reads_its_newest_saves_trainer_state(tmp_path):
    """`moeconsole attach out` on the output dir of one's own transformers Trainer script
    (checkpoint-N/ saves, no log file, no save_state()) said "no log found": the Trainer writes
    trainer_state.json into every save, its log_history the run up to that step. The newest save's
    is read (checkpoint-100 after checkpoint-20: by step, not by name); a -merged export is none."""
    out = tmp_path / "out"
    for step in (10, 20, 100):
        (out / f"checkpoint-{step}").mkdir(parents=True)
        trainer_state(out / f"checkpoint-{step}" / "trainer_state.json", step)
    (out / "checkpoint-200-merged").mkdir()
    (out / "checkpoint-200-merged" / "trainer_state.json").write_text("{}")
    path, kind = resolve_log(out)
    assert (path, kind) == (out / "checkpoint-100" / "trainer_state.json", "trainer_state")
    recs, _ = records_from_path(out)
    assert [r["step"] for r in recs] == list(range(10, 101, 10))


def test_swift_output_dir_uses_the_newest_run(tmp_path):
    for n, steps in ((2, 5), (10, 7), (9, 3)):
        run = tmp_path / f"v{n}-20260102-03040{n % 10}"
        run.mkdir()
        logging_jsonl(run / "logging.jsonl", steps, f"{run}/checkpoint-{steps}")
    (tmp_path / "v11-empty").mkdir()
    path, kind = resolve_log(tmp_path)
    assert path.parent.name.startswith("v10-") and kind == "log"
    recs, stats = records_from_path(tmp_path)
    assert [r["step"] for r in recs] == list(range(1, 8))
    assert recs[0]["src"] == "jsonl" and recs[0]["step_time_s"] == 0.18 and recs[-1]["max_steps"] == 7
    marks = marks_from_path(tmp_path)
    assert [m["kind"] for m in marks] == ["train_summary", "last_model_checkpoint"]
    assert marks[1]["path"].endswith("checkpoint-7")
    assert stats.metric_lines == 7 and stats.mark_lines == 2


def test_checkpoint_dir_reads_trainer_state(tmp_path):
    ckpt = tmp_path / "checkpoint-100"
    ckpt.mkdir()
    trainer_state(ckpt / "trainer_state.json", 100)
    recs, stats = records_from_path(ckpt)
    assert [r["step"] for r in recs] == list(range(10, 101, 10))
    assert recs[0]["src"] == "hf_state" and recs[0]["max_steps"] == 100
    assert recs[0]["loss"] == 1.2345678 and recs[0]["lr"] == 1.98e-05
    assert stats.mark_lines == 2 and stats.formats == {"hf_state": 10}
    kinds = [(m["kind"], m["step"]) for m in marks_from_path(ckpt / "trainer_state.json")]
    assert kinds == [("eval", 50), ("train_summary", 100)]


def test_run_dir_reads_train_log(tmp_path):
    (tmp_path / "state.json").write_text("{}")
    (tmp_path / "train.log").write_text("=== moeconsole: attempt 1 start\n" + S.kv_line(5, 1.0, 0.5, 2.0, 9) + "\n")
    recs, _ = records_from_path(tmp_path)
    assert [r["step"] for r in recs] == [5]
    assert marks_from_path(tmp_path)[0]["kind"] == "attempt_marker"


def test_a_log_file_gives_what_the_parser_gives(tmp_path):
    log = tmp_path / "any.log"
    lines = [S.tqdm_write(S.swift_hf_dict(s, 50, 2.0 - s / 50, 0.5), s, 50) for s in range(1, 51)]
    lines.insert(10, S.megatron_line(3, 10, 1.0, 0.5))
    log.write_text("\n".join(lines) + "\n")
    p = LogParser()
    want, _ = parsed(p, log.read_bytes())
    got, stats = records_from_path(log)
    assert len(got) == len(want) == 51 and all(S.same_record(a, b) for a, b in zip(got, want))
    assert stats == p.stats


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.log", "no such file"),
    (lambda d: d, "no log found"),
])
def test_unreadable_input_is_an_input_error(tmp_path, make, message):
    with pytest.raises(InputError, match=message):
        records_from_path(make(tmp_path))


def test_broken_trainer_state_is_an_input_error(tmp_path):
    bad = tmp_path / "trainer_state.json"
    bad.write_text('{"log_history": [')
    with pytest.raises(InputError, match="not valid JSON"):
        records_from_path(bad)
    bad.write_text('{"global_step": 3}')
    with pytest.raises(InputError, match="log_history"):
        records_from_path(bad)
