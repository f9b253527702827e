"""Install the CPU build of torch into the Python that runs this script (a fresh venv's), before the
project itself: the one step that does it (the Makefile's .venv and scripts/swift-env.sh's .venv-swift
both run it); which build and from where is runner/core/cpu_torch.py's, as the console's hints say.

    .venv/bin/python scripts/install_torch.py [pip install options, e.g. --target DIR]

Why: PyPI's Linux torch==2.13.0 is the CUDA build (4.7 GB with its nvidia-* wheels); PyTorch's CPU
index holds 2.13.0+cpu. The requirement names the build (`torch==2.13.0+cpu`), not only the version:
with the version alone pip takes the highest local label it sees, and `cu128`, `rocm6.4` and `xpu`
all sort above `cpu` (PEP 440 compares local segments as strings), so a CUDA index in the user's pip
config won.

Cost: the CPU index is asked for torch alone (`--no-deps`; torch's dependencies come with the project
from the user's own indexes), once, with a short timeout: an index that cannot be reached costs a few
seconds, not one retry series per dependency (it had been 10 projects x 5 retries, 77 s with DNS
failing). `TORCH_CPU_INDEX` names another index (a mirror); set empty, no torch is installed here and
torch comes with the project from the user's own pip indexes (on Linux PyPI's is the CUDA build).
Written for Python 3.11+ (the venv's): tomllib reads the pin from pyproject.toml.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import importlib.util
import tomllib
from pathlib import Path

TIMEOUT_S = "10"    # pip's socket timeout for this one call (its default is 15 s, this machine's 180 s)
RETRIES = "1"       # pip's default is 5 per URL, each after a back-off
REPO = Path(__file__).resolve().parent.parent
PYPROJECT = REPO / "pyproject.toml"


def _cpu_torch():
    """runner/core/cpu_torch.py, read from the checkout (moeconsole is not installed yet): the owner of
    the CPU index's address and of the CPU build's name, which the console's install hints say too."""
    spec = importlib.util.spec_from_file_location("cpu_torch", REPO / "runner" / "core" / "cpu_torch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pyproject_torch_pin(pyproject: Path = PYPROJECT) -> str:
    """"torch==2.13.0" from pyproject.toml's `demo` extra: the one place the version is written."""
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    for req in extras["demo"]:
        if req.replace(" ", "").startswith("torch=="):
            return req.replace(" ", "")
    raise SystemExit(f"install_torch: no `torch==VERSION` in {pyproject}'s demo extra")


def last_error(said: str) -> str:
    """pip's last ERROR line (what it could not do), else its last line."""
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines or ["pip said nothing"])[-1]


def unreachable(said: str) -> bool:
    return "Retrying (Retry(" in said or "Could not fetch URL" in said or "connection broken" in said


def main(argv: list[str]) -> int:
    owner = _cpu_torch()
    index = os.environ.get("TORCH_CPU_INDEX", owner.CPU_INDEX).strip()
    pin = pyproject_torch_pin()
    if not index:
        print(f"torch: TORCH_CPU_INDEX is empty: {pin} comes with the project from your own pip indexes "
              "(on Linux, PyPI's is the CUDA build)")
        return 0
    want = owner.cpu_build(pin)
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--timeout", TIMEOUT_S,
           "--retries", RETRIES, "--index-url", index, want, *argv]
    with tempfile.TemporaryFile("w+") as out:   # pip's retry warnings are shown only when it failed
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
        out.seek(0)
        said = out.read()
    if done.returncode != 0:
        why = "it cannot be reached" if unreachable(said) else last_error(said)
        sys.stderr.write(f"torch: the CPU build {want} could not be installed from {index} ({why}): point "
                         "TORCH_CPU_INDEX at a mirror of it, or set TORCH_CPU_INDEX= (empty) to take torch from "
                         "your own pip indexes (on Linux, PyPI's is the CUDA build, about 4.7 GB)\n")
        return 2
    if unreachable(said):
        print(f"torch: {index} did not answer; {want} came from your own pip sources (a wheel dir)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
