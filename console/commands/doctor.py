"""``moeconsole doctor``: versions in the training environment and known-bad combinations."""
from __future__ import annotations

import importlib.metadata as md
import platform
import sys

from runner import jsonio

PACKAGES = ("torch", "transformers", "ms-swift", "megatron-core", "flash-linear-attention", "triton", "peft",
            "trl", "deepspeed", "nvidia-ml-py", "textual", "safetensors")


def _version(name: str) -> str | None:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def _vt(v: str | None) -> tuple[int, ...]:
    out = []
    for part in (v or "0").split("+")[0].split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def requirement_conflicts(versions: dict[str, str | None], requires: dict[str, list[str]]) -> list[dict]:
    """Each installed package's own declared requirements, checked against what is installed:
    e.g. ms-swift 4.6.0 declares transformers<5.20.0, so transformers 5.21 is a known-bad pair."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    installed = {canonicalize_name(k): v for k, v in versions.items() if v}
    out = []
    for pkg, reqs in requires.items():
        for text in reqs:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # an optional extra, or another platform
            have = installed.get(canonicalize_name(req.name))
            if have and req.specifier and not req.specifier.contains(have, prereleases=True):
                out.append({"level": "error", "rule": "requirement_conflict",
                            "message": f"{pkg} {versions.get(pkg)} requires {req.name}{req.specifier} "
                                       f"but {have} is installed"})
    return out


def known_bad(versions: dict[str, str | None], requires: dict[str, list[str]] | None = None) -> list[dict]:
    """Combinations that break training: declared requirement conflicts, plus what the
    packages do not declare."""
    out = requirement_conflicts(versions, requires or {})
    fla = versions.get("flash-linear-attention")
    if fla and _vt(fla) < (0, 4):
        out.append({"level": "info", "rule": "fla_no_tma_switch",
                    "message": f"flash-linear-attention {fla} predates FLA_USE_TMA (0.4.0+): TMA cannot be toggled"})
    torch_v = versions.get("torch")
    if torch_v and "+cpu" in torch_v and (versions.get("megatron-core") or versions.get("flash-linear-attention")):
        out.append({"level": "warning", "rule": "cpu_torch_with_gpu_stack",
                    "message": f"torch {torch_v} is a CPU build but GPU training packages are installed"})
    return out


def _requires(versions: dict[str, str | None]) -> dict[str, list[str]]:
    return {p: list(md.requires(p) or []) for p, v in versions.items() if v}


def run(args) -> int:
    versions = {p: _version(p) for p in PACKAGES}
    gpu = None
    try:
        from runner.telemetry.gpu import get_backend
        snap = get_backend().snapshot().to_dict()
        gpu = {"available": snap.get("available"), "driver": snap.get("driver"), "reason": snap.get("reason"),
               "count": len(snap.get("gpus") or [])}
    except Exception as exc:  # doctor reports, never crashes
        gpu = {"available": False, "reason": str(exc)}
    problems = known_bad(versions, _requires(versions))
    if args.json:
        print(jsonio.dumps({"v": 1, "python": sys.version.split()[0], "platform": platform.platform(),
                            "packages": versions, "gpu": gpu, "problems": problems}))
    else:
        print(f"python {sys.version.split()[0]} on {platform.platform()}")
        for name, v in versions.items():
            print(f"  {name:24s} {v or '-'}")
        if gpu.get("available"):
            print(f"GPUs: {gpu['count']} (driver {gpu.get('driver')})")
        else:
            print(f"GPUs: none ({gpu.get('reason')})")
        for p in problems:
            print(f"{p['level']:7s} {p['rule']}: {p['message']}")
        if not problems:
            print("no known-bad combination found")
    return 1 if any(p["level"] == "error" for p in problems) else 0
