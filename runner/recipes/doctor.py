"""The training environment, inspected: versions, GPUs and settings, and what is wrong with them.

``inspect(python, env)`` runs a small probe script (stdlib only; it imports torch and pynvml if
present, nothing else of the stack) in the Python that trains, with the recipe's environment.
``findings(env_report)`` turns what it saw into findings that each say why they matter. Both
halves are separate so the rules are tested without a GPU stack.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from moeconsole.runner.recipes.lint import problem
from moeconsole.runner.process.helper_command import run_child
from moeconsole.runner.core.memory import ALLOC_CONF_NEW, ALLOC_CONF_OLD, alloc_conf_env, version_tuple

SCHEMA_VERSION = 1
PACKAGES = ("ms-swift", "megatron-core", "mcore-bridge", "transformers", "torch", "transformer-engine",
            "transformer-engine-torch", "flash-linear-attention", "fla-core", "triton", "peft", "trl",
            "deepspeed", "flash-attn", "causal-conv1d", "nvidia-nccl-cu12", "nvidia-nccl-cu13")
ENV_KEYS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "FLA_USE_TMA", "FLA_NO_USE_TMA", "CUDA_VISIBLE_DEVICES",
            "CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_DEBUG")

PROBE = r'''
import importlib.metadata as md, json, os, platform, sys
packages, requires, sources = {}, {}, {}
for name in sys.argv[1].split(","):
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        packages[name] = None
        continue
    packages[name] = dist.version
    requires[name] = list(dist.requires or [])
    try:
        direct = dist.read_text("direct_url.json")
        if direct:
            sources[name] = json.loads(direct)
    except Exception:
        pass
out = {"python": sys.version.split()[0], "executable": sys.executable, "platform": platform.platform(),
       "packages": packages, "requires": requires, "sources": sources,
       "env": {k: os.environ.get(k) for k in sys.argv[2].split(",")}, "torch": None, "nvml": None}
if packages.get("torch"):
    try:
        import torch
        t = {"version": torch.__version__, "cuda": torch.version.cuda, "available": torch.cuda.is_available(),
             "devices": [], "nccl": None}
        if t["available"]:
            for i in range(torch.cuda.device_count()):
                t["devices"].append({"name": torch.cuda.get_device_name(i),
                                     "capability": list(torch.cuda.get_device_capability(i))})
            try:
                v = torch.cuda.nccl.version()
                t["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
            except Exception:
                pass
        out["torch"] = t
    except Exception as exc:
        out["torch"] = {"error": f"{type(exc).__name__}: {exc}"}
out["imports"] = None
if len(sys.argv) > 3 and sys.argv[3]:
    import importlib, traceback
    out["imports"] = {}
    for mod in sys.argv[3].split(","):
        try:
            importlib.import_module(mod)
            out["imports"][mod] = None
        except BaseException as exc:
            out["imports"][mod] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
try:
    import pynvml
    pynvml.nvmlInit()
    d = pynvml.nvmlSystemGetDriverVersion()
    out["nvml"] = {"driver": d.decode() if isinstance(d, bytes) else d}
except Exception as exc:
    out["nvml"] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
print(json.dumps(out))
'''


@dataclass
class EnvReport:
    """What the probe saw in one Python environment (schema ``v``)."""
    python: str
    executable: str
    platform: str = ""
    packages: dict[str, str | None] = field(default_factory=dict)
    requires: dict[str, list[str]] = field(default_factory=dict)
    sources: dict[str, dict] = field(default_factory=dict)     # PEP 610 direct_url.json (git builds)
    env: dict[str, str | None] = field(default_factory=dict)
    torch: dict[str, Any] | None = None
    nvml: dict[str, Any] | None = None
    imports: dict[str, str | None] | None = None     # module -> None (imported) or the exception, one line
    v: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProbeFailed(Exception):
    """The probe could not run in that Python (one line saying why)."""


def resolve_python(path: str) -> str:
    """A venv directory means its bin/python."""
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        path = os.path.join(path, "bin", "python")
    return path


def inspect(python: str | None = None, env: dict[str, str] | None = None, *, timeout: float = 120.0,
            packages: tuple[str, ...] | list[str] = (), imports: tuple[str, ...] | list[str] = ()) -> EnvReport:
    """Run the probe in ``python`` (default: this one); ``packages`` are looked up besides
    ``PACKAGES`` (a recipe's pins); ``imports`` are imported there, each on its own
    (``code_path_imports``), and what each raised is kept."""
    python = resolve_python(python) if python else sys.executable
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise ProbeFailed(f"{python}: not an executable Python")
    full_env = {**os.environ, **(env or {})}
    try:
        names = list(dict.fromkeys([*PACKAGES, *packages]))
        # ended with us, whatever ends us (its own process group, killed by PID): helper_command.run_child
        rc, stdout, stderr = run_child([python, "-c", PROBE, ",".join(names), ",".join(ENV_KEYS), ",".join(imports)],
                                       timeout=timeout, env=full_env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProbeFailed(f"{python}: {exc}") from None
    line = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith("{")), None)
    if rc != 0 or line is None:
        tail = (stderr.strip().splitlines() or [f"exit {rc}"])[-1]
        raise ProbeFailed(f"{python}: the probe failed: {tail}")
    data = json.loads(line)
    return EnvReport(**{k: data.get(k) for k in ("python", "executable", "platform", "packages", "requires",
                                                 "sources", "env", "torch", "nvml", "imports")})


def _vt(v: str | None) -> tuple[int, ...]:
    return version_tuple(v or "0")


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
                out.append(problem("error", "requirement_conflict", f"{pkg} {versions.get(pkg)} requires "
                                                               f"{req.name}{req.specifier} but {have} is installed"))
    return out


def _vcs(report: EnvReport, name: str) -> str | None:
    """``git <url>@<commit>`` when ``name`` was installed from a VCS checkout (PEP 610)."""
    src = report.sources.get(name) or {}
    info = src.get("vcs_info")
    if info:
        return f"{info.get('vcs', 'vcs')} {src.get('url', '')}@{str(info.get('commit_id', ''))[:12]}"
    return None


def findings(report: EnvReport, *, training_env: bool = True, expected_swift: str | None = None,
             pins: dict[str, str] | None = None, needs: list[Need] | None = None,
             model_reqs: list[tuple[str, str]] | None = None) -> list[dict]:
    """What is wrong or worth knowing in the training environment, each with its reason.
    ``training_env=False``: the report is moeconsole's own Python, which needs no ms-swift.
    ``expected_swift`` and ``pins``: the recipe's ``swift.version`` and ``swift.pins``."""
    pk = report.packages
    out = requirement_conflicts(pk, report.requires)
    if pk.get("ms-swift") and (pk.get("megatron-core") or pk.get("mcore-bridge")):
        out += megatron_requirements(pk, report.requires)
    if expected_swift:
        out += swift_version_findings(pk.get("ms-swift"), expected_swift)
    if pins:
        out += pin_findings(report, parse_pins(pins))
    swift, mcore = pk.get("ms-swift"), pk.get("megatron-core")
    if not swift and training_env:
        out.append(problem("error", "swift_missing", f"ms-swift is not installed in {report.executable}: `swift` and "
                                                "`megatron` recipes cannot run there"))
    elif not swift:
        out.append(problem("info", "swift_not_here", "ms-swift is not installed in moeconsole's own Python (it needs "
                                                "none): inspect the training environment with --python PATH or "
                                                "a RECIPE naming swift.python"))
    else:
        from moeconsole.runner.recipes.swift.flags import shipped_tables, tabled_releases
        shipped = [v for v, _ in shipped_tables()]
        if not any(_vt(v)[:2] == _vt(swift)[:2] for v in shipped):
            out.append(problem("warning", "swift_untabled_version", f"ms-swift {swift}: lint ships flag tables for "
                                                               f"{tabled_releases()} only; name swift.python in the "
                                                               "recipe so lint asks this ms-swift's own parser"))
        if not mcore:
            out.append(problem("warning", "megatron_core_missing", "megatron-core is not installed: `megatron sft` imports "
                                                              "it at start-up (swift/megatron/init.py), so only the "
                                                              "transformers path (`swift sft`) works here"))
        elif not pk.get("mcore-bridge") and _vt(swift) >= (4, 0):
            out.append(problem("warning", "mcore_bridge_missing", "mcore-bridge is not installed: ms-swift 4.x converts "
                                                             "HF <-> Megatron weights through it on the Megatron path"))
    tf = pk.get("transformers")
    if tf and (".dev" in tf or "dev" in tf.split("+")[0] or _vcs(report, "transformers")):
        out.append(problem("warning", "transformers_dev_build", f"transformers {tf} is a development build"
                                                           f"{' (' + str(_vcs(report, 'transformers')) + ')' if _vcs(report, 'transformers') else ''}: "
                                                           "ms-swift pins released versions; results may not "
                                                           "reproduce elsewhere"))
    fla = pk.get("flash-linear-attention") or pk.get("fla-core")
    fla_git = _vcs(report, "flash-linear-attention") or _vcs(report, "fla-core")
    if fla and fla.split("+")[0] == "0.5.0" and not fla_git:
        out.append(problem("warning", "fla_missing_gdn_backward_fix",
                      "flash-linear-attention 0.5.0 from PyPI lacks the gated-delta-rule backward fix (Qwen3.5's "
                      "linear-attention layers train on it); install a git main build "
                      "(pip install git+https://github.com/fla-org/flash-linear-attention), as the 397B record did"))
    elif fla and fla_git:
        out.append(problem("info", "fla_git_build", f"flash-linear-attention {fla} built from {fla_git}"))
    elif not fla and mcore and report.imports is None:
        out.append(problem("info", "fla_missing", "flash-linear-attention is not installed: Qwen3.5 / Qwen3-Next "
                                             "gated-delta-net layers need it"))
    if mcore and not (pk.get("transformer-engine") or pk.get("transformer-engine-torch")) and report.imports is None:
        out.append(problem("warning", "transformer_engine_missing", "transformer-engine is not installed: Megatron-Core's "
                                                               "fused layers (and ms-swift's default TE spec) need it"))
    out += _torch_findings(report)
    out += import_findings(report, needs or [])
    out += requirement_findings(report, model_reqs or [])
    return out


# ---- what the recipe's code path imports ---------------------------------------------------------
@dataclass(frozen=True)
class Need:
    """A module the training command imports on its way to the first step, and where."""
    module: str
    package: str          # what to install
    why: str              # the source that imports it


# The model families whose Megatron model has Gated DeltaNet (linear-attention) layers.
GDN_MODELS = re.compile(r"qwen3[._-]?5|qwen3[._-]?6|qwen3[._-]?next", re.I)
# ms-swift's ModelMeta.requires for a model family (swift/model/models/qwen.py, 4.6.0 l.1670:
# Qwen3.5 MoE; checked when the model loads).
MODEL_REQUIRES: tuple[tuple[re.Pattern, str, str], ...] = (
    (re.compile(r"qwen3[._-]?[56]\b.*-A\d+B|qwen3[._-]?5[._-]?moe", re.I), "transformers>=5.2.0",
     "ms-swift 4.6.0 swift/model/models/qwen.py l.1670 (qwen3_5_moe ModelMeta.requires)"),
)


def _argv_value(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == f"--{name}" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return None


def code_path_imports(argv: list[str] | None) -> list[Need]:
    """What ``megatron sft|pt|rlhf`` imports before its first step, from the sources (ms-swift 4.6.0,
    megatron-core 0.16.1, mcore-bridge 1.6.5). ``argv`` None: the Megatron path without a model."""
    from moeconsole.runner.recipes.swift.flags import command_of
    if argv is not None:
        command, _start = command_of([str(a) for a in argv])
        if not command or not command.startswith("megatron "):
            return []
    argv = [str(a) for a in argv or []]
    needs = [
        Need("swift.megatron.arguments", "ms-swift[megatron]",
             "ms-swift's Megatron arguments: megatron_args.py l.7 imports mcore_bridge.model, whose modules import "
             "transformer_engine (mcore_bridge model/modules/gated_delta_net.py l.6)"),
        Need("transformer_engine.pytorch", "transformer-engine[pytorch]",
             "Megatron-Core's Transformer Engine layers (ms-swift's default transformer_impl)"),
    ]
    tuner = (_argv_value(argv, "tuner_type") or _argv_value(argv, "train_type") or "full").lower()
    if tuner != "full" or _argv_value(argv, "adapters") or _argv_value(argv, "mcore_adapter"):
        needs.append(Need("peft", "peft>=0.15", "LoRA: MegatronArguments.__post_init__ require_version('peft>=0.15') "
                                                "(megatron_args.py 4.6.0 l.841-842)"))
    model = _argv_value(argv, "model") or ""
    if GDN_MODELS.search(model):
        needs += [Need(m, "flash-linear-attention",
                       f"{model}'s Gated DeltaNet layers: megatron-core ssm/gated_delta_net.py l.39-47 imports it "
                       "and raises ImportError at l.103-106 when the model is built")
                  for m in ("fla.modules.l2norm", "fla.ops.gated_delta_rule")]
    backend = _argv_value(argv, "attention_backend") or "flash"        # MegatronArguments default (4.6.0 l.519)
    if backend.startswith("flash"):
        needs.append(Need("flash_attn", "flash-attn",
                          f"--attention_backend {backend}: megatron-core language_module.py l.111-114 lets Transformer "
                          "Engine use only its flash-attn backend (NVTE_FLASH_ATTN=1, fused and unfused 0)"))
    if argv:
        needs.append(Need("transformers", "transformers", "ms-swift's model loading"))
    return needs


def model_requirements(argv: list[str] | None) -> list[tuple[str, str]]:
    """(requirement, source) ms-swift checks for the command's model when it loads."""
    model = _argv_value([str(a) for a in argv or []], "model") or ""
    return [(req, where) for pattern, req, where in MODEL_REQUIRES if pattern.search(model)]


def import_findings(report: EnvReport, needs: list[Need]) -> list[dict]:
    """Each module the code path imports that fails to import in the training Python: an error,
    with what raised and which source imports it."""
    out: list[dict] = []
    for need in needs:
        err = (report.imports or {}).get(need.module)
        if err:
            out.append(problem("error", "import_failed", f"import {need.module} fails in {report.executable}: {err} "
                                                    f"(needed by {need.why}; install {need.package})"))
    return out


def requirement_findings(report: EnvReport, reqs: list[tuple[str, str]]) -> list[dict]:
    """The model's minimum versions (ms-swift's ModelMeta.requires) against the training Python."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    installed = {canonicalize_name(k): v for k, v in report.packages.items() if v}
    out = []
    for text, where in reqs:
        req = Requirement(text)
        have = installed.get(canonicalize_name(req.name))
        if not have or not req.specifier.contains(have, prereleases=True):
            out.append(problem("error", "model_requirement", f"the model needs {text} ({where}) but "
                                                        f"{have or 'no ' + req.name} is installed"))
    return out


def _torch_findings(report: EnvReport) -> list[dict]:
    out: list[dict] = []
    pk, t = report.packages, report.torch or {}
    tv = pk.get("torch")
    if not tv:
        if report.executable:
            out.append(problem("warning", "torch_missing", f"torch is not installed in {report.executable}"))
        return out
    if "+cpu" in tv and (pk.get("megatron-core") or pk.get("flash-linear-attention")):
        out.append(problem("warning", "cpu_torch_with_gpu_stack", f"torch {tv} is a CPU build but GPU training "
                                                             "packages are installed"))
    if t.get("error"):
        out.append(problem("error", "torch_import_failed", f"import torch failed: {t['error']}"))
    elif not t.get("available"):
        out.append(problem("info", "no_cuda", f"torch {tv} sees no CUDA device here (CUDA {t.get('cuda') or 'none'})"))
    out += fla_tma_findings(pk.get("flash-linear-attention") or pk.get("fla-core"), t.get("devices") or [],
                            report.env)
    old, new = report.env.get(ALLOC_CONF_OLD), report.env.get(ALLOC_CONF_NEW)
    reads_new = alloc_conf_env(tv) == ALLOC_CONF_NEW      # one owner of the 2.9 rename: moeconsole.runner.core.memory
    if reads_new and old is not None:
        if new is None:
            out.append(problem("warning", "alloc_conf_renamed", f"PYTORCH_CUDA_ALLOC_CONF={old} with torch {tv}: since "
                                                           "2.9 torch reads PYTORCH_ALLOC_CONF (the old name is "
                                                           "deprecated); set PYTORCH_ALLOC_CONF instead"))
        elif new != old:
            out.append(problem("warning", "alloc_conf_renamed", f"PYTORCH_ALLOC_CONF={new} and PYTORCH_CUDA_ALLOC_CONF="
                                                           f"{old} disagree: torch {tv} reads PYTORCH_ALLOC_CONF"))
    elif alloc_conf_env(tv) == ALLOC_CONF_OLD and new is not None and old is None:
        out.append(problem("warning", "alloc_conf_renamed", f"PYTORCH_ALLOC_CONF is set but torch {tv} (< 2.9) only "
                                                       "reads PYTORCH_CUDA_ALLOC_CONF"))
    return out


# ---- ms-swift's Megatron requirements ------------------------------------------------------------
# What `megatron sft` checks itself at start-up (transformers' require_version raises ImportError):
# 4.6.0 MegatronArguments._check_bridge_backend (megatron_args.py l.819) and __post_init__ (l.842);
# 4.2.0 init.py _patch_mcore_bridge (l.124) and MegatronArguments.__post_init__ (l.636).
START_REQUIREMENTS: dict[tuple[int, int], tuple[tuple[str, str], ...]] = {
    (4, 6): (("mcore-bridge>=1.5.0", "megatron_args.py _check_bridge_backend"),
             ("peft>=0.15", "megatron_args.py MegatronArguments.__post_init__, for LoRA")),
    (4, 2): (("mcore-bridge>=1.2.0", "init.py _patch_mcore_bridge"),
             ("peft>=0.15", "megatron_args.py MegatronArguments.__post_init__, for LoRA")),
}


def _start_requirements(swift: str) -> tuple[tuple[str, str], ...]:
    """The checks of the newest listed release at or below ``swift`` (same major)."""
    have = _vt(swift)[:2]
    known = sorted((k for k in START_REQUIREMENTS if k[0] == have[0] and k <= have), reverse=True)
    return START_REQUIREMENTS[known[0]] if known else ()


def megatron_requirements(versions: dict[str, str | None], requires: dict[str, list[str]]) -> list[dict]:
    """ms-swift's ``megatron`` extra (what ``pip install ms-swift[megatron]`` brings: 4.6.0 declares
    mcore-bridge>=1.6.3, megatron-core>=0.16, peft>=0.15), against what is installed (a warning:
    the release was tested with those), and the versions ``megatron sft`` refuses to start
    without (an error)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    swift = versions.get("ms-swift") or ""
    installed = {canonicalize_name(k): v for k, v in versions.items() if v}
    out: list[dict] = []
    refused: set[str] = set()
    for text, where in _start_requirements(swift):
        req = Requirement(text)
        have = installed.get(canonicalize_name(req.name))
        if have and not req.specifier.contains(have, prereleases=True):
            refused.add(canonicalize_name(req.name))
            out.append(problem("error", "swift_megatron_requirement",
                          f"ms-swift {swift} `megatron sft` refuses to start with {req.name} {have}: it requires "
                          f"{req.name}{req.specifier} ({where}; ImportError at start-up)"))
    for text in requires.get("ms-swift") or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}) or not req.marker.evaluate({"extra": "megatron"}):
            continue
        name = canonicalize_name(req.name)
        have = installed.get(name)
        if have and name not in refused and req.specifier and not req.specifier.contains(have, prereleases=True):
            out.append(problem("warning", "swift_megatron_extra",
                          f"ms-swift {swift}[megatron] declares {req.name}{req.specifier} but {have} is installed "
                          f"(pip install 'ms-swift[megatron]=={swift}' brings the tested versions)"))
    return out


