"""Every place that tells a user how to get the demo's torch names its CPU build and PyTorch's CPU
index (R63 finding 3): `pip install 'moeconsole[demo]'` alone takes PyPI's torch, on Linux the CUDA
build (4.7 GB with its nvidia-* wheels), for a demo that trains on CPU."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _cpu_command() -> str:
    """`pip install torch==<the demo extra's version>+cpu --index-url <PyTorch's CPU index>`, from
    pyproject.toml's demo extra (the version) and the index PyTorch's install page names."""
    demo = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["demo"]
    pin = next(req for req in demo if req.startswith("torch=="))
    return f"pip install {pin}+cpu --index-url https://download.pytorch.org/whl/cpu"


def test_the_crash_hint_of_the_demo_without_torch_names_the_cpu_build():
    from moeconsole.runner.core.crash import classify
    tail = ["Traceback (most recent call last):",
            f'  File "{REPO}/runner/demo/train.py", line 120, in <module>',
            "    import torch",
            "ModuleNotFoundError: No module named 'torch'"]
    hint = classify(1, tail, steps_seen=0, python="/usr/bin/python3").hint or ""
    assert f"`/usr/bin/python3 -m {_cpu_command()}`" in hint, hint
    assert "then `/usr/bin/python3 -m pip install 'moeconsole[demo]'`" in hint, hint


def test_run_preflight_of_the_demo_without_torch_names_the_cpu_build(tmp_path):
    code = ("import sys; sys.modules['torch'] = None; from moeconsole.console.cli import main; "
            f"sys.exit(main(['run', 'recipes/tiny-moe-cpu.yaml', '--detach', '--runs-dir', {str(tmp_path)!r}]))")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"{sys.executable} -m {_cpu_command()}" in res.stderr, res.stderr


def test_moeconsole_demo_without_torch_names_the_cpu_build(tmp_path):
    """`moeconsole demo` where torch is not installed (its check is importlib.util.find_spec("torch"),
    console/commands/demo.py, answered None here as it is without torch)."""
    code = ("import importlib.util as u; real = u.find_spec; "
            "u.find_spec = lambda name, *a: None if name == 'torch' else real(name, *a); "
            "import sys; from moeconsole.console.cli import main; "
            f"sys.exit(main(['demo', '--runs-dir', {str(tmp_path)!r}]))")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    said = res.stderr.strip().splitlines()
    assert len(said) == 1 and f"`{_cpu_command()}`" in said[0], res.stderr
    assert "torch==2.13.0 for the CPU build" not in res.stderr
