"""A real ``swift export --merge_lora true`` (ms-swift 4.6, swift/pipelines/export/merge_lora.py:
``output_dir = f'{args.adapters[0]}-merged'``) of a real run's newest save writes ``checkpoint-N-merged/``
beside ``checkpoint-N/``: a full model (``model.safetensors``, config, tokenizer), no optimizer or
trainer state. It is an export: ``moeconsole verify RUN`` names ``checkpoint-N`` the newest save and says
what the export is, and a restart weighs ``checkpoint-N``, never the export
(runner/checkpoints/discover.py ``is_export``). Before, ``verify`` said "newest ok: .../checkpoint-4-merged"
and listed the export as any save."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.swift.swift_helpers import REPO, SWIFT_EXE, TIMEOUT, cli, require_swift, start


def test_a_real_merged_export_is_named_an_export_and_never_the_resume_point(swift_runs, tiny):
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=4", "args.save_steps=2")
    run.wait_while_moving(lambda s: s.get("status") == "succeeded", "status succeeded")
    (save,) = [Path(e["path"]) for e in run.ok_checkpoints() if e["step"] == 4]
    proc = subprocess.run([str(SWIFT_EXE), "export", "--adapters", str(save), "--merge_lora", "true"],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    merged = save.parent / f"{save.name}-merged"
    assert proc.returncode == 0 and (merged / "model.safetensors").is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not (merged / "optimizer.pt").exists() and not (merged / "trainer_state.json").exists()

    data = json.loads(cli(swift_runs, "verify", run.id, "--json").stdout)
    flags = {Path(c["path"]).name: (c["ok"], c["export"]) for c in data["checkpoints"]}
    assert flags == {"checkpoint-2": (True, False), "checkpoint-4": (True, False), "checkpoint-4-merged": (True, True)}
    assert Path(data["judged"]).name == "checkpoint-4" and data["ok"] is True
    text = cli(swift_runs, "verify", run.id)
    assert text.returncode == 0, text.stdout + text.stderr
    assert text.stdout.splitlines()[-1].endswith(f"newest ok: {save}; 1 export (merged weights, no resume point)")
    assert "no resume point" in next(ln for ln in text.stdout.splitlines() if "checkpoint-4-merged" in ln)

    # the resume point a restart weighs is checkpoint-4, never its export; it holds the training's
    # total, so the restart refuses (transformers would train step 5 of 4) and names that save
    restarted = cli(swift_runs, "restart", run.id, "--force", "--now")
    assert restarted.returncode == 2, restarted.stdout + restarted.stderr
    assert "checkpoint-4 holds step 4 of 4" in restarted.stderr and "merged" not in restarted.stderr, restarted.stderr
    # the save before it resumes: the export beside the newest save changes nothing there
    earlier = cli(swift_runs, "restart", run.id, "--force", "--now", "--from", "checkpoint-2")
    assert earlier.returncode == 0, earlier.stdout + earlier.stderr
    run.wait_while_moving(lambda s: s.get("attempt") == 2 and s.get("status") == "succeeded", "attempt 2 done")
    assert Path(run.events("attempt_start")[-1]["resumed_from"]).name == "checkpoint-2"
