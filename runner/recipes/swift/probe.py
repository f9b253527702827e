"""Ask the training environment's own ms-swift how it parses a command line, in a subprocess.

The probe builds ms-swift's parser (``HfArgumentParser`` over the command's argument class,
with ms-swift's own type-hint patch) and resolves each ``--flag`` the way argparse does, then
runs ``parse_known_args`` for value types; it never constructs the dataclass, so no
``__post_init__`` runs, no model or dataset is loaded and no process group is started.
``megatron *`` commands need megatron-core importable (ms-swift patches it on import); where
it is not, the probe says so and lint falls back to the shipped flag tables.

For ``swift sft/pt/rlhf`` the probe then imports the trainer class the command builds (ms-swift's
``TrainerFactory.TRAINER_MAPPING``, by ``--rlhf_type`` or ``--task_type``), as the run would at start-up:
a module that import needs and the environment lacks (ms-swift 4.6.0's GRPOTrainer imports ``msgspec``,
swift/rlhf_trainers/utils.py l.18, which ms-swift does not require) is named before anything starts.
"""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field

from moeconsole.runner.process.helper_command import run_child

# The one table of what a trainer's import needs beyond ms-swift's own requirements (``lint`` and ``run``'s
# pre-flight both read it; ``run`` asks the training Python only for these modules, by ``find_spec``, a
# tenth of a second, where importing ms-swift to ask costs 20 s and more): (command, --rlhf_type) -> the
# trainer the run builds and the modules its import needs. ms-swift 4.6.0:
# - `swift rlhf`: swift/rlhf_trainers/utils.py l.18 ``import msgspec`` (ms-swift does not require it).
#   GRPOTrainer imports it (grpo_trainer.py l.48 gkd_helpers, whose l.17 imports .utils; l.59 .utils),
#   GKDTrainer too (gkd_trainer.py l.19 gkd_helpers, l.27 .utils). DPO/ORPO/KTO/CPO/RM/PPO's trainers do not
#   (swift.rlhf_trainers is lazy, __init__.py l.4; their modules import rlhf_mixin, which imports .utils
#   only inside a function, rlhf_mixin.py l.54): importing each of them without msgspec succeeds.
# - `megatron rlhf`: every trainer (megatron/pipelines/train/rlhf.py l.20-24) subclasses
#   MegatronRLHFTrainer, whose module imports swift.rlhf_trainers.utils (megatron/trainers/rlhf_mixin.py l.9).
# - `swift sft`/`pt`, `megatron sft`/`pt`: swift.trainers / MegatronTrainer, of ms-swift's own requirements.
# The default --rlhf_type: `swift rlhf` 'dpo' (swift/arguments/rlhf_args.py l.233), `megatron rlhf` 'dpo'
# (swift/megatron/arguments/rlhf_args.py l.10).
TRAINER_NEEDS: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("swift rlhf", "grpo"): ("swift.rlhf_trainers.GRPOTrainer", ("msgspec",)),
    ("swift rlhf", "gkd"): ("swift.rlhf_trainers.GKDTrainer", ("msgspec",)),
    **{("megatron rlhf", kind): (f"swift.megatron.trainers.{cls}", ("msgspec",)) for kind, cls in (
        ("dpo", "MegatronDPOTrainer"), ("gkd", "MegatronGKDTrainer"), ("grpo", "MegatronGRPOTrainer"),
        ("kto", "MegatronKTOTrainer"), ("rm", "MegatronRewardTrainer"))},
}
DEFAULT_RLHF_TYPE = "dpo"


def trainer_needs(command: str, rlhf_type: str | None) -> tuple[str, tuple[str, ...]] | None:
    """The trainer ``command`` builds with ``--rlhf_type`` (None: not given, the default) and the modules
    its import needs that ms-swift does not require (``TRAINER_NEEDS``); None: nothing beyond ms-swift's."""
    return TRAINER_NEEDS.get((command, rlhf_type or DEFAULT_RLHF_TYPE)) if command.endswith(" rlhf") else None


MISSING = "import importlib.util, json, sys; print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))"


def modules_missing_in(python: str, modules: tuple[str, ...], *, timeout: float = 60.0,
                    env: dict[str, str] | None = None) -> list[str] | None:
    """The ``modules`` ``python`` cannot import (``importlib.util.find_spec``: found, not imported), with
    the run's environment ``env``; None: it could not be asked (the run meets it)."""
    try:
        rc, out, _ = run_child([python, "-c", MISSING, *modules], timeout=timeout, env=env)
        found = json.loads(out.strip().splitlines()[-1]) if rc == 0 and out.strip() else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None
    return [str(m) for m in found] if isinstance(found, list) else None

