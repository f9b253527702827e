"""A plain training script on transformers' Trainer (``python train.py``, not ms-swift) run under
``moeconsole run``: its first save, cut in its first moments, is judged by what its log says of it."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import yaml

from moeconsole.runner.checkpoints.safetensors_file import check_safetensors
from tests.swift.swift_helpers import SWIFT_PYTHON, Run, cli, require_swift
from tests.waiting import until

SCRIPT = Path(__file__).with_name("hf_trainer_train.py")


def test_a_trainer_scripts_first_save_cut_after_its_weights_is_incomplete_by_the_logs_word(swift_runs, tmp_path):
    """`python train.py` on transformers.Trainer: nothing in the command says a Trainer saves, and the
    first save holds nothing of a Trainer's until training_args.bin (``Trainer._save``, after the
    weights). Cut between the two (SIGKILL, as a node's death), checkpoint-4 is config.json,
    generation_config.json and model.safetensors: a whole save_pretrained by its look, so it verified
    ok and the restart resumed from it (transformers then starts at step 0 with those weights: no
    trainer_state.json). The log showed the Trainer's opening block (``***** Running training *****``
    ... ``Number of trainable parameters``): the run records it, the save is incomplete, and the
    restart starts from scratch. The cut is exact: a FIFO where the Trainer writes training_args.bin
    blocks it there; the name is unlinked before the kill (the blocked open keeps the FIFO), so no
    file of the Trainer's is left to tell."""
    require_swift()
    out = tmp_path / "output"
    ckpt = out / "checkpoint-4"
    ckpt.mkdir(parents=True)
    fifo = ckpt / "training_args.bin"
    os.mkfifo(fifo)
    recipe = tmp_path / "hf-trainer.yaml"
    recipe.write_text(yaml.safe_dump({
        "name": "hf-trainer-script",
        "command": [str(SWIFT_PYTHON), str(SCRIPT), "--output_dir", str(out), "--max_steps", "400", "--save_steps", "4"],
        "env": {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"},
        "restart": {"max_restarts": 2, "backoff_initial_s": 1, "backoff_max_s": 5},
        "cooldown": {"floor_s": 1, "ceiling_s": 10, "poll_s": 0.25},
        "kill": {"grace_s": 5},
        "checkpoints": {"dir": str(out), "settle_s": 1},
        "resume": {"arg": "--resume_from_checkpoint"},
    }))
    proc = cli(swift_runs, "run", str(recipe), "--detach")
    assert proc.returncode == 0, proc.stderr
    run = Run(swift_runs / proc.stdout.strip().splitlines()[0])
    try:
        weights = ckpt / "model.safetensors"
        until(lambda: weights.is_file() and check_safetensors(weights).ok, 240, what="checkpoint-4's weights written")
        assert {p.name for p in ckpt.iterdir()} == {"config.json", "generation_config.json", "model.safetensors",
                                                     "training_args.bin"}
        # the log read past the Trainer's block (printed before step 1)
        state = run.wait(lambda s: s.get("pids") and (s.get("step") or 0) >= 4, "step 4 read from the log")
        fifo.unlink()
        leader = next(p for p in state["pids"] if p.get("role") == "leader")
        os.killpg(os.getpgid(leader["pid"]), signal.SIGKILL)
        run.wait(lambda s: s.get("attempt") == 2 and len(s.get("history") or []) >= 1, "the automatic restart")
        verdicts = [(e["ok"], e["verdict"]) for e in run.events("checkpoint") if e["path"] == str(ckpt)]
        assert verdicts and verdicts[0] == (False, "incomplete") and not any(ok for ok, _v in verdicts), verdicts
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        assert start2["resumed_from"] is None and "--resume_from_checkpoint" not in start2["argv"], start2
        assert run.state().get("trainer_logged") is True
    finally:
        cli(swift_runs, "kill", run.id)
        if fifo.exists():
            fifo.unlink()
