"""The versions a run was launched with, recorded in each ``attempt_start`` event so a receipt
can say what trained the model. Read from the runner's own Python (the interpreter that
``{python}`` commands use) with importlib.metadata: no package is imported."""
from __future__ import annotations

import platform
import sys
from importlib import metadata

PACKAGES = ("moeconsole", "torch", "ms-swift", "transformers", "peft", "trl", "megatron-core", "mcore-bridge",
            "transformer-engine", "flash-linear-attention", "triton", "deepspeed", "accelerate", "safetensors",
            "nvidia-ml-py")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that shape a training run (absent ones left out)."""
    out = {"python": platform.python_version(), "python_executable": sys.executable}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out
