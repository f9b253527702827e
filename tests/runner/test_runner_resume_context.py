"""A restarted runner reads the log as the first one did: the reading context saved with
state.json's ``log_offset`` (``log_context``, ``core.readctx``). Through the real CLI, the real
detached runner SIGKILLed for real (the OOM killer, a reboot of the login node), `supervise`
adopting the run, and a real training process; asserted on metrics.jsonl and evals.jsonl, each
equal to what `parse` reads from the whole log."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.runner.conftest import NO_SAVES, Run
from tests.waiting import gone, sigkill, until

ONE_ATTEMPT = {"restart": {"max_restarts": 0}, **NO_SAVES}

# Prints the lines of the file argv[1] up to the line "--go--", waits for the file argv[2], prints
# the rest, then waits for the file argv[3].
PHASES = textwrap.dedent("""
    import os, sys, time
    def wait(path):
        while not os.path.exists(path):
            time.sleep(0.05)
    first, rest = open(sys.argv[1]).read().split("--go--\\n")
    sys.stdout.write(first)
    sys.stdout.flush()
    wait(sys.argv[2])
    sys.stdout.write(rest)
    sys.stdout.flush()
    wait(sys.argv[3])
""")

# transformers' Trainer (trainer.py ``_inner_training_loop``: logger.info("***** Running training
# *****") and its lines, "  Total optimization steps = {max_steps:,}"), then its step-less log
# dicts (``Trainer.log``: print(output) without a bar under --disable_tqdm): the banner's
# total is every record's max_steps; the dicts are numbered by their place in the log
TRAINER = "\n".join([
    "***** Running training *****",
    "  Num examples = 320",
    "  Num Epochs = 1",
    "  Instantaneous batch size per device = 8",
    "  Total train batch size (w. parallel, distributed & accumulation) = 8",
    "  Gradient Accumulation steps = 1",
    "  Total optimization steps = 40",
    "  Number of trainable parameters = 1,235,456",
    *[f"{{'loss': {2.0 - i * 0.1:.4f}, 'grad_norm': 1.5, 'learning_rate': {5e-5 * (1 - i / 40):.3e}, "
      f"'epoch': {i / 40:.3f}}}" for i in range(1, 6)],
    "--go--",
    *[f"{{'loss': {2.0 - i * 0.1:.4f}, 'grad_norm': 1.5, 'learning_rate': {5e-5 * (1 - i / 40):.3e}, "
      f"'epoch': {i / 40:.3f}}}" for i in range(6, 11)],
]) + "\n"

# fastai's results table (fastai/callback/progress.py ProgressCallback/Recorder: the header of
# the metric names once, then a row per epoch): the columns come from the header only
FASTAI = "\n".join([
    "Training lm from random weights",
    "epoch     train_loss  valid_loss  accuracy  time",
    "0         3.886147    3.948560    0.430394  47:41",
    "1         3.835572    3.931224    0.429429  47:37",
    "2         3.830497    3.871733    0.439411  47:25",
    "--go--",
    "3         3.740645    3.824856    0.446847  47:25",
    "4         3.715881    3.770223    0.455526  47:25",
    "5         3.698531    3.708276    0.463582  47:25",
]) + "\n"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _whole(harness, log: Path, *extra: str) -> list[dict]:
    out = harness.cli("parse", "--json", *extra, str(log), check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _killed_and_adopted(harness, tmp_path: Path, text: str, first_step: int) -> tuple[Run, Path]:
    """The training prints the text's first part; the runner reads it (records written, the
    offset marked) and is SIGKILLed; `supervise` adopts the run; the training prints the rest."""
    script, lines, go, end = tmp_path / "phases.py", tmp_path / "lines.txt", tmp_path / "go", tmp_path / "end"
    script.write_text(PHASES)
    lines.write_text(text)
    run = harness.start(harness.recipe(command=["{python}", str(script), str(lines), str(go), str(end)],
                                       **ONE_ATTEMPT))
    log = run.path / "train.log"
    first, rest = text.split("--go--\n")
    until(lambda: log.exists() and log.read_bytes().endswith(first.encode()), 60, what="the first part in train.log")
    st = run.wait(lambda s: s.get("step") == first_step and s.get("log_offset") == log.stat().st_size, 90,
                  what="the first part read and marked")
    sigkill(st["runner"]["pid"], 30, what="the runner to die")
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    go.write_text("")
    until(lambda: log.read_bytes().endswith(rest.encode()), 60, what="the rest in train.log")
    end.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    until(lambda: gone(st["runner"]["pid"]), 60, what="the new runner to exit")
    return run, log


def _steps(recs: list[dict], *keys: str) -> list[tuple]:
    return [tuple(r.get(k) for k in ("step", *keys)) for r in recs]


def test_a_runner_killed_after_the_trainer_banner_leaves_the_next_one_its_max_steps_and_step_count(
        harness, tmp_path):
    """The Trainer's banner said 40 steps, and its step-less dicts are numbered by their place.
    The new runner read on after the banner without it: the records after the restart had no
    max_steps, and were numbered from 1 again (steps the run had written, so they were dropped:
    metrics.jsonl stopped at 5 of 10). Now the context saved with the offset carries the run's
    length and the count: steps 1..10, each with max_steps 40, as `parse` reads the whole log."""
    run, log = _killed_and_adopted(harness, tmp_path, TRAINER, 5)
    got = _steps(run.metrics(), "loss", "max_steps")
    assert got == _steps(_whole(harness, log), "loss", "max_steps")
    assert [s for s, _, _ in got] == list(range(1, 11)) and {m for _, _, m in got} == {40}
    assert run.state()["max_steps"] == 40


def test_a_runner_killed_inside_a_table_leaves_the_next_one_its_columns(harness, tmp_path):
    """fastai's table: its header names the columns once. The new runner read the rows after the
    restart without it, as lines not understood: epochs 3..5 and their validation were never
    recorded. Now the header's column names are saved with the offset (names only, no row)."""
    run, log = _killed_and_adopted(harness, tmp_path, FASTAI, 2)
    assert _steps(run.metrics(), "loss") == _steps(_whole(harness, log), "loss") == [
        (0, 3.886147), (1, 3.835572), (2, 3.830497), (3, 3.740645), (4, 3.715881), (5, 3.698531)]
    assert _steps(_jsonl(run.path / "evals.jsonl"), "loss") == _steps(_whole(harness, log, "--eval"), "loss")
    assert len(_jsonl(run.path / "evals.jsonl")) == 6
    saved = run.state().get("log_context") or {}
    assert saved.get("fastai") == ["epoch", "train_loss", "valid_loss", "accuracy", "time"]
    assert "3.886147" not in json.dumps(saved)   # names, never a row