def swift_version_findings(installed: str | None, expected: str) -> list[dict]:
    """The recipe targets one ms-swift (``swift.version``) and the training Python has another."""
    from moeconsole.runner.recipes.swift.flags import prerelease_note, same_swift
    if not installed or same_swift(expected, installed):
        return []
    return [problem("warning", "swift_version_mismatch", f"the recipe targets ms-swift {expected} (swift.version) but "
                                                    f"{installed} is installed: its flags, defaults and save layouts "
                                                    "are the installed version's" + prerelease_note(expected, installed))]


# ---- flash-linear-attention and TMA -------------------------------------------------------------
# fla/utils.py (fla-core 0.3.2): is_tma_supported = capability >= 9 and FLA_NO_USE_TMA != '1' and
# triton has tensor descriptors: TMA on by default on Hopper and newer. From fla-core 0.4.0:
# ... and os.environ.get('FLA_USE_TMA', '0') == '1': off unless asked for.
FLA_TMA_OFF_BY_DEFAULT = (0, 4, 0)


def fla_tma_findings(fla: str | None, devices: list[dict], env: dict[str, str | None]) -> list[dict]:
    """FLA's Triton TMA kernels on compute capability 9.x (H100/H200) and 10.x (Blackwell): on
    when asked for with ``FLA_USE_TMA=1``, and on by default in FLA builds before 0.4.0."""
    tma_gpus = [d for d in devices if (d.get("capability") or [0])[0] >= 9]
    if not fla or not tma_gpus:
        return []
    gpu = tma_gpus[0]
    where = f"{gpu.get('name')} (sm_{''.join(map(str, gpu.get('capability') or []))})"
    if _vt(fla) < FLA_TMA_OFF_BY_DEFAULT:
        if env.get("FLA_NO_USE_TMA") == "1":
            return []
        return [problem("warning", "fla_tma_default_on", f"flash-linear-attention {fla} turns TMA on by default on {where} "
                                                   "(builds before 0.4.0; fla/utils.py is_tma_supported): its TMA "
                                                   "kernels have failed there; set FLA_NO_USE_TMA=1 or install "
                                                   ">= 0.4.0, where TMA is off unless FLA_USE_TMA=1")]
    if env.get("FLA_USE_TMA") == "1":
        return [problem("warning", "fla_tma_enabled", f"FLA_USE_TMA=1 on {where}: FLA's Triton TMA kernels have failed "
                                                "on Hopper and Blackwell GPUs; FLA's default (since 0.4.0) is off: "
                                                "unset it unless you verified the kernels on this stack")]
    return []


