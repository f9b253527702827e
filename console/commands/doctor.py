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


def known_bad(versions: dict[str, str | None]) -> list[dict]:
    """Combinations documented to break (see shared formats/swift notes); each with the reason."""
    out = []
    swift, tf = versions.get("ms-swift"), versions.get("transformers")
    if swift and tf:
        if _vt(swift) >= (4,) and _vt(tf) >= (5, 17):
            out.append({"level": "error", "rule": "swift4_transformers",
                        "message": f"ms-swift {swift} pins transformers<5.17.0 but {tf} is installed"})
        if (3,) <= _vt(swift) < (4,) and _vt(tf) >= (4, 58):
            out.append({"level": "error", "rule": "swift3_transformers",
                        "message": f"ms-swift {swift} pins transformers<4.58 but {tf} is installed"})
    fla = versions.get("flash-linear-attention")
    if fla and _vt(fla) < (0, 4):
        out.append({"level": "info", "rule": "fla_no_tma_switch",
                    "message": f"flash-linear-attention {fla} predates FLA_USE_TMA (0.4.0+): TMA cannot be toggled"})
    torch_v = versions.get("torch")
    if torch_v and "+cpu" in torch_v and (versions.get("megatron-core") or versions.get("flash-linear-attention")):
        out.append({"level": "warning", "rule": "cpu_torch_with_gpu_stack",
                    "message": f"torch {torch_v} is a CPU build but GPU training packages are installed"})
    return out


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
    problems = known_bad(versions)
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
