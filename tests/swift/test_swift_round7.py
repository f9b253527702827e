"""Round 7 with the real ms-swift 4.6: a resume that restores less than the whole training state
(`--resume_only_model true`, a `--save_only_model true` save) is said as such where the attempt's
start is shown (the events pane's sentence, `step_count.partial_resume`)."""
from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

from moeconsole.console.timeline import sentence
from tests.swift.swift_helpers import Run, cli, require_swift, start


def _terminate_training(state: dict) -> None:
    """SIGTERM to the training's process group (the `swift` wrapper and its trainer), as a preemption sends it."""
    leader = next(p for p in state["pids"] if p.get("role") == "leader")
    os.killpg(os.getpgid(leader["pid"]), signal.SIGTERM)


def _resumed_attempt_line(run: Run, *overrides: str) -> tuple[str, str, dict]:
    """Kill the training once a save is verified, let the runner restart it from that save, and return the
    events pane's lines for attempts 1 and 2 and attempt 2's start event."""
    state = run.wait(lambda s: bool(run.ok_checkpoints()) and s.get("pids"), "a checkpoint verified")
    _terminate_training(state)
    run.wait(lambda s: s.get("attempt") == 2 and bool(run.metrics(2)), "attempt 2's first step")
    first, second = [e for e in run.events("attempt_start") if e["attempt"] in (1, 2)]
    return sentence(first)[0], sentence(second)[0], second


def test_a_resume_only_model_restart_says_it_restores_the_weights_only(swift_runs, tiny):
    """`--resume_only_model true --ignore_data_skip true`: ms-swift loads the weights and neither the
    optimizer, the scheduler nor the RNG state (swift/trainers/mixin.py l.280-287), and the Trainer counts
    from step 1 again (l.149-152). Before, the restarted attempt read "attempt 2 started resuming from
    checkpoint-4" as a full resume would, its steps 1, 2, ... beside the resume point's step 4."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4", "args.resume_only_model=true",
                "args.ignore_data_skip=true")
    try:
        first, second, ev = _resumed_attempt_line(run)
        assert "Not a full resume" not in first, first
        assert f"resuming from {os.path.basename(ev['resumed_from'])}" in second, second
        assert "Not a full resume: weights only (--resume_only_model true)" in second, second
        assert "the step count starts at 1 again" in second, second
        assert run.metrics(2)[0]["step"] == 1     # what ms-swift did: the words match it
    finally:
        cli(swift_runs, "kill", run.id)


def test_a_resume_from_a_save_only_model_save_says_the_optimizer_starts_afresh(swift_runs, tiny):
    """`--save_only_model true`: the save holds no optimizer.pt or scheduler.pt, so transformers' Trainer
    loads neither on resume and says nothing (trainer.py l.3864-3885); the step count goes on. Before, the
    restart read as a full resume; now its start says the optimizer and LR schedule start afresh."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4", "args.save_only_model=true")
    try:
        first, second, ev = _resumed_attempt_line(run)
        assert not (os.path.exists(os.path.join(ev["resumed_from"], "optimizer.pt")))
        assert "Not a full resume" not in first, first
        assert "Not a full resume: the save holds no optimizer.pt or scheduler.pt" in second, second
        saved_at = int(ev["resumed_from"].rsplit("checkpoint-", 1)[1])
        assert run.metrics(2)[0]["step"] == saved_at + 1    # the count went on
    finally:
        cli(swift_runs, "kill", run.id)


def _hold_until_verified(run: Run, step: int) -> None:
    """Stop the training (SIGSTOP to its process group) once its save at ``step`` is written, until the runner
    recorded its verdict, then let it go on. A busy machine's runner can settle and verify a save later than
    the trainer rotates it away (4 steps of a tiny model on CPU, a few seconds); a real save lives for a save
    interval. The test is about what is shown after the rotation, so the trainer waits for the runner here."""
    def written() -> Path | None:
        return next(run.path.glob(f"output/*/checkpoint-{step}/trainer_state.json"), None)

    state = run.wait(lambda s: s.get("pids") and written() is not None, f"checkpoint-{step} written")
    leader = next(p for p in state["pids"] if p.get("role") == "leader")
    group = os.getpgid(leader["pid"])
    os.killpg(group, signal.SIGSTOP)
    try:
        run.wait(lambda s: any(c["step"] == step for c in run.ok_checkpoints()), f"checkpoint-{step} verified")
    finally:
        os.killpg(group, signal.SIGCONT)


