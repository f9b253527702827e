"""Newcomer round 13: a Hugging Face Trainer script of the user's own, its log a file (no terminal).

transformers 5.19 writes each log dict through ``ProgressCallback.on_log`` (``training_bar.write``):
tqdm clears the bar, prints the dict and draws the bar again at ``state.global_step``, so the first
carriage-return segment of the line after a dict is that dict's step. When the run's last logged step
is its last (``max_steps`` a multiple of ``logging_steps``), that redraw is the bar at its total,
``15/15``: the last dict was numbered one past the bar before it (step 11 of 15), and the run that
finished read ENDED SHORT with a `restart --force` to type. Below: the log as the round's script wrote it.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def bar(n: int, total: int) -> str:
    pct = int(100 * n / total)
    return f"\r{pct:3d}%|{'█' * (pct // 10):<10}| {n}/{total} [00:00<00:00, 180.48it/s]"


def trainer_log(total: int, every: int) -> str:
    """The bytes of the round's train.log: the bar before each dict is the count of the dict before."""
    lines = ["***** Running training *****"]
    shown = 0
    for step in range(every, total + 1, every):
        loss = 20.0 - step / 10
        lines.append(f"{bar(shown, total)}\r{' ' * 40}\r{{'loss': '{loss:.4g}', 'grad_norm': '9.9', "
                     f"'learning_rate': '4.9e-05', 'epoch': '{step / 500:.2g}'}}")
        shown = step
    lines.append(f"{bar(total, total)}\r{' ' * 40}\r{{'train_runtime': '0.17', 'train_samples_per_second': "
                 f"'9397', 'train_steps_per_second': '1175', 'train_loss': '18.06', 'epoch': '0.03'}}")
    lines.append(f"{bar(total, total)}{bar(total, total)}")
    return "\n".join(lines) + "\n"


def parse(log: Path) -> str:
    res = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", str(log)], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_last_dict_of_a_finished_trainer_run_is_at_its_last_step(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(trainer_log(15, 5))
    out = parse(log)
    assert "steps        5 -> 15 of 15" in out, out
    assert "(step 15)" in out and "numbered" not in out, out


def test_a_run_that_stopped_before_its_total_still_reads_where_it_stopped(tmp_path):
    # refusal: the bar closed early (a run stopped at 10 of 20) is not its total: the last dict stays at 10
    log = tmp_path / "train.log"
    text = trainer_log(10, 5).replace("/10 [", "/20 [")
    log.write_text(text)
    out = parse(log)
    assert "of 20" in out and "(step 15)" not in out and "(step 20)" not in out, out
