"""ms-swift across its versions, read from each version's source (no ms-swift needed): the output
layout of 2.x (and of 3.x/4.x with ``--output_dir`` unset) and 2.x's ``sft_args.json``.

- 2.6.1 swift/llm/utils/argument.py l.1158-1165: ``output_dir = join(output_dir, model_type)`` (Megatron:
  ``f'{model_type}-tp{tp}-pp{pp}'``), then ``add_version_to_work_dir`` (``v<N>-<YYYYMMDD-HHMMSS>``,
  swift/utils/utils.py l.107-116).
- 2.6.1 swift/llm/sft.py l.487: ``sft_args.json`` and ``training_args.json`` in the run dir;
  swift/trainers/mixin.py l.167-172 ``_save_sft_args``: ``sft_args.json`` in every checkpoint (no args.json).
- 2.6.1 swift/trainers/callback.py l.37-44 + mixin.py l.556-564: the logged dict (floats, ``acc``,
  ``memory(GiB)``, ``train_speed(iter/s)``, ``global_step/max_steps``, ``percentage``, times);
  logging.jsonl gets the same dict.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checkpoints.conftest import write_adapter

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def swift2_output(root: Path, *, model_type: str = "qwen2-7b-instruct", stamp: str = "20240101-000000",
                  steps: int = 20, lr: float = 1e-4, loss0: float = 2.0) -> Path:
    """A 2.6.1 ``swift sft --output_dir ROOT`` run: ROOT/<model_type>/v0-<time>/."""
    run = root / model_type / f"v0-{stamp}"
    run.mkdir(parents=True)
    with open(run / "logging.jsonl", "w") as f:
        for i in range(1, steps + 1):
            f.write(json.dumps({"loss": round(loss0 - i * 0.01, 8), "acc": 0.5, "grad_norm": 0.7,
                                "learning_rate": lr, "memory(GiB)": 15.87,
                                "train_speed(iter/s)": 0.25, "epoch": round(i / steps, 8),
                                "global_step/max_steps": f"{i}/{steps}", "percentage": f"{i / steps * 100:.2f}%",
                                "elapsed_time": f"{4 * i}s", "remaining_time": f"{4 * (steps - i)}s"}) + "\n")
    sft_args = {"model_type": model_type, "model_id_or_path": "qwen/Qwen2-7B-Instruct", "sft_type": "lora",
                "learning_rate": lr, "lora_rank": 8, "output_dir": str(run)}
    (run / "sft_args.json").write_text(json.dumps(sft_args))
    (run / "training_args.json").write_text(json.dumps({"learning_rate": lr}))
    ck = write_adapter(run / f"checkpoint-{steps}", extras=False)
    (ck / "sft_args.json").write_text(json.dumps(sft_args))
    (ck / "configuration.json").write_text("{}")
    return root


def test_parse_reads_a_2x_output_dir_through_its_model_type_dir(tmp_path):
    out = swift2_output(tmp_path / "output", stamp="20240102-000000", steps=20)
    swift2_output(tmp_path / "output", model_type="llama3-8b-instruct", stamp="20240101-000000", steps=7)
    done = _cli("parse", "--json", str(out))
    assert done.returncode == 0, done.stderr
    recs = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert [r["step"] for r in recs] == list(range(1, 21))      # the newest run, not the older model's
    assert recs[-1]["max_steps"] == 20 and recs[-1]["loss"] == 1.8 and recs[-1]["mem_gib"] == 15.87
    assert recs[-1]["step_time_s"] == 4.0 and recs[-1]["lr"] == 1e-4


def test_runs_diff_reads_2x_sft_args_json(tmp_path):
    a = swift2_output(tmp_path / "a", lr=1e-4)
    b = swift2_output(tmp_path / "b", lr=2e-4, loss0=2.5)
    run_a = a / "qwen2-7b-instruct" / "v0-20240101-000000"   # the run dirs themselves: only sft_args.json
    run_b = b / "qwen2-7b-instruct" / "v0-20240101-000000"
    done = _cli("runs", "diff", str(run_a), str(run_b), "--json", "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    assert d["a"]["steps"] == 20 and d["b"]["steps"] == 20
    diff = {x["key"]: (x["a"], x["b"]) for x in d["recipe_diff"]}
    assert diff.get("learning_rate") == (1e-4, 2e-4), d["recipe_diff"]


def test_verify_a_2x_checkpoint_does_not_ask_for_args_json(tmp_path):
    out = swift2_output(tmp_path / "output")
    ck = out / "qwen2-7b-instruct" / "v0-20240101-000000" / "checkpoint-20"
    done = _cli("verify", str(ck))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "args.json is missing" not in done.stdout
    # a checkpoint with neither file still gets the note (ms-swift writes one of them into every save)
    (ck / "sft_args.json").unlink()
    done = _cli("verify", str(ck))
    assert "args.json is missing" in done.stdout


def test_open_imports_a_2x_output_dir_with_its_checkpoints(tmp_path):
    from moeconsole.console.foreign import open_path
    out = swift2_output(tmp_path / "output", steps=20)
    run = open_path(out, tmp_path / "scratch")
    records = [json.loads(x) for x in run.metrics.read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, 21))
    events = [json.loads(x) for x in run.events.read_text().splitlines()]
    ck = [e for e in events if e.get("type") == "checkpoint"]
    assert len(ck) == 1 and ck[0]["step"] == 20 and ck[0]["verdict"] == "ok", ck


# --- start-up refusals per version: config_error, never restarted -------------------------------

SP = "/venv/lib/python3.9/site-packages"


def _tb(frames: list[tuple[str, int, str]], line: str) -> list[str]:
    out = ["Traceback (most recent call last):"]
    for path, no, func in frames:
        out += [f'  File "{SP}/{path}", line {no}, in {func}', "    ..."]
    return out + [line]


# 2.6.1: swift/cli/sft.py -> sft_main (swift/utils/run_utils.py x_main, l.32 ``llm_x(args)``) ->
# swift/llm/sft.py llm_sft (l.544 prepare_model_template_train, l.277 prepare_model) -> swift/llm/tuner.py
SWIFT2_SETUP = [("swift/cli/sft.py", 5, "<module>"), ("swift/utils/run_utils.py", 32, "x_main"),
                ("swift/llm/sft.py", 544, "llm_sft"), ("swift/llm/sft.py", 277, "prepare_model_template_train")]
# 2.6.1's arguments: x_main l.22 parse_args -> swift/utils/utils.py l.131 parse_args_into_dataclasses
SWIFT2_ARGS = [("swift/cli/sft.py", 5, "<module>"), ("swift/utils/run_utils.py", 22, "x_main"),
               ("swift/utils/utils.py", 131, "parse_args"),
               ("transformers/hf_argparser.py", 339, "parse_args_into_dataclasses"),
               ("swift/llm/utils/argument.py", 1100, "__post_init__"),
               ("swift/llm/utils/argument.py", 521, "set_model_type")]
# 3.6.4: swift/llm/train/sft.py l.279 sft_main -> SwiftSft.__init__ (l.29 _prepare_template) / run (l.105
# prepare_model) -> swift/llm/train/tuner.py prepare_model l.373 prepare_adapter
SWIFT3_RUN = [("swift/cli/sft.py", 10, "<module>"), ("swift/llm/train/sft.py", 279, "sft_main"),
              ("swift/llm/base.py", 49, "main"), ("swift/llm/train/sft.py", 105, "run")]


def test_ms_swift_2x_start_up_refusals_are_config_error():
    from moeconsole.runner.core.crash import classify
    # 2.6.1 swift/llm/tuner.py l.290 (prepare_model, before trainer_train calls trainer.train)
    tb = _tb(SWIFT2_SETUP + [("swift/llm/tuner.py", 290, "prepare_model")], "ValueError: args.sft_type: lora2")
    v = classify(1, tb, steps_seen=0, attempt=1)
    assert v.cls == "config_error" and v.recovery == "fail" and "args.sft_type: lora2" in v.summary, v
    # 2.6.1 swift/llm/sft.py l.70 (llm_sft_megatron's assert, before Megatron-LM's pretrain)
    tb = _tb([("swift/cli/sft.py", 5, "<module>"), ("swift/utils/run_utils.py", 32, "x_main"),
              ("swift/llm/sft.py", 541, "llm_sft"), ("swift/llm/sft.py", 70, "llm_sft_megatron")],
             "AssertionError: Please run `CUDA_VISIBLE_DEVICES=0 swift export --model_type qwen2-7b-instruct --tp 1 "
             "--pp 1 --megatron_output_dir /ckpt --to_megatron true` to convert the weights to Megatron format.")
    assert classify(1, tb, steps_seen=0, attempt=1).cls == "config_error"
    # 2.6.1 swift/llm/utils/argument.py l.521 (an argument check inside parse_args_into_dataclasses)
    tb = _tb(SWIFT2_ARGS, "ValueError: please setting `--model_type <model_type>`. The model_type you can choose: [...]")
    assert classify(1, tb, steps_seen=0, attempt=1).cls == "config_error"
    # 2.6.1 swift/utils/run_utils.py l.26
    assert classify(1, ["ValueError: remaining_argv: ['--train_type', 'lora']"], steps_seen=0, attempt=1).cls == "config_error"


def test_ms_swift_2x_same_exception_inside_training_is_not_a_refusal():
    from moeconsole.runner.core.crash import classify
    tb = _tb([("swift/cli/sft.py", 5, "<module>"), ("swift/utils/run_utils.py", 32, "x_main"),
              ("swift/llm/sft.py", 546, "llm_sft"), ("swift/llm/sft.py", 496, "trainer_train"),
              ("swift/trainers/mixin.py", 600, "train"), ("transformers/trainer.py", 2052, "train"),
              ("transformers/trainer.py", 2388, "_inner_training_loop")],
             "ValueError: Expected input batch_size (4) to match target (8).")
    assert classify(1, tb, steps_seen=0, attempt=1).cls == "unknown"


def test_ms_swift_3x_start_up_refusals_are_config_error():
    from moeconsole.runner.core.crash import classify
    # 3.6.4 swift/llm/train/tuner.py l.391 (prepare_adapter)
    tb = _tb(SWIFT3_RUN + [("swift/llm/train/tuner.py", 373, "prepare_model"),
                           ("swift/llm/train/tuner.py", 391, "prepare_adapter")], "ValueError: args.train_type: lora2")
    assert classify(1, tb, steps_seen=0, attempt=1).cls == "config_error"
    # 3.6.4 swift/llm/base.py l.36
    assert classify(1, ["ValueError: remaining_argv: ['--tuner_type', 'lora']"], steps_seen=0, attempt=1).cls \
        == "config_error"


# --- the per-step log line of each version (audit: these read right before this branch) ---------

@pytest.mark.parametrize("line, want", [
    # 2.6.1 swift/trainers/mixin.py l.556-564 (loss, acc, grad_norm, learning_rate, memory(GiB),
    # train_speed(iter/s)) + callback.py l.37-44 ProgressCallbackNew.on_log (global_step/max_steps, ...)
    ("{'loss': 2.1432, 'acc': 0.538, 'grad_norm': 1.234, 'learning_rate': 9.998e-05, 'memory(GiB)': 15.87, "
     "'train_speed(iter/s)': 0.25, 'epoch': 0.02, 'global_step/max_steps': '5/300', 'percentage': '1.67%', "
     "'elapsed_time': '20s', 'remaining_time': '19m 40s'}", (5, 300, 2.1432, 1.234, 9.998e-05, 15.87, 4.0)),
    # 2.6.1 callback.py l.86-96 PrinterCallbackNew (--disable_tqdm true): an int global_step, no max
    ("{'loss': 2.1432, 'acc': 0.538, 'grad_norm': 1.234, 'learning_rate': 9.998e-05, 'memory(GiB)': 15.87, "
     "'train_speed(iter/s)': 0.25, 'epoch': 0.01666667, 'global_step': 5}", (5, None, 2.1432, 1.234, 9.998e-05, 15.87, 4.0)),
    # 3.6.4 mixin.py l.440-473 + callback.py l.19-29 add_train_message (token_acc; iter/s)
    ("{'loss': 2.1432, 'token_acc': 0.538, 'grad_norm': 1.234, 'learning_rate': 9.998e-05, 'memory(GiB)': 15.87, "
     "'train_speed(iter/s)': 0.5, 'epoch': 0.02, 'global_step/max_steps': '5/300', 'percentage': '1.67%', "
     "'elapsed_time': '10s', 'remaining_time': '9m 50s'}", (5, 300, 2.1432, 1.234, 9.998e-05, 15.87, 2.0)),
    # 3.12.6 callback.py l.28-44 add_train_message (memory(GiB) and train_speed(s/it) last)
    ("{'loss': 2.1432, 'grad_norm': 1.234, 'learning_rate': 9.998e-05, 'token_acc': 0.538, 'epoch': 0.02, "
     "'global_step/max_steps': '5/300', 'percentage': '1.67%', 'elapsed_time': '17s', 'remaining_time': '16m 51s', "
     "'memory(GiB)': 15.87, 'train_speed(s/it)': 3.41}", (5, 300, 2.1432, 1.234, 9.998e-05, 15.87, 3.41)),
    # 3.12.6 swift/megatron/trainers/base.py l.932-967 (its patched Megatron-LM training_log line)
    (" [2025-10-01 12:00:00] iteration       10/     100 | consumed samples:          160 | elapsed time per "
     "iteration (ms): 1234.5 | memory(GiB): 35.2 | elapsed time: 12s | remaining time: 1m 48s | learning rate: "
     "9.999000E-05 | global batch size:    16 | lm loss: 2.345678E+00 | load_balancing_loss: 1.000000E+00 | "
     "loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |",
     (10, 100, 2.345678, 1.234, 9.999e-05, 35.2, 1.2345)),
    # 3.12.6 base.py l.985-1005: its logging.jsonl line (elapsed_time_per_iteration in seconds)
    ('{"lm loss": 2.345678, "grad_norm": 1.234, "learning_rate": 9.999e-05, "elapsed_time_per_iteration": 1.2345, '
     '"memory(GiB)": 35.2, "elapsed_time": "12s", "remaining_time": "1m 48s", "loss_scale": 1.0, '
     '"consumed_samples": 160, "global_step/max_steps": "10/100"}', (10, 100, 2.345678, 1.234, 9.999e-05, 35.2, 1.2345)),
    # 2.6.1 swift/llm/megatron/utils.py l.84-99: the Megatron logging.jsonl (no memory, no time)
    ('{"lm loss": 2.345678, "grad_norm": 1.234, "learning_rate": 9.999e-05, "consumed_samples": 160, '
     '"global_step/max_steps": "10/100"}', (10, 100, 2.345678, 1.234, 9.999e-05, None, None)),
])
def test_each_versions_step_line_gives_step_loss_grad_lr_memory_and_step_time(tmp_path, line, want):
    log = tmp_path / "train.log"
    log.write_text(line + "\n")
    done = _cli("parse", "--json", str(log))
    assert done.returncode == 0, done.stderr
    (rec,) = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    got = (rec["step"], rec["max_steps"], rec["loss"], rec["grad_norm"], rec["lr"], rec["mem_gib"], rec["step_time_s"])
    assert got == pytest.approx(want), got


# --- train_speed(iter/s) after a resume (2.6.1 mixin.py l.561-564, 3.6.4 l.468-469) ------------

def _v2_dict(step: int, max_steps: int, since_start: float) -> str:
    """A 2.6.1 dict at ``step``, ``since_start`` seconds after the trainer's __init__ (mixin.py l.115):
    ``train_speed(iter/s)`` = round(global_step / elapse_time, 6), global_step counting resumed steps."""
    return str({"loss": 1.5, "acc": 0.6, "grad_norm": 0.8, "learning_rate": 1e-4, "memory(GiB)": 20.1,
                "train_speed(iter/s)": round(step / since_start, 6), "epoch": round(step / max_steps, 2),
                "global_step/max_steps": f"{step}/{max_steps}", "percentage": f"{step / max_steps * 100:.2f}%",
                "elapsed_time": f"{int(since_start)}s", "remaining_time": "1m"})


def _resumed_log(marker: bool) -> str:
    """Attempt 1: steps 5..60 at 4 s/step; attempt 2 resumed from checkpoint-60: steps 65..200 at 4 s/step;
    each attempt's trainer starts 3 s before its first step."""
    lines = []
    if marker:
        lines.append("=== moeconsole: attempt 1 start 2026-01-01T00:00:00 argv=swift sft --model m --output_dir o")
    lines += [_v2_dict(s, 200, 3 + 4 * s) for s in range(5, 61, 5)]
    if marker:
        lines.append("=== moeconsole: attempt 2 start 2026-01-01T01:00:00 argv=swift sft --model m --output_dir o "
                     "--resume_from_checkpoint o/qwen2-7b-instruct/v0-20260101-000000/checkpoint-60")
    lines += [_v2_dict(s, 200, 3 + 4 * (s - 60)) for s in range(65, 201, 5)]
    return "\n".join(lines) + "\n"


