"""`moeconsole doctor`: versions of the training environment and known-bad combinations."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from console.commands.doctor import known_bad

REPO = Path(__file__).resolve().parent.parent
SWIFT_46 = {"ms-swift": ["transformers<5.20.0,>=4.33", "peft>=0.11", 'deepspeed; extra == "all"']}


def test_declared_requirements_decide_known_bad_pairs():
    ok = {"ms-swift": "4.6.0", "transformers": "5.19.0", "peft": "0.20.0"}
    assert known_bad(ok, SWIFT_46) == []
    bad = known_bad({**ok, "transformers": "5.21.0"}, SWIFT_46)
    assert [b["rule"] for b in bad] == ["requirement_conflict"] and bad[0]["level"] == "error"
    assert bad[0]["message"] == "ms-swift 4.6.0 requires transformers<5.20.0,>=4.33 but 5.21.0 is installed"
    # An optional extra's requirement does not count.
    assert known_bad({**ok, "deepspeed": "0.1"}, SWIFT_46) == []
    assert [b["rule"] for b in known_bad({"torch": "2.13.0+cpu", "megatron-core": "0.14.0"})] == \
        ["cpu_torch_with_gpu_stack"]


def test_doctor_reports_this_environment():
    out = subprocess.run([sys.executable, "-m", "console.cli", "doctor", "--json"], capture_output=True,
                         text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    import torch
    assert doc["v"] == 1 and doc["packages"]["torch"] == torch.__version__
    assert doc["gpu"]["available"] is False and "NVIDIA" in doc["gpu"]["reason"]
    human = subprocess.run([sys.executable, "-m", "console.cli", "doctor"], capture_output=True, text=True,
                           cwd=REPO, timeout=60)
    assert "GPUs: none" in human.stdout and "no known-bad combination found" in human.stdout
