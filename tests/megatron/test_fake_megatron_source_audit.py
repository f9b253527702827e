"""The `megatron sft` double against ms-swift 4.6.0's and megatron-core 0.16.1's own source (the
audit in docs/megatron.md, "Audit against the source"): the MoE keys of the per-step dict, the
evaluation a validation set brings, and how a NaN gradient ends the trainer, each read by the
runner's parser and crash classifier as a user would see them."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.runner.core.crash import classify
from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.history import read_events
from tests.megatron.test_fake_megatron_e2e import T46, fake_recipe, harness  # noqa: F401  (fixture)

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fakes" / "megatron"


def run_fake(tmp_path: Path, *extra: str, samples: int = 32, version: str = "4.6.0",
             faults: str = "", one_stream: bool = False) -> subprocess.CompletedProcess:
    """The double's run; ``one_stream``: stdout and stderr in one pipe, in the order printed (as train.log)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "d.jsonl"
    data.write_text('{"messages": []}\n' * samples)
    env = {**os.environ, "FAKE_STEP_S": "0", "OMP_NUM_THREADS": "1", "FAKE_SWIFT_VERSION": version,
           "FAKE_MERGED_SAVE_S": "0", "FAKE_FAULTS": faults}
    env.pop("MOECONSOLE_ATTEMPT", None)
    return subprocess.run([sys.executable, str(FAKE), "sft", "--model", "M", "--dataset", str(data), "--tuner_type",
                           "lora", "--output_dir", str(tmp_path / "o"), "--logging_steps", "1",
                           "--merge_lora", "false", "--save_safetensors", "true", "--no_save_optim", "true", *extra],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT if one_stream else subprocess.PIPE,
                          text=True, timeout=120, env=env)


def dicts(stdout: str) -> list[dict]:
    return [ast.literal_eval(ln) for ln in stdout.splitlines() if ln.startswith("{")]


def parsed(text: str) -> list[tuple[str, dict]]:
    return [(k, o) for k, o in read_events(LogParser(), [text.encode()]) if k in ("record", "mark")]


# ---- the MoE keys (trainers/base.py _log_callback, 4.6.0 l.142-171; 4.2.0 l.134-157) --------------------------
def test_the_default_router_logs_its_aux_loss_and_z_loss_only_when_its_coefficient_is_given(tmp_path):
    out = run_fake(tmp_path, "--train_iters", "2", "--save_steps", "2", "--moe_z_loss_coeff", "1e-3")
    assert out.returncode == 0, out.stderr[-2000:]
    first = dicts(out.stdout)[0]
    assert list(first)[:5] == ["loss", "grad_norm", "learning_rate", "load_balancing_loss", "z_loss"]
    assert first["load_balancing_loss"] == 0.0 and first["z_loss"] > 0     # --moe_aux_loss_coeff 0: nothing recorded
    recs = [o for k, o in parsed(out.stdout) if k == "record"]
    assert [r["step"] for r in recs] == [1, 2] and recs[0]["loss"] == first["loss"]
    assert recs[0]["extra"]["z_loss"] == first["z_loss"]


def test_each_load_balancing_type_is_its_own_key(tmp_path):
    out = run_fake(tmp_path, "--train_iters", "2", "--save_steps", "2", "--moe_router_load_balancing_type",
                   "seq_aux_loss", "global_aux_loss", "--moe_aux_loss_coeff", "1e-3", "0")
    assert out.returncode == 0, out.stderr[-2000:]
    first = dicts(out.stdout)[0]
    assert "load_balancing_loss" not in first and "z_loss" not in first
    assert first["seq_load_balancing_loss"] > 0 and first["global_load_balancing_loss"] == 0.0


def test_ms_swift_42_compares_the_type_with_one_string_so_a_list_logs_none(tmp_path):
    out = run_fake(tmp_path / "a", "--train_iters", "2", "--save_steps", "2", "--moe_router_load_balancing_type",
                   "aux_loss", "seq_aux_loss", version="4.2.0")
    assert out.returncode == 0, out.stderr[-2000:]
    assert not any("load_balancing_loss" in k for k in dicts(out.stdout)[0])
    one = run_fake(tmp_path / "b", "--train_iters", "2", "--save_steps", "2", version="4.2.0")
    assert dicts(one.stdout)[0]["load_balancing_loss"] == 0.0


