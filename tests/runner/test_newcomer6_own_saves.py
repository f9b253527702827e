"""Newcomer round 6: a training loop of one's own saves with ``torch.save`` into ``checkpoint-N/``
(PyTorch's "Saving and loading a general checkpoint"), run as docs/recipes.md says
(``moeconsole run --set checkpoints.dir=out --set resume.arg=--resume_from_checkpoint -- python
train.py``). Each such save was ``EMPTY_STUB`` ("checkpoint directory holds no weight files"), two
in a row killed and paused the run, and a crash restarted from step 0. Now the save verifies ok
(``discover.own_torch_save``, layout ``torch_save``) and the restart resumes from it."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.runner.test_runner_bare_command import cli
from tests.runner.conftest import Run

torch = pytest.importorskip("torch")

TRAIN = """\
import argparse, os, pathlib, torch
p = argparse.ArgumentParser()
p.add_argument("--resume_from_checkpoint")
a = p.parse_args()
model = torch.nn.Linear(4, 1)
start = 0
if a.resume_from_checkpoint:
    st = torch.load(os.path.join(a.resume_from_checkpoint, "state.pt"))
    model.load_state_dict(st["model"]); start = st["step"]
for step in range(start + 1, 9):
    print(f"step {step} | loss {1.0 / step:.4f} | lr 1e-4", flush=True)
    if step == 6 and not pathlib.Path("crashed-once").exists():
        pathlib.Path("crashed-once").write_text("x")
        raise RuntimeError("bad batch at step 6")
    if step % 2 == 0:
        d = pathlib.Path("out") / f"checkpoint-{step}"
        d.mkdir(parents=True, exist_ok=True)
        torch.save({"model": model.state_dict(), "step": step}, d / "state.pt")
"""


def own_loop_run(tmp_path: Path, train: str, ceiling_s: float = 5) -> tuple[Run, dict]:
    """``train`` (a loop saving with torch.save into out/checkpoint-N/) run as the docs say a command
    without a recipe is (``run -- python train.py`` with the save dir and the resume flag set), to its end."""
    (tmp_path / "train.py").write_text(train)
    runs = tmp_path / "runs"
    proc = cli(runs, tmp_path, "run", "--detach", "--set", "checkpoints.dir=out", "--set",
               "resume.arg=--resume_from_checkpoint", "--set", "cooldown.floor_s=0",
               "--set", f"cooldown.ceiling_s={ceiling_s:g}", "--", sys.executable, "train.py")
    assert proc.returncode == 0, proc.stderr
    run = Run(runs / proc.stdout.strip().splitlines()[0])
    return run, run.wait_status("succeeded", "paused", "failed", timeout=180)


def test_own_torch_saves_verify_ok_and_the_crash_resumes_from_the_newest(tmp_path):
    run, state = own_loop_run(tmp_path, TRAIN)
    bad = [e for e in run.events("checkpoint") if not e.get("ok", True)]
    assert state["status"] == "succeeded", (state, bad)
    assert not bad, bad
    starts = run.events("attempt_start")
    assert len(starts) == 2, starts
    # attempt 2 resumed from the newest save before the crash, by the flag the docs named
    assert str(tmp_path / "out" / "checkpoint-4") in json.dumps(starts[1]), starts[1]
    assert [m["step"] for m in run.metrics()][-1] == 8


def test_verify_reads_a_torch_save_by_its_zip_never_its_pickle(tmp_path):
    from tests.checkpoints.test_checkpoints_cli import cli as verify_cli
    out = tmp_path / "out"
    good, cut, plain, trainer_only = (out / f"checkpoint-{n}" for n in (40, 30, 20, 10))
    for d in (good, cut, plain, trainer_only):
        d.mkdir(parents=True)
    torch.save({"model": torch.nn.Linear(4, 1).state_dict(), "step": 40}, good / "state.pt")
    torch.save({"model": torch.nn.Linear(4, 1).state_dict()}, cut / "model.pth")
    data = (cut / "model.pth").read_bytes()
    (cut / "model.pth").write_bytes(data[: len(data) // 2])          # a write cut short: no zip end record
    torch.save({"step": 20, "lr": 1e-4}, plain / "state.pt")          # values only: no tensor
    torch.save({"state": {}}, trainer_only / "optimizer.pt")          # a Trainer's side file is no weights
    proc = verify_cli("verify", str(out))
    lines = {line.split()[1].rsplit("/", 1)[-1]: line for line in proc.stdout.splitlines() if "/checkpoint-" in line}
    assert lines["checkpoint-40"].startswith("ok "), proc.stdout
    assert "torch.save: state.pt" in lines["checkpoint-40"], proc.stdout
    # a path's save may still be in its writer's hands (docs/checkpoints.md, Verdicts): in progress;
    # once its writer is gone (the runner's watcher, a run that ended) it is truncated
    assert lines["checkpoint-30"].startswith("IN_PROGRESS "), proc.stdout
    assert "torch.save has not closed it" in lines["checkpoint-30"], proc.stdout
    from moeconsole.runner.checkpoints.verify import verify_checkpoint
    assert verify_checkpoint(cut).verdict == "truncated"
    assert lines["checkpoint-20"].startswith("EMPTY_STUB "), proc.stdout
    assert not lines["checkpoint-10"].startswith("ok "), proc.stdout
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    ok = verify_cli("verify", str(good))
    assert ok.returncode == 0 and "newest ok:" in ok.stdout, ok.stdout + ok.stderr


def test_a_save_being_written_by_torch_save_is_in_progress_not_bad(tmp_path):
    from moeconsole.runner.checkpoints.discover import find_checkpoints, save_underway
    d = tmp_path / "out" / "ckpt_12"
    d.mkdir(parents=True)
    torch.save({"w": torch.zeros(3)}, d / "model.pt")
    data = (d / "model.pt").read_bytes()
    (d / "model.pt").write_bytes(data[:-30])
    [ckpt] = find_checkpoints(Path(tmp_path / "out"))
    assert (ckpt.layout, ckpt.step) == ("torch_save", 12)
    assert "still being written" in (save_underway(ckpt) or ""), save_underway(ckpt)