# ---- version pins ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pin:
    """One ``swift.pins`` entry: a version ("2.9.1": that public version, any local label such as
    +cu128), a PEP 440 specifier (">=1.5,<2"), or a VCS commit ("git:5aea42b")."""
    name: str
    spec: str

    @property
    def commit(self) -> str | None:
        return self.spec[4:].strip().lower() if self.spec.startswith("git:") else None

    def specifier(self):
        from packaging.specifiers import SpecifierSet
        text = self.spec.strip()
        return SpecifierSet(text if text[:1] in "<>=!~" else f"=={text}")


def parse_pins(raw: object) -> dict[str, Pin]:
    """``swift.pins`` checked: package name -> spec. Raises ValueError naming the bad entry."""
    from packaging.specifiers import InvalidSpecifier
    from packaging.utils import canonicalize_name
    if not isinstance(raw, dict):
        raise ValueError("expected a mapping of package name to version")
    out: dict[str, Pin] = {}
    for name, spec in raw.items():
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{name!r}: a package name must be a non-empty string")
        if not isinstance(spec, str) or not spec.strip():
            raise ValueError(f"{name}: expected a version string such as \"2.9.1\" or \"git:5aea42b\", got {spec!r}")
        pin = Pin(str(canonicalize_name(name)), spec.strip())
        if pin.commit is not None:
            if not (4 <= len(pin.commit) <= 40 and all(c in "0123456789abcdef" for c in pin.commit)):
                raise ValueError(f"{name}: {spec!r} is not git:<commit hash>")
        else:
            try:
                pin.specifier()
            except InvalidSpecifier:
                raise ValueError(f"{name}: {spec!r} is not a version or a version specifier") from None
        out[pin.name] = pin
    return out


