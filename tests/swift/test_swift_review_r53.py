"""Review R53 (s4) finding 2, on trainer_state.json files written by the real transformers Trainer (.venv-swift):
with eval_steps != save_steps the save the Trainer names (``best_model_checkpoint``, set only when
``checkpoint-<best_global_step>`` is on disk, trainer.py l.3336-3353) can be an earlier evaluation's than
``best_global_step``/``best_metric`` (updated at every evaluation, l.3399-3420). The best line must give the named
save's own step and value, and say the best evaluation was not saved."""
from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

from tests.swift.swift_helpers import SWIFT_PYTHON, TIMEOUT, require_swift

# eval_loss 1.0/0.9/0.5/0.7 at steps 2/4/6/8, the reviewer's input (transformers' own log_history entries)
_TRAIN = textwrap.dedent('''
    import sys, torch
    from torch import nn
    from transformers import Trainer, TrainingArguments
    out, eval_steps, save_steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    LOSS = {2: 1.0, 4: 0.9, 6: 0.5, 8: 0.7}
    class M(nn.Module):
        def __init__(s):
            super().__init__(); s.l = nn.Linear(2, 1)
        def forward(s, x=None, labels=None):
            o = s.l(x).squeeze(-1); return {"loss": ((o - labels) ** 2).mean(), "logits": o}
    class DS(torch.utils.data.Dataset):
        def __len__(s): return 64
        def __getitem__(s, i): return {"x": torch.randn(2), "labels": torch.tensor(0.0)}
    class T(Trainer):
        def evaluate(self, *a, **k):
            m = {"eval_loss": LOSS[self.state.global_step]}; self.log(m)
            return m
    args = TrainingArguments(out, eval_strategy="steps", eval_steps=eval_steps, save_steps=save_steps, max_steps=8,
                             per_device_train_batch_size=4, metric_for_best_model="loss", use_cpu=True, report_to=[],
                             logging_steps=1)
    T(model=M(), args=args, train_dataset=DS(), eval_dataset=DS()).train()
''')


def _train(tmp_path, eval_steps: int, save_steps: int):
    require_swift()
    out = tmp_path / f"out-{eval_steps}-{save_steps}"
    script = tmp_path / "train.py"
    script.write_text(_TRAIN)
    proc = subprocess.run([str(SWIFT_PYTHON), str(script), str(out), str(eval_steps), str(save_steps)],
                          capture_output=True, text=True, timeout=TIMEOUT * 2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    newest = out / "checkpoint-8"
    (newest / "args.json").write_text(json.dumps({"metric_for_best_model": "loss"}))   # as ms-swift copies it in
    return newest


def test_the_best_line_gives_the_named_saves_own_step_and_value_and_says_the_best_evaluation_was_not_saved(tmp_path):
    """Before: `checkpoint-4 (step 6, eval_loss 0.5): verified ok`, checkpoint-4's own loss being 0.9."""
    from moeconsole.console.format import best_words
    from moeconsole.runner.checkpoints.discover import best_save_named
    newest = _train(tmp_path, 2, 4)
    state = json.loads((newest / "trainer_state.json").read_text())
    assert state["best_model_checkpoint"].endswith("checkpoint-4") and state["best_global_step"] == 6, state
    best = best_save_named(newest)
    assert best is not None
    assert (best["path"], best["step"], best["metric"]) == (str(newest.parent / "checkpoint-4"), 4, "eval_loss")
    assert best["value"] == pytest.approx(0.9) and best["unsaved"]["step"] == 6
    assert best["unsaved"]["value"] == pytest.approx(0.5)
    line = best_words({**best, "verdict": "ok", "ok": True})
    assert line == "checkpoint-4 (step 4, eval_loss 0.9, lower is better): verified ok; the best evaluation (step 6, eval_loss 0.5) " \
                   "was not saved", line


def test_with_every_evaluation_saved_the_best_line_names_the_best_evaluations_save(tmp_path):
    from moeconsole.console.format import best_words
    from moeconsole.runner.checkpoints.discover import best_save_named
    newest = _train(tmp_path, 2, 2)
    best = best_save_named(newest)
    assert best is not None and best["step"] == 6 and best["value"] == pytest.approx(0.5) and best["unsaved"] is None
    assert best_words({**best, "verdict": "ok", "ok": True}) == "checkpoint-6 (step 6, eval_loss 0.5, lower is better): verified ok"
