"""``moeconsole doctor [--python PATH | RECIPE]``: the training environment, not only moeconsole's:
versions, GPUs, settings and known-bad combinations, each finding with its reason
(runner/recipes/doctor.py does the work)."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from moeconsole.runner.recipes import doctor, recipe as recipes
from moeconsole.runner.rundir import jsonio
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.units import NA

# Kept for callers of the old module API.
requirement_conflicts = doctor.requirement_conflicts


def known_bad(versions: dict[str, str | None], requires: dict[str, list[str]] | None = None) -> list[dict]:
    """Requirement conflicts and the CPU-torch-with-GPU-stack pair, from versions alone."""
    report = doctor.EnvReport(python="", executable="", packages=dict(versions), requires=requires or {})
    rules = {"requirement_conflict", "cpu_torch_with_gpu_stack"}
    return [f for f in doctor.findings(report) if f["rule"] in rules]


@dataclass
class Target:
    """What doctor inspects: a Python, the environment it runs with, and what the recipe expects."""
    python: str | None
    env: dict[str, str]
    what: str
    expected_swift: str | None = None
    pins: dict[str, str] | None = None
    command: list[str] | None = None      # the recipe's command: its code path's imports are checked


def _target(args) -> Target:
    """--python, a recipe's swift.python (with its env, version and pins), or this Python."""
    if args.python and args.recipe:
        raise InputError("doctor: give --python or a RECIPE, not both")
    if args.recipe:
        recipe = recipes.load(args.recipe)
        sw = recipe.swift
        env = recipes.resolve_env(recipe.env)
        from moeconsole.runner.recipes.swift.lint import swift_launch
        cmd = swift_launch(recipe)[0]       # an ms-swift config file's flags included
        if not sw.python:
            return Target(None, env, f"{args.recipe} (no swift.python: moeconsole's own Python)", sw.version,
                          sw.pins, cmd)
        py = recipes.fill(sw.python, {"recipe_dir": recipe.launch.recipe_dir})
        return Target(py, env, f"{args.recipe} (swift.python {py})", sw.version, sw.pins, cmd)
    return Target(args.python, {}, args.python or "moeconsole's own Python")


def _absent(target: Target) -> list[dict]:
    """A recipe's training Python that is not on this machine: nothing of it can be inspected here
    (doctor may be run where the recipe is written, not where it trains)."""
    return [{"level": "warning", "rule": "training_python_missing",
             "message": f"{target.python} (swift.python) does not exist on this machine: its packages, "
                        f"{'pins, ' if target.pins else ''}torch and GPUs were not inspected; run "
                        "`moeconsole doctor RECIPE` on the node that trains"}]


def _gpu() -> dict:
    try:
        from moeconsole.runner.telemetry.gpu import get_backend
        snap = get_backend().snapshot().to_dict()
        return {"available": snap.get("available"), "driver": snap.get("driver"), "reason": snap.get("reason"),
                "count": len(snap.get("gpus") or [])}
    except Exception as exc:  # doctor reports, never crashes
        return {"available": False, "reason": str(exc)}


def run(args) -> int:
    # The probe runs the training's Python in this directory, as `run` starts its command here.
    recipes.current_dir("the training's Python would be probed there")
    target = _target(args)
    pins = list((target.pins or {}).keys())
    if args.recipe and target.python and not os.path.exists(doctor.resolve_python(target.python)):
        return _report_absent(args, target)
    # The code path's imports, tried in the training Python: a recipe's command, or (--python) the
    # Megatron path when that Python has megatron-core (then it is meant for `megatron sft`).
    needs: list[doctor.Need] = []
    if target.python is not None:       # moeconsole's own Python is not where the recipe trains
        needs = doctor.code_path_imports(target.command)
    try:
        report = doctor.inspect(target.python, target.env, packages=pins, imports=[n.module for n in needs])
    except doctor.ProbeFailed as exc:
        raise InputError(f"doctor: {exc}") from None
    if target.command is None and not report.packages.get("megatron-core"):
        needs = []
    problems = doctor.findings(report, training_env=target.python is not None, expected_swift=target.expected_swift,
                               pins=target.pins, needs=needs,
                               model_reqs=doctor.model_requirements(target.command) if target.python else None)
    gpu = _gpu()
    what = target.what
    if args.json:
        print(jsonio.dumps({"v": 1, "target": what, "python": report.python, "executable": report.executable,
                            "platform": report.platform, "packages": report.packages, "torch": report.torch,
                            "nvml": report.nvml, "env": report.env, "imports": report.imports, "gpu": gpu,
                            "problems": problems}))
    else:
        print(f"python {report.python} at {report.executable} ({what}) on {report.platform}")
        for name, v in report.packages.items():
            if v or name in ("ms-swift", "megatron-core", "transformers", "torch", "flash-linear-attention"):
                src = doctor._vcs(report, name)
                print(f"  {name:26s} {v or NA}{'  (' + src + ')' if src else ''}")
        t = report.torch or {}
        if t.get("version"):
            nccl = f", NCCL {t['nccl']}" if t.get("nccl") else ""
            print(f"  torch CUDA {t.get('cuda') or 'none'}, {len(t.get('devices') or [])} device(s){nccl}")
        driver = (report.nvml or {}).get("driver") or gpu.get("driver")
        if gpu.get("available"):
            print(f"GPUs: {gpu['count']} (driver {driver})")
        else:
            print(f"GPUs: none ({gpu.get('reason')})")
        _print_problems(problems)
    sys.stdout.flush()
    return 1 if any(p["level"] == "error" for p in problems) else 0


def _print_problems(problems: list[dict]) -> None:
    for p in problems:
        print(f"{p['level']:7s} {p['rule']}: {p['message']}")
    if not any(p["level"] in ("error", "warning") for p in problems):
        print("no known-bad combination found")


def _report_absent(args, target: Target) -> int:
    problems = _absent(target)
    if args.json:
        print(jsonio.dumps({"v": 1, "target": target.what, "python": None, "executable": target.python,
                            "platform": None, "packages": {}, "torch": None, "nvml": None, "env": {},
                            "gpu": _gpu(), "problems": problems}))
    else:
        print(f"{target.what}: not inspected")
        _print_problems(problems)
    sys.stdout.flush()
    return 0