def pin_findings(report: EnvReport, pins: dict[str, Pin]) -> list[dict]:
    """Each pinned package that is missing or differs in the training Python (a warning: the
    recipe was validated on the pinned stack)."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version
    installed = {str(canonicalize_name(k)): (k, v) for k, v in report.packages.items() if v}
    out = []
    for pin in pins.values():
        name, have = installed.get(pin.name, (pin.name, None))
        if have is None:
            out.append(problem("warning", "pin_mismatch", f"{pin.name} is pinned to {pin.spec} (swift.pins) but is not "
                                                     "installed in the training Python"))
            continue
        if pin.commit is not None:
            src = report.sources.get(name) or {}
            got = str((src.get("vcs_info") or {}).get("commit_id") or "")
            if not got.lower().startswith(pin.commit):
                what = f"commit {got[:12]}" if got else f"{have}, not a git build"
                out.append(problem("warning", "pin_mismatch", f"{name} is pinned to git commit {pin.commit} (swift.pins) "
                                                         f"but the installed one is {what}"))
            continue
        try:
            version = Version(have)
            spec = pin.specifier()
            ok = spec.contains(version, prereleases=True) or (
                "+" not in pin.spec and spec.contains(version.public, prereleases=True))
        except InvalidVersion:
            ok = False
        if not ok:
            out.append(problem("warning", "pin_mismatch", f"{name} is pinned to {pin.spec} (swift.pins) but {have} is "
                                                     "installed"))
    return out
