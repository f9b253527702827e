"""Resume modes of the real ms-swift 4.6 in which the trainer counts from step 1 again, and what
the runner's restart policy makes of them."""
from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from moeconsole.runner.checkpoints.verify import verify_checkpoint
from tests.swift.swift_helpers import cli, require_swift, start


def _terminate_training(state: dict, sig: int = signal.SIGTERM) -> None:
    """SIGTERM (as a scheduler's preemption sends it) or ``sig`` to the training's process group
    (the `swift` wrapper and its trainer); the leader is the one state.json names."""
    leader = next(p for p in state["pids"] if p.get("role") == "leader")
    os.killpg(os.getpgid(leader["pid"]), sig)


def test_resume_only_model_with_ignore_data_skip_counts_from_step_1_and_that_is_progress(swift_runs, tiny):
    """`--resume_only_model true --ignore_data_skip true`: ms-swift loads the checkpoint's weights and
    drops resume_from_checkpoint (swift/trainers/mixin.py l.149-152), so the resumed attempt logs
    steps 1, 2, ... An attempt cut early (below its checkpoint's step) has still trained: with
    restart.no_progress_attempts 1 the run restarts instead of failing for "no step progress", and
    the attempt's record says its count started at 0."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4", "args.resume_only_model=true",
                "args.ignore_data_skip=true", "restart.no_progress_attempts=1")
    try:
        state = run.wait(lambda s: any(e["step"] >= 8 for e in run.ok_checkpoints()) and s.get("pids"),
                         "checkpoint-8 verified")
        _terminate_training(state)
        state = run.wait(lambda s: s.get("attempt") == 2 and s.get("pids") and run.metrics(2), "attempt 2's first step")
        _terminate_training(state)
        state = run.wait(lambda s: len(s.get("history") or []) >= 2, "attempt 2 judged")
        (rec,) = [h for h in state["history"] if h["attempt"] == 2]
        ckpt_step = int(rec["resumed_from"].rsplit("checkpoint-", 1)[1])
        steps = [m["step"] for m in run.metrics(2)]
        assert steps[0] == 1 and rec["last_step"] <= ckpt_step, (steps, rec)   # counted from 1, cut below the checkpoint
        (crash,) = [c for c in run.events("crash") if c["attempt"] == 2]
        assert crash["decision"] == "restart", (crash, state.get("pause_reason"))
        assert rec["resumed_step"] == 0, rec
    finally:
        cli(swift_runs, "kill", run.id)


def test_the_first_save_cut_before_trainer_state_is_never_the_resume_point(swift_runs, tiny):
    """The first save of a run (no earlier checkpoint-M/ to prove the saver is a Trainer) cut in its
    first moments: ms-swift has written the adapter and its config (PEFT's save_pretrained) and no
    training_args.bin, optimizer.pt or trainer_state.json yet (transformers' Trainer._save_checkpoint
    writes those after the weights). The run knows its saver is the Trainer (`swift sft`), so that
    save is incomplete, and the automatic restart starts from scratch instead of resuming from it
    (which transformers refuses: no trainer_state.json). The cut is made exact by a FIFO where ms-swift
    writes additional_config.json next (swift/tuners/peft.py LoraConfig.save_pretrained, right after
    adapter_config.json): the save blocks there until the tree is killed (SIGKILL, as a node's death:
    a SIGTERM handler in the trainer would resume the blocked open)."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4")
    fifo = None
    try:
        state = run.wait(lambda s: s.get("pids") and any(m["step"] >= 2 for m in run.metrics(1)), "step 2")
        (vdir,) = list((run.path / "output").glob("v0-*"))
        ckpt = vdir / "checkpoint-4"
        ckpt.mkdir()
        fifo = ckpt / "additional_config.json"
        os.mkfifo(fifo)
        run.wait(lambda s: {"adapter_model.safetensors", "adapter_config.json"} <= {p.name for p in ckpt.iterdir()},
                 "the adapter and its config written")
        left = {p.name for p in ckpt.iterdir()} - {"moeconsole.json", "additional_config.json"}
        assert not left & {"training_args.bin", "optimizer.pt", "trainer_state.json"}, left
        _terminate_training(state, signal.SIGKILL)
        state = run.wait(lambda s: s.get("attempt") == 2 and len(s.get("history") or []) >= 1, "the automatic restart")
        verdicts = [(e["ok"], e["verdict"]) for e in run.events("checkpoint") if e["path"] == str(ckpt)]
        assert verdicts and verdicts[-1] == (False, "incomplete") and not any(ok for ok, _v in verdicts), verdicts
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        assert start2["resumed_from"] is None and "--resume_from_checkpoint" not in start2["argv"], start2
    finally:
        cli(swift_runs, "kill", run.id)
        if fifo is not None and fifo.exists():
            fifo.unlink()


