"""ms-swift across its versions, read from each version's source (no ms-swift needed): the output
layout of 2.x (and of 3.x/4.x with ``--output_dir`` unset) and 2.x's ``sft_args.json``.

- 2.6.1 swift/llm/utils/argument.py l.1158-1165: ``output_dir = join(output_dir, model_type)`` (Megatron:
  ``f'{model_type}-tp{tp}-pp{pp}'``), then ``add_version_to_work_dir`` (``v<N>-<YYYYMMDD-HHMMSS>``,
  swift/utils/utils.py l.107-116).
- 2.6.1 swift/llm/sft.py l.487: ``sft_args.json`` and ``training_args.json`` in the run dir;
  swift/trainers/mixin.py l.167-172 ``_save_sft_args``: ``sft_args.json`` in every checkpoint (no args.json).
- 2.6.1 swift/trainers/callback.py l.37-44 + mixin.py l.556-564: the logged dict (floats, ``acc``,
  ``memory(GiB)``, ``train_speed(iter/s)``, ``global_step/max_steps``, ``percentage``, times);
  logging.jsonl gets the same dict.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.checkpoints.conftest import write_adapter

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def swift2_output(root: Path, *, model_type: str = "qwen2-7b-instruct", stamp: str = "20240101-000000",
                  steps: int = 20, lr: float = 1e-4, loss0: float = 2.0) -> Path:
    """A 2.6.1 ``swift sft --output_dir ROOT`` run: ROOT/<model_type>/v0-<time>/."""
    run = root / model_type / f"v0-{stamp}"
    run.mkdir(parents=True)
    with open(run / "logging.jsonl", "w") as f:
        for i in range(1, steps + 1):
            f.write(json.dumps({"loss": round(loss0 - i * 0.01, 8), "acc": 0.5, "grad_norm": 0.7,
                                "learning_rate": lr, "memory(GiB)": 15.87,
                                "train_speed(iter/s)": 0.25, "epoch": round(i / steps, 8),
                                "global_step/max_steps": f"{i}/{steps}", "percentage": f"{i / steps * 100:.2f}%",
                                "elapsed_time": f"{4 * i}s", "remaining_time": f"{4 * (steps - i)}s"}) + "\n")
    sft_args = {"model_type": model_type, "model_id_or_path": "qwen/Qwen2-7B-Instruct", "sft_type": "lora",
                "learning_rate": lr, "lora_rank": 8, "output_dir": str(run)}
    (run / "sft_args.json").write_text(json.dumps(sft_args))
    (run / "training_args.json").write_text(json.dumps({"learning_rate": lr}))
    ck = write_adapter(run / f"checkpoint-{steps}", extras=False)
    (ck / "sft_args.json").write_text(json.dumps(sft_args))
    (ck / "configuration.json").write_text("{}")
    return root


def test_parse_reads_a_2x_output_dir_through_its_model_type_dir(tmp_path):
    out = swift2_output(tmp_path / "output", stamp="20240102-000000", steps=20)
    swift2_output(tmp_path / "output", model_type="llama3-8b-instruct", stamp="20240101-000000", steps=7)
    done = _cli("parse", "--json", str(out))
    assert done.returncode == 0, done.stderr
    recs = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert [r["step"] for r in recs] == list(range(1, 21))      # the newest run, not the older model's
    assert recs[-1]["max_steps"] == 20 and recs[-1]["loss"] == 1.8 and recs[-1]["mem_gib"] == 15.87
    assert recs[-1]["step_time_s"] == 4.0 and recs[-1]["lr"] == 1e-4


def test_runs_diff_reads_2x_sft_args_json(tmp_path):
    a = swift2_output(tmp_path / "a", lr=1e-4)
    b = swift2_output(tmp_path / "b", lr=2e-4, loss0=2.5)
    run_a = a / "qwen2-7b-instruct" / "v0-20240101-000000"   # the run dirs themselves: only sft_args.json
    run_b = b / "qwen2-7b-instruct" / "v0-20240101-000000"
    done = _cli("runs", "diff", str(run_a), str(run_b), "--json", "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    d = json.loads(done.stdout)
    assert d["a"]["steps"] == 20 and d["b"]["steps"] == 20
    diff = {x["key"]: (x["a"], x["b"]) for x in d["recipe_diff"]}
    assert diff.get("learning_rate") == (1e-4, 2e-4), d["recipe_diff"]


def test_verify_a_2x_checkpoint_does_not_ask_for_args_json(tmp_path):
    out = swift2_output(tmp_path / "output")
    ck = out / "qwen2-7b-instruct" / "v0-20240101-000000" / "checkpoint-20"
    done = _cli("verify", str(ck))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "args.json is missing" not in done.stdout
    # a checkpoint with neither file still gets the note (ms-swift writes one of them into every save)
    (ck / "sft_args.json").unlink()
    done = _cli("verify", str(ck))
    assert "args.json is missing" in done.stdout


def test_open_imports_a_2x_output_dir_with_its_checkpoints(tmp_path):
    from moeconsole.console.foreign import open_path
    out = swift2_output(tmp_path / "output", steps=20)
    run = open_path(out, tmp_path / "scratch")
    records = [json.loads(x) for x in run.metrics.read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, 21))
    events = [json.loads(x) for x in run.events.read_text().splitlines()]
    ck = [e for e in events if e.get("type") == "checkpoint"]
    assert len(ck) == 1 and ck[0]["step"] == 20 and ck[0]["verdict"] == "ok", ck