# ---- evaluation (megatron_args.py init_iters l.1156-1174; trainers/base.py run_train_step l.751-762) -------------
def test_a_validation_split_evaluates_at_each_save_before_it_and_at_the_end(tmp_path):
    # 32 samples, 25% held out: 8 for validation (dataset_meta.py l.160-168), 24 train -> 6 iterations at batch 4;
    # eval_steps defaults to save_steps (3); eval_iters = 8 // 4 = 2
    out = run_fake(tmp_path, "--num_train_epochs", "1", "--global_batch_size", "4", "--save_steps", "3",
                   "--split_dataset_ratio", "0.25")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "[INFO:swift] Setting args.eval_iters: 2" in out.stderr
    got = dicts(out.stdout)
    evals = [d for d in got if "eval_loss" in d]
    assert [d["iteration"] for d in evals] == ["3/6", "6/6"]
    assert list(evals[0])[:2] == ["eval_loss", "eval_load_balancing_loss"]
    assert list(evals[0])[2:] == ["iteration", "elapsed_time", "remaining_time", "memory(GiB)", "train_speed(s/it)"]
    # after the step's own dict, before the save
    assert [d["iteration"] for d in got].index("3/6") + 1 == got.index(evals[0])
    log = run_fake(tmp_path / "log", "--num_train_epochs", "1", "--global_batch_size", "4", "--save_steps", "3",
                   "--split_dataset_ratio", "0.25", one_stream=True).stdout
    marks = [o for k, o in parsed(log) if k == "mark"]
    kinds = [(m["kind"], m.get("step")) for m in marks if m["kind"] in ("eval", "checkpoint_saved")]
    assert kinds[:2] == [("eval", 3), ("checkpoint_saved", 3)]
    ev = next(m for m in marks if m["kind"] == "eval")
    assert set(ev["values"]) == {"eval_loss", "eval_load_balancing_loss"}


def test_refusal_no_validation_set_no_evaluation(tmp_path):
    out = run_fake(tmp_path, "--num_train_epochs", "1", "--global_batch_size", "4", "--save_steps", "3")
    assert out.returncode == 0, out.stderr[-2000:]
    assert not [d for d in dicts(out.stdout) if "eval_loss" in d] and "Evaluate:" not in out.stderr
    assert "Setting args.eval_iters: 0" in out.stderr


# ---- a NaN gradient (megatron_lm_utils.py l.674; param_and_grad_buffer.py l.212-230; rerun_state_machine.py) -----
NAN_TEXT = ("iteration -1: Unexpected result tensor(nan, device='cuda:0') (message='found NaN in local grad norm "
            "for bucket #0 in backward pass before data-parallel communication collective')")


def test_a_nan_gradient_raises_megatron_cores_check_through_ms_swifts_frames_exit_1(tmp_path):
    out = run_fake(tmp_path, "--train_iters", "6", "--save_steps", "2", faults="nan@3")
    assert out.returncode == 1, out.stderr[-2000:]
    assert NAN_TEXT in out.stderr and "RuntimeError: Rank 0, node " in out.stderr
    assert 'swift/megatron/trainers/base.py", line 1003, in train_step' in out.stderr
    assert [d["iteration"] for d in dicts(out.stdout)] == ["1/6", "2/6"]      # iteration 3 never logged
    verdict = classify(1, (out.stdout + out.stderr).splitlines(), steps_seen=2, attempt=1)
    assert (verdict.cls, verdict.recovery, verdict.retryable) == ("divergence", "pause", False)
    assert verdict.summary == "Megatron found a non-finite local grad norm"


def test_under_the_runner_a_nan_gradient_pauses_the_run_with_its_checkpoints_kept(harness, tmp_path):  # noqa: F811
    recipe = fake_recipe(tmp_path, "4.6.0", "false", T46)
    recipe["env"].update({"FAKE_CRASH_AT": "0", "FAKE_FAULTS": "nan@6"})
    run = harness.start(harness.recipe(**recipe))
    st = run.wait_status("succeeded", "failed", "paused", timeout=240)
    assert st["status"] == "paused", (st, (run.path / "runner.log").read_text()[-3000:])
    crash = run.crash(1)
    assert crash["class"] == "divergence" and NAN_TEXT in json.dumps(crash)
    assert st["attempt"] == 1 and st.get("restarts", 0) == 0
    assert [c["step"] for c in run.events("checkpoint") if c["ok"]] == [4]


@pytest.fixture(autouse=True)
def _no_attempt(monkeypatch):
    monkeypatch.delenv("MOECONSOLE_ATTEMPT", raising=False)


# ---- --fp16: the first skipped update (optimizer.py l.597-598; trainers/base.py l.1015; parallel_utils.py l.14) -------
def test_fp16_dies_on_the_first_skipped_update_and_the_runner_does_not_restart_it(tmp_path):
    out = run_fake(tmp_path, "--train_iters", "6", "--save_steps", "2", "--fp16", "true")
    assert out.returncode == 1
    assert out.stderr.rstrip().endswith("TypeError: must be real number, not NoneType")
    assert 'swift/megatron/utils/parallel_utils.py", line 14, in reduce_max_stat_across_model_parallel_group' \
        in out.stderr
    assert not dicts(out.stdout)
    for attempt in (1, 2):          # a resumed attempt starts from the same loss scale
        verdict = classify(1, (out.stdout + out.stderr).splitlines(), steps_seen=0, attempt=attempt)
        assert (verdict.cls, verdict.recovery, verdict.retryable) == ("config_error", "fail", False)
        assert "cannot skip an update" in verdict.summary and "--bf16 true" in verdict.hint