def test_saves_the_trainer_rotated_away_are_shown_deleted_not_ok(swift_runs, tiny):
    """`--save_total_limit 1`: transformers deletes each save after the next one (trainer_utils.py
    ``rotate_checkpoints`` l.342-386) once the runner verified it. Before, `runs show` listed every one as
    `ckpt OK` and `--json`'s checkpoints gave no sign they are gone; now the rotated ones read `ckpt DEL`
    ("deleted since it was verified") and carry `deleted: true`, the newest (kept) one `ckpt OK`."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=12", "args.save_steps=4", "args.save_total_limit=1")
    try:
        for step in (4, 8):
            _hold_until_verified(run, step)
        run.wait_while_moving(lambda s: s.get("status") == "succeeded", "the run succeeded")
        shown = cli(swift_runs, "runs", "show", run.id)
        assert shown.returncode == 0, shown.stderr
        lines = {int(m.group(1)): line for line in shown.stdout.splitlines()
                 if (m := re.search(r"ckpt \w+ +step (\d+) checkpoint-", line))}
        assert sorted(lines) == [4, 8, 12], shown.stdout
        for step in (4, 8):
            assert not os.path.exists(next(e["path"] for e in run.ok_checkpoints() if e["step"] == step))
            assert f"ckpt DEL step {step} checkpoint-{step} ok" in lines[step], lines[step]
            assert "deleted since it was verified" in lines[step], lines[step]
        assert "ckpt OK  step 12 checkpoint-12 ok" in lines[12], lines[12]
        snap = cli(swift_runs, "--json", run.id, "--once")
        kept = {c["step"]: c.get("deleted", False) for c in json.loads(snap.stdout)["checkpoints"]}
        assert kept == {12: False, 8: True, 4: True}, kept
    finally:
        cli(swift_runs, "kill", run.id)


def test_a_save_left_with_only_the_sidecar_is_deleted_and_a_save_out_of_sight_is_not(tmp_path):
    """The rotation's ``rmtree(..., ignore_errors=True)`` racing the runner's sidecar leaves a directory
    holding that sidecar alone: gone. A save whose parent is not visible here (a node's own disk) is not
    known to be gone, nor is a whole one."""
    from moeconsole.console.format import checkpoint_line
    from moeconsole.runner.checkpoints.sidecar import write_sidecar
    from moeconsole.runner.rundir.snapshot import with_gone
    out = tmp_path / "v0-20261201-000000"
    whole, remnant = out / "checkpoint-8", out / "checkpoint-4"
    for d in (whole, remnant):
        d.mkdir(parents=True)
        (d / "adapter_model.safetensors").write_bytes(b"x")
        write_sidecar(d, run_id="r", recipe_hash="h", step=int(d.name.split("-")[1]), verdict="ok", suspect=False)
    (remnant / "adapter_model.safetensors").unlink()
    ck = {"path": str(remnant), "step": 4, "verdict": "ok", "ok": True, "tensors": 24}
    far = str(tmp_path / "elsewhere" / "v0" / "checkpoint-4")
    shown = with_gone(({**ck, "path": str(out / "checkpoint-12"), "step": 12}, {**ck, "path": str(whole), "step": 8},
                       ck, {**ck, "path": far, "step": 2}))
    gone = {c["path"]: c.get("gone") for c in shown}
    # the remnant beside a newer save: deleted; a save newer than every one on disk, or out of sight: not known to be
    assert gone == {str(remnant): "deleted", str(whole): None, str(out / "checkpoint-12"): "unreachable",
                    far: "unreachable"}, gone
    assert checkpoint_line(shown[2])[0].startswith("ckpt DEL step 4 checkpoint-4 ok 24 tensors; deleted since")
    assert checkpoint_line(shown[1])[0] == "ckpt OK  step 8 checkpoint-8 ok 24 tensors"
    assert checkpoint_line(shown[3])[0].startswith("ckpt OUT step 2 checkpoint-4 ok 24 tensors; not found where")


def test_partial_resume_is_said_only_where_the_trainer_restores_less(tmp_path):
    """The rule on the files a save holds: a Trainer's save with optimizer.pt and scheduler.pt is a full
    resume; without them (``--save_only_model``) it is not, but only for a run that saves through the
    Trainer (moeconsole's demo writes optimizer.pt and no scheduler.pt, and restores its own state);
    a DeepSpeed save keeps its optimizer in ``global_step*/``; ``--resume_only_model`` says weights only."""
    from moeconsole.runner.recipes.step_count import partial_resume
    swift = ["swift", "sft", "--model", "m", "--resume_from_checkpoint", "CKPT"]
    full, lean, ds = (tmp_path / n / "checkpoint-4" for n in ("full", "lean", "ds"))
    for d in (full, lean, ds):
        d.mkdir(parents=True)
        (d / "trainer_state.json").write_text("{}")
    (full / "optimizer.pt").write_bytes(b"x")
    (full / "scheduler.pt").write_bytes(b"x")
    (ds / "global_step4").mkdir()
    assert partial_resume(swift, str(full), "4.6.0", trainer=True) is None
    assert "no optimizer.pt or scheduler.pt" in (partial_resume(swift, str(lean), "4.6.0", trainer=True) or "")
    assert partial_resume(["python", "train.py"], str(lean), trainer=False) is None
    assert partial_resume(swift, str(ds), "4.6.0", trainer=True) is None
    assert partial_resume(swift, None, "4.6.0", trainer=True) is None
    only = partial_resume(swift + ["--resume_only_model", "true"], str(full), "4.6.0", trainer=True) or ""
    assert only.startswith("weights only") and only.endswith("the step count goes on"), only
    again = partial_resume(swift + ["--resume_only_model", "true", "--ignore_data_skip", "true"], str(full), "4.6.0",
                           trainer=True) or ""
    assert again.endswith("the step count starts at 1 again"), again