# Runs inside the training environment's Python: stdlib + ms-swift only, prints one JSON line.
PROBE = r'''
import io, json, sys, contextlib
command, argv = sys.argv[1], sys.argv[2:]
out = {"version": None, "flags": [], "error": None, "import_error": None}
try:
    import swift
    out["version"] = getattr(swift, "__version__", None)
    if command.startswith("megatron "):
        from swift.megatron.arguments import MegatronSftArguments, MegatronPretrainArguments, MegatronRLHFArguments
        cls = {"megatron sft": MegatronSftArguments, "megatron pt": MegatronPretrainArguments,
               "megatron rlhf": MegatronRLHFArguments}[command]
    else:
        from swift.arguments import SftArguments, PretrainArguments, RLHFArguments, ExportArguments
        cls = {"swift sft": SftArguments, "swift pt": PretrainArguments, "swift rlhf": RLHFArguments,
               "swift export": ExportArguments}[command]
    from transformers import HfArgumentParser
    try:
        from swift.utils.utils import _patch_get_type_hints
    except ImportError:
        _patch_get_type_hints = contextlib.nullcontext
    with _patch_get_type_hints():
        parser = HfArgumentParser([cls])
except Exception as exc:
    out["import_error"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out)); sys.exit(0)

def resolve(tok):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            r = parser._parse_optional(tok)
    except SystemExit:
        msg = err.getvalue().strip().splitlines()
        return {"token": tok, "status": "ambiguous", "message": msg[-1] if msg else "ambiguous"}
    tuples = r if isinstance(r, list) else ([r] if r else [])
    actions = [t[0] for t in tuples if t and t[0] is not None]
    if not actions:
        return {"token": tok, "status": "unknown"}
    opts = actions[0].option_strings
    status = "exact" if tok.split("=", 1)[0] in opts else "abbreviated"
    return {"token": tok, "status": status, "field": actions[0].dest, "option": opts[0]}

for a in argv:
    if a.startswith("--") and a != "--":
        out["flags"].append(resolve(a.split("=", 1)[0]))
if not any(f["status"] == "ambiguous" for f in out["flags"]):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            _ns, rest = parser.parse_known_args(argv)
        out["remaining"] = rest
    except SystemExit:
        lines = err.getvalue().strip().splitlines()
        out["error"] = lines[-1] if lines else "argparse exited"
if "remaining" in out and command in ("swift sft", "swift pt", "swift rlhf") and not (
        getattr(_ns, "external_plugins", None) or getattr(_ns, "custom_register_path", None)):
    # --tuner_type is a plain str to the parser; ms-swift refuses an unknown one only after the model loaded
    # (swift/pipelines/train/tuner.py prepare_adapter: ValueError(f'Unknown tuner_type: ...'), 4.6.0 l.350), against
    # its own list (swift/arguments/base_args/base_args.py get_supported_tuners, l.56-58, with the registered
    # tuners_map; a plugin may register more, so none is asked for then)
    try:
        from swift.arguments.base_args.base_args import get_supported_tuners
        tuners = sorted(get_supported_tuners())
        if getattr(_ns, "tuner_type", None) not in (None, *tuners):
            out["unknown_choice"] = {"flag": "--tuner_type", "value": _ns.tuner_type, "choices": tuners,
                                     "raised": f"ValueError: Unknown tuner_type: {_ns.tuner_type}"}
    except Exception:
        pass   # another ms-swift layout: the run meets it
if "remaining" in out and command in ("swift sft", "swift pt", "swift rlhf"):   # parsed, no argparse error
    # the trainer class the run builds (ms-swift's TrainerFactory: rlhf_type, else task_type; causal_lm for
    # sft/pt), imported as the run imports it: a module it needs and the environment lacks is named now
    # Only the trainer's own import is asked for a missing module (reviewed, R57): an ms-swift without
    # the factory (another layout) is no module the user must install, so it says nothing.
    path = None
    try:
        import importlib
        from swift.trainers.trainer_factory import TrainerFactory
        kind = getattr(_ns, "rlhf_type", None) if command == "swift rlhf" else (getattr(_ns, "task_type", None) or "causal_lm")
        path = TrainerFactory.TRAINER_MAPPING.get(kind)
    except Exception:
        pass   # an older ms-swift's layout: nothing to import here
    if path:
        try:
            mod, name = path.rsplit(".", 1)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                getattr(importlib.import_module(mod), name)
        except ModuleNotFoundError as exc:
            out["missing_module"] = {"module": exc.name or str(exc), "trainer": path, "kind": kind}
        except Exception:
            pass   # anything else is the run's to meet (a GPU library's probe)
print(json.dumps(out))
'''


@dataclass
class ProbeResult:
    """What ms-swift's parser in the training environment said."""
    python: str
    version: str | None = None
    flags: list[dict] = field(default_factory=list)
    error: str | None = None          # argparse's own message (wrong value type, ambiguous ...)
    import_error: str | None = None   # the argument class could not be imported there
    remaining: list[str] = field(default_factory=list)
    failed: str | None = None         # the probe itself could not run
    # the trainer class the command builds could not be imported: {module, trainer, kind} (a module its
    # import needs is not installed there: ms-swift 4.6.0's GRPOTrainer and msgspec)
    missing_module: dict | None = None
    # a value the parser takes and ms-swift refuses later, after the model loaded: {flag, value, choices, raised}
    unknown_choice: dict | None = None


def probe(python: str, command: str, argv: list[str], *, timeout: float = 120.0,
          env: dict[str, str] | None = None) -> ProbeResult:
    """Run the probe with ``python`` for ``command`` ("megatron sft", "swift sft") and ``argv``."""
    res = ProbeResult(python=python)
    try:
        rc, stdout, stderr = run_child([python, "-c", PROBE, command, *argv], timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        res.failed = f"{python}: {exc}"
        return res
    line = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith("{")), None)
    if line is None:
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        res.failed = f"probe exited {rc}: {tail}"
        return res
    data = json.loads(line)
    res.version = data.get("version")
    res.flags = data.get("flags") or []
    res.error = data.get("error")
    res.import_error = data.get("import_error")
    res.remaining = data.get("remaining") or []
    res.missing_module = data.get("missing_module") if isinstance(data.get("missing_module"), dict) else None
    res.unknown_choice = data.get("unknown_choice") if isinstance(data.get("unknown_choice"), dict) else None
    return res
