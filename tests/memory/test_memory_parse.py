"""``moeconsole parse`` on logs: the memory line says whether the envelope was flat or growing,
read by the same robust trend the runner uses (flat with rare spikes, a slow leak, a step change
after a restart in the same file)."""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def swift_line(step: int, total: int, mem: float) -> str:
    """ms-swift 4.x megatron sft's per-step dict (swift/megatron/callbacks/print.py)."""
    return str({"loss": 1.2, "grad_norm": 0.5, "learning_rate": 2e-05, "iteration": f"{step}/{total}",
                "elapsed_time": "1m 2s", "remaining_time": "19m 38s", "memory(GiB)": round(mem, 2),
                "train_speed(s/it)": 18.0})


def parse(tmp_path: Path, lines: list[str]) -> str:
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", str(log)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    return next(line for line in proc.stdout.splitlines() if line.strip().startswith("memory"))


def test_flat_with_rare_spikes_is_stable(tmp_path):
    rnd, peak, lines = random.Random(5), 0.0, []
    for i in range(1, 1501):
        peak = max(peak, 132.6 + (0.26 if rnd.random() < 0.004 else 0.0) + rnd.uniform(0, 0.04))
        lines.append(swift_line(i, 1500, peak))
    assert parse(tmp_path, lines).endswith("; stable over the last 385 steps")


def test_a_slow_leak_is_growing_at_its_rate(tmp_path):
    lines = [swift_line(i, 1500, 100.0 + i * 3 / 1024) for i in range(1, 1501)]
    assert parse(tmp_path, lines).endswith("; growing 3.0 MiB/step over the last 385 steps")


def test_a_step_change_after_a_restart_is_stable(tmp_path):
    first = [swift_line(i, 900, 100.0) for i in range(1, 601)]
    second = [swift_line(i, 900, 104.0) for i in range(401, 901)]     # resumed from 400, 4 GiB higher
    line = parse(tmp_path, first + ["=== moeconsole: attempt 2 start 2026-01-02T03:04:05 argv=x"] + second)
    assert "peak 104 GiB" in line and line.endswith("; stable over the last 385 steps")
