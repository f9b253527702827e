"""``moeconsole doctor [--python PATH | RECIPE]``: the training environment, not only moeconsole's:
versions, GPUs, settings and known-bad combinations, each finding with its reason
(runner/recipes/doctor.py does the work)."""
from __future__ import annotations

import sys

from runner.recipes import doctor, recipe as recipes
from runner.rundir import jsonio
from runner.core.errors import InputError

# Kept for callers of the old module API.
requirement_conflicts = doctor.requirement_conflicts


def known_bad(versions: dict[str, str | None], requires: dict[str, list[str]] | None = None) -> list[dict]:
    """Requirement conflicts and the CPU-torch-with-GPU-stack pair, from versions alone."""
    report = doctor.EnvReport(python="", executable="", packages=dict(versions), requires=requires or {})
    rules = {"requirement_conflict", "cpu_torch_with_gpu_stack"}
    return [f for f in doctor.findings(report) if f["rule"] in rules]


def _target(args) -> tuple[str | None, dict[str, str], str]:
    """(python, env, what) from --python, a recipe's swift.python and env, or this Python."""
    if args.python and args.recipe:
        raise InputError("doctor: give --python or a RECIPE, not both")
    if args.recipe:
        r = recipes.load(args.recipe)
        py = (r.get("swift") or {}).get("python")
        env = recipes.resolve_env(r.get("env") or {})
        if not py:
            return None, env, f"{args.recipe} (no swift.python: moeconsole's own Python)"
        py = recipes.fill(py, {"recipe_dir": r.get("_recipe_dir", "")})
        return py, env, f"{args.recipe} (swift.python {py})"
    return args.python, {}, args.python or "moeconsole's own Python"


def _gpu() -> dict:
    try:
        from runner.telemetry.gpu import get_backend
        snap = get_backend().snapshot().to_dict()
        return {"available": snap.get("available"), "driver": snap.get("driver"), "reason": snap.get("reason"),
                "count": len(snap.get("gpus") or [])}
    except Exception as exc:  # doctor reports, never crashes
        return {"available": False, "reason": str(exc)}


def run(args) -> int:
    python, env, what = _target(args)
    try:
        report = doctor.inspect(python, env)
    except doctor.ProbeFailed as exc:
        raise InputError(f"doctor: {exc}") from None
    problems = doctor.findings(report, training_env=python is not None)
    gpu = _gpu()
    if args.json:
        print(jsonio.dumps({"v": 1, "target": what, "python": report.python, "executable": report.executable,
                            "platform": report.platform, "packages": report.packages, "torch": report.torch,
                            "nvml": report.nvml, "env": report.env, "gpu": gpu, "problems": problems}))
    else:
        print(f"python {report.python} at {report.executable} ({what}) on {report.platform}")
        for name, v in report.packages.items():
            if v or name in ("ms-swift", "megatron-core", "transformers", "torch", "flash-linear-attention"):
                src = doctor._vcs(report, name)
                print(f"  {name:26s} {v or '-'}{'  (' + src + ')' if src else ''}")
        t = report.torch or {}
        if t.get("version"):
            nccl = f", NCCL {t['nccl']}" if t.get("nccl") else ""
            print(f"  torch CUDA {t.get('cuda') or 'none'}, {len(t.get('devices') or [])} device(s){nccl}")
        driver = (report.nvml or {}).get("driver") or gpu.get("driver")
        if gpu.get("available"):
            print(f"GPUs: {gpu['count']} (driver {driver})")
        else:
            print(f"GPUs: none ({gpu.get('reason')})")
        for p in problems:
            print(f"{p['level']:7s} {p['rule']}: {p['message']}")
        if not any(p["level"] in ("error", "warning") for p in problems):
            print("no known-bad combination found")
    sys.stdout.flush()
    return 1 if any(p["level"] == "error" for p in problems) else 0