# ---- --async_save (megatron_lm_utils.py save_mcore_checkpoint l.352-398, maybe_finalize_async_save l.423-439) -------
def test_an_async_save_writes_the_tracker_first_and_says_saved_only_when_finalized(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text('{"messages": []}\n' * 16)
    env = {**os.environ, "FAKE_STEP_S": "0.05", "OMP_NUM_THREADS": "1", "FAKE_ASYNC_SAVE_S": "3"}
    env.pop("FAKE_FAULTS", None)
    proc = subprocess.Popen([sys.executable, str(FAKE), "sft", "--model", "M", "--dataset", str(data), "--tuner_type",
                             "lora", "--output_dir", str(tmp_path / "o"), "--train_iters", "200", "--save_steps", "2",
                             "--logging_steps", "1", "--merge_lora", "false", "--save_safetensors", "true",
                             "--no_save_optim", "false", "--async_save", "true"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    try:
        for line in proc.stdout:            # the order the trainer prints in
            lines.append(line)
            if "'iteration': '3/200'" in line:
                break
        ck = next((tmp_path / "o").glob("v0-*/checkpoint-2"))
        # during the write: the tracker names the save, its shards are not closed, the link still waits
        assert (ck / "latest_checkpointed_iteration.txt").read_text() == "2"
        assert (ck / "iter_0000002" / "common.pt").is_file()
        assert not (ck / "iter_0000002" / "metadata.json").exists()
        assert not (ck.parent / "last-checkpoint").exists()
        for line in proc.stdout:
            lines.append(line)
            if "Successfully saved Megatron model weights" in line:
                break
        assert (ck / "iter_0000002" / "metadata.json").is_file() and (ck / "iter_0000002" / ".metadata").is_file()
        assert "Successfully saved `safetensors` model weights" in "".join(lines)   # the adapter, written at once
    finally:
        proc.kill()
        proc.wait()
    said = next(i for i, ln in enumerate(lines) if "Successfully saved Megatron model weights" in ln)
    steps_before = [ln for ln in lines[:said] if ln.startswith("{'loss'")]
    assert len(steps_before) > 3          # finalized at the start of a later step, not at the save


def test_under_the_runner_async_saves_verify_ok_and_none_is_judged_while_written(harness, tmp_path):  # noqa: F811
    recipe = fake_recipe(tmp_path, "4.6.0", "false", T46, no_save_optim="false")
    recipe["command"] += ["--async_save", "true"]
    recipe["env"].update({"FAKE_CRASH_AT": "0", "FAKE_ASYNC_SAVE_S": "2.5"})
    run = harness.start(harness.recipe(**recipe))
    st = run.wait_status("succeeded", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded", (st, (run.path / "runner.log").read_text()[-3000:])
    checks = run.events("checkpoint")
    assert not [a for a in run.events("alert") if a.get("rule") == "checkpoint_bad"], run.events("alert")
    assert checks and all(c["ok"] and c["verdict"] == "ok" for c in checks), checks
    assert sorted({c["step"] for c in checks}) == [4, 8, 12]


def test_an_async_save_the_trainer_never_finalized_is_never_ok_nor_resumed_from(harness, tmp_path):  # noqa: F811
    """Crash after two --async_save saves whose writer had not made a shard yet: before, each was judged ok
    at once (its iter_N/ then held common.pt alone, as a metadata-only save does) and offered as the
    full-state resume point, whose load needs megatron-core's metadata.json."""
    from tests.megatron.test_fake_megatron_e2e import FULL
    recipe = fake_recipe(tmp_path, "4.6.0", "false", FULL, no_save_optim="false")
    recipe["command"] += ["--async_save", "true", "--save_steps", "2"]
    recipe["env"].update({"FAKE_CRASH_AT": "5", "FAKE_ASYNC_SAVE_S": "3"})
    run = harness.start(harness.recipe(**recipe))
    run.wait_status("succeeded", "failed", "paused", timeout=240)
    first = [c for c in run.events("checkpoint") if c.get("attempt") == 1]
    assert first and not [c for c in first if c["ok"]], first
    assert {c["step"] for c in first} == {2, 4}
    assert run.events("attempt_start")[1].get("resumed_from") is None
