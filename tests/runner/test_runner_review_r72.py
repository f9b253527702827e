"""Review R72: an output dir on a disk that is not mounted (the mount point left, empty). Real CLI,
real detached runner, real demo trainer, a real bind mount (root only: skipped with the reason
otherwise). Asserts on what the user sees: state.json's status and reason, attempt_start events,
`runs show`'s checkpoint lines, `--json`'s checkpoints."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.waiting import until


def _bind(src, dst) -> None:
    """``mount --bind src dst``, or skip the test with the reason (needs root and a mount namespace that allows it)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a bind mount needs root and mount(8)")
    done = subprocess.run(["mount", "--bind", str(src), str(dst)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mount --bind refused here: {done.stderr.strip()}")


def _umount(dst) -> None:
    subprocess.run(["umount", str(dst)], capture_output=True, text=True, check=False)


def test_an_unmounted_output_disk_refuses_a_start_from_scratch_and_reads_out_of_reach(harness, tmp_path):
    """The output dir is a mount point (a scratch disk, `--add_version false`-like: saves straight under
    it); checkpoint-4 verified, a segfault at step 6, and in the cooldown the disk is unmounted: the
    mount point is there, empty. Before: attempt 2 found no resume point and trained from step 0 onto
    the disk beneath, the run SUCCEEDED, and `runs show` listed the four saves on the unmounted disk as
    `ckpt DEL ... deleted since it was verified` (`--json`: `deleted: true`). Now attempt 2 does not
    start: one line says the directory holds none of the saves this run verified and names the last;
    `runs show` says the saves are out of reach, not deleted; with the disk mounted again `restart`
    resumes from checkpoint-4."""
    disk, out = tmp_path / "disk", tmp_path / "mnt"
    disk.mkdir()
    out.mkdir()
    _bind(disk, out)
    try:
        command = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", str(out), "--max_steps", "12",
                   "--save_steps", "4", "--step_delay", "0.0", "--fault", "segv@6"]
        run = harness.start(harness.recipe(command=command, checkpoints={"dir": str(out)},
                                           cooldown={"floor_s": 30.0, "ceiling_s": 40.0},
                                           restart={"backoff_initial_s": 30.0, "backoff_max_s": 30.0}))
        until(lambda: run.events("crash") and any(e["path"].endswith("checkpoint-4") and e["ok"]
                                                  for e in run.events("checkpoint")), 180,
              what="attempt 1's crash and checkpoint-4 verified")
        _umount(out)                                        # the disk unmounted in the cooldown
        assert (disk / "checkpoint-4").is_dir() and not any(out.iterdir())
        st = run.wait_status("failed", "succeeded", "paused", "unsaved", timeout=180)
        assert st["status"] == "failed", (st["status"], run.events("attempt_start"))
        reason = st.get("pause_reason") or ""
        assert f"{out} holds none of the saves this run verified there" in reason, reason
        assert "checkpoint-4" in reason and "out of reach" in reason, reason
        assert not any(out.iterdir()), "nothing trained onto the disk beneath the mount point"
        shown = harness.cli("runs", "show", run.id, check=True).stdout
        line = next(ln for ln in shown.splitlines() if "checkpoint-4" in ln and "ckpt" in ln)
        assert "ckpt OUT step 4" in line and "out of reach, not known to be deleted" in line, shown
        assert "deleted since" not in shown, shown
        snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
        four = next(c for c in snap["checkpoints"] if c["path"].endswith("checkpoint-4"))
        assert four["gone"] == "unreachable" and four["deleted"] is False, four
        _bind(disk, out)                                    # mounted again
        assert harness.cli("restart", run.id, "--now").returncode == 0
        st = run.wait_status("succeeded", "failed", "paused", "unsaved", timeout=240)
        assert st["status"] == "succeeded", st
        resumed = [e.get("resumed_from") for e in run.events("attempt_start") if not e.get("error")]
        assert resumed[-1] and resumed[-1].endswith("checkpoint-4"), resumed
    finally:
        _umount(out)


def _attempt_2(tmp_path, recipe_file: str, overrides: list[str]) -> tuple[list[str], str, str | None]:
    """The argv attempt 2 of the shipped recipe runs when it resumes from a checkpoint-100 (Megatron-SWIFT's
    save: the adapter, args.json, the tracker and iter_0000100/common.pt), as the launcher builds it."""
    from pathlib import Path

    from moeconsole.runner.recipes.recipe import load
    from moeconsole.runner.recipes.runargs import trainer_argv_of
    from moeconsole.runner.rundir import rundir
    ck = tmp_path / "out" / "v0-20261201-000000" / "checkpoint-100"
    (ck / "iter_0000100").mkdir(parents=True)
    for name in ("adapter_model.safetensors", "adapter_config.json", "args.json", "iter_0000100/common.pt"):
        (ck / name).write_bytes(b"{}")
    (ck / "latest_checkpointed_iteration.txt").write_text("100")
    rec = load(Path(__file__).resolve().parents[2] / "recipes" / recipe_file, overrides)
    run = rundir.RunDir(tmp_path / "runs" / "20261201-000000-r72-0001")
    run.path.mkdir(parents=True)
    return trainer_argv_of(run, rec, 2, str(ck)), str(ck), rec.swift.version


def test_the_flagship_megatron_recipes_resume_is_said_partial(tmp_path):
    """recipes/qwen3.5-397b-a17b-8xh200-swift4.6.yaml resumes with `--adapters {checkpoint} --finetune
    false` (its own comment: a partial resume); lint warns `swift_resume_restarts_schedule` on it. Before:
    `partial_resume` None, so the attempt's start read as a full resume. Now it says the optimizer and the
    LR schedule start afresh; with `--finetune` left at its default, that the iteration starts at 0; the
    full-state resume (`--mcore_adapter`) is a full one, except over this
    recipe's `--no_save_optim` saves (lint's `swift_resume_needs_mcore_state`)."""
    from moeconsole.runner.recipes.step_count import partial_resume
    from moeconsole.runner.recipes.swift.flags import run_saves_through_trainer
    name = "qwen3.5-397b-a17b-8xh200-swift4.6.yaml"
    argv, ck, version = _attempt_2(tmp_path / "a", name, [])
    assert argv[-4:-2] == ["--adapters", ck], argv[-6:]
    said = partial_resume(argv, ck, version, trainer=run_saves_through_trainer(argv, {}))
    assert said and "the optimizer and LR-scheduler state never load" in said, said
    argv, ck, version = _attempt_2(tmp_path / "b", name, ["resume.args=[--adapters, '{checkpoint}']"])
    said = partial_resume(argv, ck, version, trainer=run_saves_through_trainer(argv, {}))
    assert said and "the iteration starts at 0 again" in said, said
    argv, ck, version = _attempt_2(tmp_path / "c", name,
                                   ["resume.args=[--mcore_adapter, '{checkpoint}', --finetune, 'false']"])
    said = partial_resume(argv, ck, version, trainer=run_saves_through_trainer(argv, {}))
    assert "--no_save_optim" in argv and said and said.startswith("no optimizer state"), said   # lint's error too
    full = ["megatron", "sft", "--tuner_type", "lora", "--mcore_adapter", ck, "--finetune", "false"]
    assert partial_resume(full, ck, version) is None


def test_a_swift_resume_through_adapters_and_a_deepspeed_save_without_its_state_are_said(tmp_path):
    """`swift sft --adapters CKPT` without --resume_from_checkpoint loads the weights only (ms-swift
    sft_args.py l.199-206); a `--save_only_model` save under DeepSpeed has no global_step*/ and
    transformers' resume fails ("Can't find a valid checkpoint", integrations/deepspeed.py l.659-673)
    rather than starting Adam afresh; a save missing scheduler.pt alone says so."""
    from moeconsole.runner.recipes.step_count import partial_resume
    ck = tmp_path / "checkpoint-8"
    ck.mkdir()
    (ck / "trainer_state.json").write_text("{}")
    said = partial_resume(["swift", "sft", "--adapters", str(ck)], str(ck), "4.6.0")
    assert said and said.startswith("weights only (--adapters without --resume_from_checkpoint)"), said
    ds = ["swift", "sft", "--deepspeed", "zero2", "--resume_from_checkpoint", str(ck)]
    said = partial_resume(ds, str(ck), "4.6.0", trainer=True)
    assert said and "Can't find a valid checkpoint" in said and "afresh" not in said, said
    (ck / "optimizer.pt").write_bytes(b"x")
    said = partial_resume(["swift", "sft", "--resume_from_checkpoint", str(ck)], str(ck), "4.6.0", trainer=True)
    assert said and "no scheduler.pt" in said and "optimizer.pt" not in said, said
