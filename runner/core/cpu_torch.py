"""Which torch the demo wants and how to install it: the CPU build, from PyTorch's CPU index."""
from __future__ import annotations

# PyTorch's index of CPU builds: PyPI's Linux torch is the CUDA build (4.7 GB with its nvidia-* wheels),
# which `pip install 'moeconsole[demo]'` alone would take. scripts/install_torch.py (make's .venv,
# scripts/swift-env.sh) reads CPU_INDEX and cpu_build from this file.
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def cpu_build(pin: str, platform: str | None = None) -> str:
    """The requirement of torch's CPU build for `pin` ("torch==2.13.0"): "torch==2.13.0+cpu", the build
    named and not only the version (pip takes the highest local label it sees, and cu128, rocm6.4 and
    xpu all sort above cpu: PEP 440 compares local segments as strings). macOS wheels carry no label
    (PyPI's macOS torch is the CPU build): there the pin stays as it is."""
    import sys
    return pin if (platform or sys.platform) == "darwin" or "==" not in pin else pin + "+cpu"


def installed_torch_pin() -> str:
    """"torch==2.13.0": the torch of moeconsole's own `demo` extra (pyproject.toml), as installed."""
    from importlib import metadata
    try:
        requires = metadata.requires("moeconsole") or []
    except metadata.PackageNotFoundError:
        requires = []
    for req in requires:
        spec, _, marker = req.partition(";")
        if spec.replace(" ", "").startswith("torch==") and "demo" in marker:
            return spec.replace(" ", "")
    return "torch"


def install_hint(python: str | None = None) -> str:
    """How to give `python` (else the `pip` on PATH) what the demo imports: torch's CPU build from its
    index, then the demo extra (which keeps that torch)."""
    pip = f"{python} -m pip" if python else "pip"
    want = cpu_build(installed_torch_pin())
    first = f"{pip} install {want}" + (f" --index-url {CPU_INDEX}" if want.endswith("+cpu") else "")
    return f"`{first}` (torch's CPU build), then `{pip} install 'moeconsole[demo]'`"
