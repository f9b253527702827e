"""run -> save -> verify -> crash -> resume with the right flags, under the real runner, against
the ms-swift `megatron sft` double (tests/fakes/megatron): its parser, derived iterations, LR
schedule, log lines and save layout are ms-swift 4.6.0's (and 4.2.0's with FAKE_SWIFT_VERSION),
including merged models that take seconds to write, so the watcher's timing is tested too."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runner.conftest import Harness

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fakes" / "megatron"
T46 = ["--adapters", "{checkpoint}", "--finetune", "false"]
T42 = ["--model", "{checkpoint}-merged", "--finetune", "false"]
FULL = ["--mcore_adapter", "{checkpoint}", "--finetune", "false"]


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def dataset(tmp_path: Path, n: int = 48) -> Path:
    path = tmp_path / "sft.jsonl"
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": f"q{i}"}]}) + "\n" for i in range(n)))
    return path


def fake_recipe(tmp_path: Path, version: str, merge: str, template: list[str], *, no_save_optim: str = "true",
                merged_s: float = 0.0) -> dict:
    """48 samples x 2 epochs at global batch 8: ms-swift derives 12 iterations (no --train_iters)."""
    return dict(
        command=["{python}", str(FAKE), "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--dataset", str(dataset(tmp_path)),
                 "--tuner_type", "lora", "--lora_rank", "8", "--num_train_epochs", "2", "--global_batch_size", "8",
                 "--save_steps", "4", "--logging_steps", "1", "--lr", "1e-4", "--lr_warmup_iters", "2",
                 "--output_dir", "{run_dir}/output", "--save_safetensors", "true", "--no_save_optim", no_save_optim,
                 "--merge_lora", merge],
        env={"OMP_NUM_THREADS": "1", "FAKE_CRASH_AT": "6", "FAKE_STEP_S": "0.05", "FAKE_SWIFT_VERSION": version,
             "FAKE_MEMORY_GIB": "132.91", "FAKE_MERGED_SAVE_S": str(merged_s), "FAKE_MERGED_SHARDS": "3"},
        resume={"arg": None, "args": template}, swift={"version": version},
        checkpoints={"dir": "{run_dir}/output", "settle_s": 1.0})


@pytest.mark.parametrize("version,merge,template,resumed_flag,merged_s", [
    ("4.6.0", "false", T46, "--adapters", 0.0),
    # 4.2 merges: checkpoint-N/ is metadata only while checkpoint-N-merged/ is written for seconds,
    # with pauses longer than settle_s: neither may be judged before the merged model is complete.
    ("4.2.0", "true", T42, "--model", 4.5),
    # 4.6 merging writes the adapter too, then the slow merged model beside it.
    ("4.6.0", "true", T46, "--adapters", 4.5),
])
def test_crash_and_resume_from_the_verified_checkpoint(harness, tmp_path, version, merge, template, resumed_flag,
                                                       merged_s):
    run = harness.start(harness.recipe(**fake_recipe(tmp_path, version, merge, template, merged_s=merged_s)))
    st = run.wait_status("succeeded", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded", (st, (run.path / "runner.log").read_text()[-3000:])
    assert st["attempt"] == 2 and st["restarts"] == 1
    assert "fake megatron: injected crash after iteration 6" in json.dumps(run.crash(1))

    assert not [a for a in run.events("alert") if a.get("rule") == "checkpoint_bad"], run.events("alert")
    checks = run.events("checkpoint")
    assert checks and all(c["ok"] and c["verdict"] == "ok" for c in checks), checks
    assert sorted({c["step"] for c in checks}) == [4, 8, 12]
    if merge == "true":
        assert {Path(c["path"]).name for c in checks} >= {"checkpoint-4", "checkpoint-4-merged"}

    starts = run.events("attempt_start")
    resumed = starts[1]["resumed_from"]
    assert Path(resumed).name == "checkpoint-4" and "-merged" not in Path(resumed).name
    argv = starts[1]["argv"]
    for flag in ("--finetune", resumed_flag):
        assert argv.count(flag) == 1, argv
    want = resumed if resumed_flag == "--adapters" else resumed + "-merged"
    assert argv[argv.index(resumed_flag) + 1] == want
    assert argv[argv.index("--finetune") + 1] == "false"

    # The resumed attempt continued from iteration 5, as ms-swift does with --finetune false ...
    metrics = run.metrics()
    a1 = [m for m in metrics if m["attempt"] == 1]
    a2 = [m for m in metrics if m["attempt"] == 2]
    assert a2 and a2[0]["step"] == 5 and a2[-1]["step"] == 12, [m["step"] for m in a2]
    # ... with the 12 iterations ms-swift derived from 48 samples x 2 epochs // 8 (no --train_iters).
    assert all(m.get("max_steps") == 12 for m in metrics)
    snap = json.loads(harness.cli("--json", run.path.name, "--once", "--no-gpu", check=True).stdout)
    assert snap["run"]["max_steps"] == 12
    # ... but its LR schedule started over: iteration 5 repeats iteration 1's warmup learning rate.
    assert a2[0]["lr"] == a1[0]["lr"] == pytest.approx(5e-05)
    # ... and the runner says so, with the warmup it re-runs (lr_warmup_iters 2).
    (restarted,) = [a for a in run.events("alert") if a.get("rule") == "lr_schedule_restarted"]
    assert restarted["step"] == 5 and restarted["attempt"] == 2 and restarted["values"]["warmup_steps"] == 2
    assert "re-runs the 2-step warmup (steps 5-6" in restarted["message"]


def test_full_state_resume_continues_the_lr_schedule(harness, tmp_path):
    """4.6 with --no_save_optim false and --mcore_adapter: load_mcore_checkpoint restores the scheduler."""
    recipe = fake_recipe(tmp_path, "4.6.0", "false", FULL, no_save_optim="false")
    run = harness.start(harness.recipe(**recipe))
    st = run.wait_status("succeeded", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded" and st["attempt"] == 2, (st, (run.path / "runner.log").read_text()[-3000:])
    checks = run.events("checkpoint")
    assert checks and all(c["ok"] for c in checks), checks
    argv = run.events("attempt_start")[1]["argv"]
    assert argv[argv.index("--mcore_adapter") + 1].endswith("checkpoint-4")
    a2 = [m for m in run.metrics() if m["attempt"] == 2]
    assert a2[0]["step"] == 5
    assert not [a for a in run.events("alert") if a.get("rule") == "lr_schedule_restarted"]   # the schedule went on
    # The same run without a crash, for the learning rate an unbroken schedule has at iteration 5.
    out = tmp_path / "ref"
    cmd = [sys.executable, str(FAKE)] + [a.replace("{run_dir}/output", str(out)) for a in recipe["command"][2:]]
    ref = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                         env={**os.environ, **recipe["env"], "FAKE_CRASH_AT": "0", "FAKE_STEP_S": "0"})
    assert ref.returncode == 0, ref.stderr[-2000:]
    lines = [json.loads(ln) for ln in next(out.glob("v0-*/logging.jsonl")).read_text().splitlines()]
    lr5 = [ln["learning_rate"] for ln in lines if ln.get("iteration") == "5/12"][0]
    assert a2[0]["lr"] == pytest.approx(lr5) and lr5 != pytest.approx(5e-05)


def run_fake(tmp_path, *extra, version="4.6.0", env=None, timeout=120):
    full_env = {**os.environ, "FAKE_STEP_S": "0", "OMP_NUM_THREADS": "1", "FAKE_SWIFT_VERSION": version,
                "FAKE_MERGED_SAVE_S": "0", **(env or {})}
    base = [sys.executable, str(FAKE), "sft", "--model", "M", "--dataset", str(dataset(tmp_path, 32)),
            "--tuner_type", "lora", "--output_dir", str(tmp_path / "o")]
    return subprocess.run(base + list(extra), capture_output=True, text=True, timeout=timeout, env=full_env)


def test_without_finetune_false_ms_swift_restarts_at_iteration_zero(tmp_path):
    """What the template prevents: --adapters alone loads the weights but not the iteration."""
    args = ["--train_iters", "4", "--save_steps", "2", "--logging_steps", "1", "--merge_lora", "false",
            "--no_save_optim", "true"]
    first = run_fake(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    ck = sorted((tmp_path / "o").glob("v0-*/checkpoint-2"))[0]
    again = run_fake(tmp_path, *args, "--adapters", str(ck))
    assert "'iteration': '1/4'" in again.stdout           # started over
    resumed = run_fake(tmp_path, *args, "--adapters", str(ck), "--finetune", "false")
    assert "'iteration': '1/4'" not in resumed.stdout and "'iteration': '3/4'" in resumed.stdout
    assert f"[INFO:swift] checkpoint_dir: {ck}" in resumed.stderr


def test_the_fake_parses_like_ms_swift(tmp_path):
    env = {**os.environ, "FAKE_STEP_S": "0"}
    amb = subprocess.run([sys.executable, str(FAKE), "sft", "--save", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, env=env)
    assert amb.returncode == 2 and "ambiguous option: --save could match" in amb.stderr
    unk = subprocess.run([sys.executable, str(FAKE), "sft", "--train_type", "lora"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert unk.returncode == 1 and "ValueError: remaining_argv: ['--train_type', 'lora']" in unk.stderr
    # An Optional[bool] without default takes no bare flag (HfArgumentParser): argparse exits 2.
    bare = run_fake(tmp_path, "--train_iters", "2", "--merge_lora")
    assert bare.returncode == 2 and "argument --merge_lora/--merge-lora: expected one argument" in bare.stderr
    # MegatronArguments.__post_init__ refuses save_total_limit < 2.
    limit = run_fake(tmp_path, "--train_iters", "2", "--save_total_limit", "1")
    assert limit.returncode == 1 and "save_total_limit must be greater than or equal to 2" in limit.stderr
    # Neither --train_iters nor --num_train_epochs: the scheduler cannot be built.
    none = run_fake(tmp_path)
    assert none.returncode == 1 and "NoneType" in none.stderr


def test_num_train_epochs_replaces_train_iters(tmp_path):
    """MegatronArguments.init_iters: 32 samples x 3 epochs // 8 = 12, whatever --train_iters says;
    with 2 ranks the dataset is cut to whole micro-batch x DP steps, packing lowers the rows."""
    out = run_fake(tmp_path, "--train_iters", "4473", "--num_train_epochs", "3", "--global_batch_size", "8",
                   "--save_steps", "100", "--merge_lora", "false", "--logging_steps", "1")
    assert out.returncode == 0 and "'iteration': '12/12'" in out.stdout, out.stderr[-1000:]
    packed = run_fake(tmp_path, "--num_train_epochs", "3", "--global_batch_size", "8", "--save_steps", "100",
                      "--merge_lora", "false", "--packing", "true", "--logging_steps", "1",
                      env={"FAKE_SAMPLES_PER_ROW": "4"})
    assert "'iteration': '3/3'" in packed.stdout, packed.stderr[-1000:]


def test_what_a_46_save_holds(tmp_path):
    out = run_fake(tmp_path, "--train_iters", "4", "--save_steps", "2", "--merge_lora", "true",
                   "--moe_aux_loss_coeff", "1e-3")
    assert out.returncode == 0, out.stderr[-2000:]
    (run,) = (tmp_path / "o").glob("v0-*")
    # 4.6 writes the adapter beside the merged model (mcore-bridge >= 1.5 has _support_hf_grouped_lora).
    ck = run / "checkpoint-4"
    assert {"adapter_model.safetensors", "adapter_config.json"} <= {p.name for p in ck.iterdir()}
    assert (run / "checkpoint-4-merged" / "config.json").is_file()
    assert os.readlink(run / "last-checkpoint") == "checkpoint-4"
    cfg = json.loads((ck / "adapter_config.json").read_text())
    assert cfg["peft_type"] == "LORA" and cfg["r"] == 8 and "q_proj" in cfg["target_modules"]
    from safetensors import safe_open
    with safe_open(str(ck / "adapter_model.safetensors"), "np") as f:
        keys = list(f.keys())
    assert all(k.startswith("base_model.model.model.layers.") for k in keys) and \
        any(".self_attn.q_proj.lora_A.weight" in k for k in keys)
    first = eval(out.stdout.splitlines()[1])       # the printed dict, as callbacks/print.py writes it
    assert list(first)[:4] == ["loss", "grad_norm", "learning_rate", "load_balancing_loss"]
    assert first["load_balancing_loss"] > 0
    # 4.2: no adapter when merging, no last-checkpoint link.
    old = run_fake(tmp_path, "--train_iters", "2", "--save_steps", "2", "--merge_lora", "true", version="4.2.0")
    assert old.returncode == 0, old.stderr[-2000:]
    (run42,) = [p for p in (tmp_path / "o").glob("v1-*")]
    assert not (run42 / "checkpoint-2" / "adapter_model.safetensors").exists()
    assert not os.path.lexists(run42 / "last-checkpoint")


def test_the_receipt_shows_the_merge_export_for_this_run(harness, tmp_path):
    """A 4.6 adapter-only run (--merge_lora false): the receipt names the `megatron export` that
    merges its newest verified adapter (MegatronExportArguments: --to_hf, --merge_lora; the run's
    NPROC_PER_NODE and parallel sizes), and where the merged model goes (<checkpoint>-hf)."""
    recipe = fake_recipe(tmp_path, "4.6.0", "false", T46)
    recipe["command"] += ["--expert_model_parallel_size", "1"]
    recipe["env"].update(FAKE_CRASH_AT="0", NPROC_PER_NODE="1")
    run = harness.start(harness.recipe(**recipe))
    st = run.wait_status("succeeded", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded", (st, (run.path / "runner.log").read_text()[-3000:])
    proc = harness.cli("runs", "receipt", run.path.name, "--json")
    assert proc.returncode == 0, proc.stderr
    ex = json.loads(proc.stdout)["export"]
    newest = max((c for c in run.events("checkpoint") if c["ok"]), key=lambda c: c["step"])["path"]
    assert Path(newest).name == "checkpoint-12"
    assert ex["command"][2:] == ["export", "--adapters", newest, "--to_hf", "true", "--merge_lora", "true",
                                 "--expert_model_parallel_size", "1"], ex["command"]
    assert Path(ex["command"][1]).name == "megatron"      # the recipe's own launcher, subcommand export
    assert ex["shell"].startswith("NPROC_PER_NODE=1 ") and ex["writes"] == newest + "-hf"
    md = harness.cli("runs", "receipt", run.path.name, "--md")
    assert "## Merged model" in md.stdout and ex["shell"] in md.stdout


def test_full_state_resume_takes_the_schedule_from_the_checkpoint_not_the_new_lr(tmp_path):
    """megatron-core's OptimizerParamScheduler.load_state_dict (0.16.1 l.335-384), built by ms-swift
    with use_checkpoint_opt_param_scheduler=True: a resume that changes --lr (and --min_lr, the
    warmup) still follows the saved schedule, as the real run would."""
    recipe = fake_recipe(tmp_path, "4.6.0", "false", FULL, no_save_optim="false")
    base = [a.replace("{run_dir}/output", str(tmp_path / "out")) for a in recipe["command"][2:]]
    env = {**os.environ, **recipe["env"], "FAKE_STEP_S": "0"}
    first = subprocess.run([sys.executable, str(FAKE), *base], capture_output=True, text=True, timeout=120, env=env)
    assert first.returncode == 1 and "injected crash after iteration 6" in first.stderr
    ck = next((tmp_path / "out").glob("v0-*/checkpoint-4"))
    changed = base + ["--mcore_adapter", str(ck), "--finetune", "false", "--lr", "5e-4", "--min_lr", "1e-5",
                      "--lr_warmup_iters", "0"]
    again = subprocess.run([sys.executable, str(FAKE), *changed], capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert " > using checkpoint value 0.0001 for learning rate" in again.stderr
    resumed = [json.loads(ln) for ln in next((tmp_path / "out").glob("v1-*/logging.jsonl")).read_text().splitlines()]
    out = tmp_path / "ref"
    ref = subprocess.run([sys.executable, str(FAKE), *[a.replace(str(tmp_path / "out"), str(out)) for a in base]],
                         capture_output=True, text=True, timeout=120, env={**env, "FAKE_CRASH_AT": "0"})
    assert ref.returncode == 0, ref.stderr[-2000:]
    unbroken = [json.loads(ln) for ln in next(out.glob("v0-*/logging.jsonl")).read_text().splitlines()]
    lr = {ln["iteration"]: ln["learning_rate"] for ln in unbroken if "iteration" in ln}
    got = {ln["iteration"]: ln["learning_rate"] for ln in resumed if "iteration" in ln}
    assert got["5/12"] == pytest.approx(lr["5/12"]) and got["12/12"] == pytest.approx(lr["12/12"])


def _rank_pids(fake: Path) -> list[int]:
    """The fake's rank processes (torchrun's workers running it as ms-swift's sft.py)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(fake).encode() in argv and b"_trainer" in argv and b"torch.distributed.run" not in argv:
            out.append(int(d.name))   # a rank, not torchrun's launcher (whose argv names the script too)
    return out