def test_resumes_that_count_from_step_1_into_one_directory_go_on_from_the_save_written_last(swift_runs, tiny):
    """`--add_version false` (ms-swift sets it for every PAI job) with `--resume_only_model true
    --ignore_data_skip true`: every attempt saves into the same output directory and counts from
    step 1 again. Attempt 2 resumes from attempt 1's newest save (checkpoint-16 or later), then
    writes checkpoint-4 (and maybe more, all below that step) again in place (newer weights, lower
    steps); cut there, the next restart resumes from attempt 2's newest save, not from the higher
    step attempt 1 left (which loses attempt 2's training on every restart)."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4", "args.resume_only_model=true",
                "args.ignore_data_skip=true", "args.add_version=false")
    try:
        state = run.wait(lambda s: any(e["step"] >= 16 for e in run.ok_checkpoints()) and s.get("pids"),
                         "checkpoint-16 verified")
        _terminate_training(state)
        state = run.wait(lambda s: s.get("attempt") == 2 and s.get("pids") and any(
            e["step"] == 4 and e.get("attempt") == 2 for e in run.ok_checkpoints()), "attempt 2's checkpoint-4 verified")
        _terminate_training(state)
        run.wait(lambda s: s.get("attempt") == 3, "the restart after attempt 2")
        starts = {e["attempt"]: e for e in run.events("attempt_start")}
        resumed2 = int(starts[2]["resumed_from"].rsplit("checkpoint-", 1)[1])
        assert resumed2 >= 16 and max(m["step"] for m in run.metrics(2)) < resumed2, starts[2]
        # attempt 2's newest save (checkpoint-4 or later, all below attempt 1's last), written after attempt 1's
        newest2 = max((e for e in run.ok_checkpoints() if e.get("attempt") == 2), key=lambda e: e["step"])
        assert newest2["step"] < resumed2 and starts[3]["resumed_from"] == newest2["path"], (starts[3], newest2)
        # `moeconsole restart` says where it will resume, and resumes there: the save written last
        # that verified ok, as the runner picks it (before, the sentence named attempt 1's highest step)
        assert cli(swift_runs, "kill", run.id).returncode == 0
        run.wait(lambda s: s.get("status") == "killed" and not s.get("pids"), "the run killed")
        proc = cli(swift_runs, "restart", run.id)
        said = re.search(r"restarting will start attempt (\d+) resumed from (checkpoint-\d+) \(step \d+, the "
                         r"checkpoint written last that verified ok\)", proc.stderr)
        assert said, proc.stderr
        attempt = int(said.group(1))
        run.wait(lambda s: s.get("attempt") == attempt and s.get("pids"), f"attempt {attempt}")
        took = {e["attempt"]: e for e in run.events("attempt_start")}[attempt]["resumed_from"]
        assert took is not None and Path(took).name == said.group(2) and int(said.group(2)[11:]) < resumed2, (took, said)
    finally:
        cli(swift_runs, "kill", run.id)


def test_a_save_rewritten_in_place_and_cut_before_its_state_is_not_resumed_from(swift_runs, tiny):
    """`--add_version false` with `--resume_only_model true --ignore_data_skip true`: attempt 2 counts
    from step 1 again and writes checkpoint-4 again over attempt 1's, in place. Cut in that save
    after the adapter (SIGKILL while ms-swift blocks on additional_config.json, a FIFO: swift/tuners/
    peft.py writes it right after adapter_config.json), checkpoint-4 holds attempt 2's adapter beside
    attempt 1's trainer_state.json, which reads fine: it verified ok, and being the save written last
    it was the restart's resume point (a save cut short, whose state is not its own). The state was
    written before the weights it belongs after: incomplete, and the restart resumes from attempt 1's
    last save."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4", "args.resume_only_model=true",
                "args.ignore_data_skip=true", "args.add_version=false")
    fifo = None
    try:
        state = run.wait(lambda s: any(e["step"] >= 16 for e in run.ok_checkpoints()) and s.get("pids"),
                         "checkpoint-16 verified")
        ckpt = Path(next(e["path"] for e in run.ok_checkpoints() if e["step"] == 4))
        fifo = ckpt / "additional_config.json"
        fifo.unlink()
        os.mkfifo(fifo)
        written = os.stat(fifo).st_mtime_ns
        _terminate_training(state)
        state = run.wait(lambda s: s.get("attempt") == 2 and s.get("pids") and all(
            (ckpt / n).stat().st_mtime_ns > written for n in ("adapter_model.safetensors", "adapter_config.json")),
            "attempt 2 writing checkpoint-4 again")
        assert (ckpt / "trainer_state.json").stat().st_mtime_ns < written   # attempt 1's
        fifo.unlink()     # the blocked open keeps the FIFO; attempt 3 must not block on it
        _terminate_training(state, signal.SIGKILL)
        run.wait(lambda s: s.get("attempt") == 3, "the restart after attempt 2")
        start3 = {e["attempt"]: e for e in run.events("attempt_start")}[3]
        assert start3["resumed_from"] and Path(start3["resumed_from"]) != ckpt, start3
        assert int(Path(start3["resumed_from"]).name.rsplit("-", 1)[1]) >= 16, start3
        v = verify_checkpoint(ckpt, trainer=True, rewrites=True)   # as the runner judges it
        assert v.verdict == "incomplete" and "an earlier save's" in v.reason, v.reason
    finally:
        cli(swift_runs, "kill", run.id)
        if fifo is not None and fifo.exists():
            fifo.unlink()