def test_iter_per_s_step_time_stays_right_after_a_resume(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(_resumed_log(marker=True))
    done = _cli("parse", "--json", str(log))
    assert done.returncode == 0, done.stderr
    recs = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    times = {r["step"]: r["step_time_s"] for r in recs}
    assert sorted(times) == list(range(5, 201, 5))
    # the first dict of each attempt includes ms-swift's own 3 s of start-up; every later one is 4 s
    assert times[5] == pytest.approx(4.6, rel=1e-3) and times[65] == pytest.approx(4.6, rel=1e-3)
    assert all(times[s] == pytest.approx(4.0, rel=1e-3) for s in times if s not in (5, 65)), times
    summary = _cli("parse", str(log)).stdout
    assert "alerts       none" in summary, summary


def test_iter_per_s_after_a_resume_only_model_counts_from_step_1(tmp_path):
    """``--resume_only_model`` before 3.7 drops resume_from_checkpoint (3.6.4 swift/llm/train/tuner.py
    l.383-384; 2.6.1 trainers/mixin.py l.484-488): global_step counts from 0 again, so the attempt's
    first dict (step 5, after checkpoint-4) is 5 steps since the trainer started, not 1."""
    lines = ["=== moeconsole: attempt 1 start 2026-01-01T00:00:00 argv=swift sft --model m --output_dir o"]
    lines += [_v2_dict(s, 200, 3 + 4 * s) for s in range(5, 11, 5)]
    lines.append("=== moeconsole: attempt 2 start 2026-01-01T01:00:00 argv=swift sft --model m --output_dir o "
                 "--resume_only_model true --resume_from_checkpoint o/v0-20260101-000000/checkpoint-4")
    lines += [_v2_dict(s, 200, 3 + 4 * s) for s in range(5, 21, 5)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    done = _cli("parse", "--json", str(log))
    assert done.returncode == 0, done.stderr
    times = [r["step_time_s"] for r in map(json.loads, (x for x in done.stdout.splitlines() if x.startswith("{")))]
    # attempt 2's first dict includes the trainer's 3 s start-up over 5 steps, as attempt 1's does
    assert times == pytest.approx([4.6, 4.0, 4.6, 4.0, 4.0, 4.0], rel=1e-3), times


def test_iter_per_s_of_a_resumed_log_without_markers_is_right_from_its_second_dict(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("".join(_v2_dict(s, 200, 3 + 4 * (s - 60)) + "\n" for s in range(65, 201, 5)))
    done = _cli("parse", "--json", str(log))
    recs = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert all(r["step_time_s"] == pytest.approx(4.0, rel=1e-3) for r in recs[1:]), [r["step_time_s"] for r in recs]


def test_iter_per_s_dict_printed_twice_keeps_its_step_time(tmp_path):
    """Two processes (or two handlers) printing each dict: the copy of a step has that step's time
    (not one computed as if a new training had started at it)."""
    log = tmp_path / "train.log"
    log.write_text("".join((_v2_dict(s, 200, 3 + 4 * s) + "\n") * 2 for s in range(5, 61, 5)))
    done = _cli("parse", "--json", str(log))
    times = [(r["step"], r["step_time_s"]) for r in
             (json.loads(x) for x in done.stdout.splitlines() if x.startswith("{"))]
    assert {s for s, _ in times} == set(range(5, 61, 5))
    assert all(t == pytest.approx(4.6 if s == 5 else 4.0, rel=1e-3) for s, t in times), times


@pytest.mark.parametrize("args_file", ["sft_args.json", "args.json"])
def test_runs_diff_never_shows_the_hub_token_ms_swift_saved_with_the_arguments(tmp_path, args_file):
    """ms-swift saves every argument: 2.6.1 ``hub_token`` (swift/llm/utils/argument.py l.539) in
    sft_args.json, 3.x/4.x in args.json."""
    runs = []
    for name, token, lr in (("a", "ms-0123456789abcdefSECRETA", 1e-4), ("b", "hf_abcdefghijklmnopqrstuvwxSECRETB", 2e-4)):
        run = swift2_output(tmp_path / name, lr=lr) / "qwen2-7b-instruct" / "v0-20240101-000000"
        (run / "sft_args.json").unlink()
        (run / args_file).write_text(json.dumps({"hub_token": token, "learning_rate": lr,
                                                 "report_to": f"https://user:{token}@example.com/x"}))
        runs.append(str(run))
    for extra in ([], ["--json"]):
        done = _cli("runs", "diff", *runs, *extra, "--runs-dir", str(tmp_path / "runs"))
        assert done.returncode == 0, done.stderr
        assert "SECRET" not in done.stdout + done.stderr, done.stdout
        assert "learning_rate" in done.stdout