def test_a_context_that_does_not_fit_its_bounds_is_not_saved_and_not_the_old_one_either(harness, tmp_path):
    """A tqdm bar counting past 2**63 (a count of 10**20) after the Trainer's banner: the context
    at the new offset does not fit ``ReadingContext``'s bounds. state.json's writer refused it and
    kept the context of the previous mark beside the new offset (a new runner would read on with
    a context of other lines). Now the offset moves on with no context: read on as before contexts."""
    script, lines, go, end = tmp_path / "phases.py", tmp_path / "lines.txt", tmp_path / "go", tmp_path / "end"
    script.write_text(PHASES)
    big = 10 ** 20
    lines.write_text(TRAINER.split("--go--\n")[0] + "--go--\n"
                     + f" 50%|#####     | {big // 2}/{big} [00:01<00:01, 5.00it/s, loss=1.2]\nx\n")
    run = harness.start(harness.recipe(command=["{python}", str(script), str(lines), str(go), str(end)],
                                       **ONE_ATTEMPT))
    log = run.path / "train.log"
    st = run.wait(lambda s: s.get("step") == 5 and log.exists() and s.get("log_offset") == log.stat().st_size, 90,
                  what="the first part read and marked")
    assert st["log_context"]["run_total"] == 40
    go.write_text("")
    st = run.wait(lambda s: s.get("log_offset") == log.stat().st_size and log.read_bytes().endswith(b"x\n"), 90,
                  what="the bar read and marked")
    assert st["log_context"] is None
    end.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    until(lambda: gone(st["runner"]["pid"]), 60, what="the runner to exit")