def test_the_fake_is_a_launcher_with_rank_processes_and_a_kill_ends_them_all(harness, tmp_path):
    """As ms-swift's `megatron sft` (swift/cli/main.py cli_main): a wrapper that prints `run sh:` with
    the real torchrun line (--nproc_per_node, --master_port) and runs it; torchrun starts a process
    per rank. `moeconsole kill` must end every one of them."""
    import socket
    from tests.waiting import until

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    recipe = fake_recipe(tmp_path, "4.6.0", "false", T46)
    # 12 steps of 3 s: the ranks outlive a busy machine's wait for the first steps (at 0.5 s a
    # step the run could end before a loaded runner had written step 2)
    recipe["env"].update(NPROC_PER_NODE="2", MASTER_PORT=str(port), FAKE_CRASH_AT="0", FAKE_STEP_S="3")
    run = harness.start(harness.recipe(**recipe))
    ranks: list[int] = []
    try:
        ranks = until(lambda: (lambda p: p if len(p) == 2 else None)(_rank_pids(FAKE)), timeout=120,
                      what="two rank processes")
        until(lambda: any(m.get("step", 0) >= 2 for m in run.metrics()), timeout=180, what="two steps")
        assert all(_alive(p) for p in ranks), "both ranks still train"
        log = (run.path / "train.log").read_text()
        assert f"-m torch.distributed.run --nproc_per_node 2 --master_port {port} " in log
        assert "/swift/cli/_megatron/sft.py --model Qwen/Qwen3.5-397B-A17B" in log
        harness.cli("kill", run.id, check=True)
        run.wait_status("killed", "failed", "succeeded", timeout=120)
        until(lambda: not [p for p in ranks if _alive(p)], timeout=60, what="every rank process ended")
    finally:
        for p in ranks:
            if _alive(p):
                os.kill(p, 9)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize("version", ["4.6.0", "4.2.0"])
def test_a_start_up_refusal_reads_as_ms_swifts_config_error(tmp_path, version):
    """MegatronArguments.__post_init__ refuses save_total_limit < 2 (4.6.0 megatron_args.py l.913-914):
    the real trainer's traceback runs through ms-swift's argument classes, so the crash classifier
    calls it a configuration error and the run is not restarted; the fake prints the same frames."""
    from moeconsole.runner.core.crash import classify

    limit = run_fake(tmp_path, "--train_iters", "2", "--save_total_limit", "1", version=version)
    assert limit.returncode == 1
    tail = limit.stderr.splitlines()
    assert tail[-1] == "ValueError: save_total_limit must be greater than or equal to 2.", tail[-3:]
    assert any("swift/megatron/arguments/megatron_args.py" in ln and "in __post_init__" in ln for ln in tail)
    v = classify(limit.returncode, tail, steps_seen=0, attempt=1)
    assert v.cls == "config_error" and not v.retryable, v
    assert v.summary == "configuration error (exit 1): ValueError: save_total_limit must be greater than or equal to 2."
