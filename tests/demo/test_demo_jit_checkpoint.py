"""The demo's --enable_jit_checkpoint: on SIGTERM it saves where it is and exits 0, in
transformers' JITCheckpointCallback's words (what a Slurm preemption's GraceTime lets a training
do; docs/slurm.md). Without the flag a SIGTERM ends it at once."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    log = tmp_path / "train.log"
    out = open(log, "wb")
    proc = subprocess.Popen([sys.executable, "-m", "moeconsole.runner.demo.train", "--output_dir", str(tmp_path / "out"),
                             "--max_steps", "400", "--save_steps", "10", "--step_delay", "0.1", *extra],
                            stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"})
    out.close()
    until(lambda: "'global_step/max_steps': '12/400'" in log.read_text(errors="replace"), 120, what="step 12")
    return proc, log


def test_a_sigterm_saves_a_jit_checkpoint_at_the_step_under_way_and_exits_0(tmp_path):
    proc, log = _start(tmp_path, "--enable_jit_checkpoint")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0
    text = log.read_text(errors="replace")
    assert "SIGTERM received, will request JIT checkpoint after 3s" in text
    assert "Kill wait period elapsed, requesting checkpoint" in text
    step = int(text.split("Saving JIT checkpoint at step ", 1)[1].split()[0])
    assert 12 < step < 400 and (tmp_path / "out" / f"checkpoint-{step}" / "trainer_state.json").is_file()


def test_without_the_flag_a_sigterm_ends_the_demo_at_once(tmp_path):
    proc, log = _start(tmp_path)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == -signal.SIGTERM
    assert "JIT" not in log.read_text(errors="replace")