def test_a_resume_from_save_only_model_checkpoints_restarts_the_lr_schedule_and_is_told(swift_runs, tiny):
    """`--save_only_model true`: a checkpoint holds no optimizer.pt and no scheduler.pt; the automatic
    restart resumes from it, transformers goes on from trainer_state.json's step but builds a fresh
    optimizer and LR schedule (trainer.py _load_optimizer_and_scheduler loads them only when both
    files are there). ms-swift's schedules have no warmup unless asked (warmup_ratio 0; a linear decay
    here, so that 10 steps of 400 move the rate by 2.5%), so the resumed attempt logs the first
    attempt's starting rate again: one `lr_schedule_restarted` warning. Before, only a restart that
    re-ran a warmup was told (none here: nothing was said)."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=5", "args.save_only_model=true",
                "args.lr_scheduler_type=linear")
    try:
        state = run.wait(lambda s: any(e["step"] >= 10 for e in run.ok_checkpoints()) and s.get("pids"),
                         "a checkpoint at step 10 or later verified")
        _terminate_training(state)
        state = run.wait(lambda s: s.get("attempt") == 2 and bool(run.metrics(2)), "attempt 2's first step")
        ckpt = Path(state["resumed_from"])
        assert ckpt.name.startswith("checkpoint-") and (ckpt / "adapter_model.safetensors").is_file()
        assert not (ckpt / "optimizer.pt").exists() and not (ckpt / "scheduler.pt").exists()
        first, resumed = run.metrics(1)[0], run.metrics(2)[0]
        saved_at = int(ckpt.name.split("-")[1])
        assert resumed["step"] == saved_at + 1                              # the count went on
        reached = next(m["lr"] for m in run.metrics(1) if m["step"] == saved_at)
        assert resumed["lr"] == first["lr"] > reached                       # ... the schedule started over
        run.wait(lambda s: any(a.get("rule") == "lr_schedule_restarted" for a in run.events("alert")),
                 "the lr_schedule_restarted warning")
        (alert,) = [a for a in run.events("alert") if a.get("rule") == "lr_schedule_restarted"]
        assert (alert["level"], alert["attempt"], alert["step"]) == ("warning", 2, resumed["step"])
        assert "--save_only_model false" in alert["message"]
    finally:
        cli(swift_runs, "kill", run.id)
