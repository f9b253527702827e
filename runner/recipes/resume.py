"""The command line of a resumed attempt, from the recipe's resume settings (pure).

``resume.args`` is a list of arguments with a ``{checkpoint}`` placeholder (``{step}`` too),
e.g. ms-swift 4.6 on Megatron::

    resume:
      args: [--adapters, "{checkpoint}", --finetune, "false", --no_load_optim, "true", --no_load_rng, "true"]

Each flag of the template replaces every spelling of the same flag already in the command
(``--x v``, ``--x=v``, ``--x-with-dashes``, list values, bool negations ``--no_x``), so a
resume never duplicates a flag. The older single ``resume.arg`` (one flag set to the
checkpoint path) still works.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from moeconsole.runner.checkpoints.discover import step_of
from moeconsole.runner.recipes.cmdline import canon, groups, set_flag

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import Resume

PLACEHOLDER = "{checkpoint}"


def _unnegated(flag: str) -> str:
    """The flag's one name (``cmdline.canon``) with a ``no_`` negation dropped: ``--no_load_optim``
    and ``--load_optim`` set the same thing, so adding one replaces the other."""
    name = canon(flag)
    return name[3:] if name.startswith("no_") else name


def template_problems(resume: "Resume") -> list[str]:
    """Why a recipe's resume settings cannot work (empty when fine)."""
    args = resume.args
    if args is None:
        return []
    out = []
    if resume.arg:
        out.append("resume.arg and resume.args are both set: keep one (resume.args replaces resume.arg)")
    if not args or not all(isinstance(a, str) for a in args):
        out.append("resume.args must be a non-empty list of strings")
        return out
    if not args[0].startswith("--"):
        out.append(f"resume.args must start with a --flag, got {args[0]!r}")
    if not any(PLACEHOLDER in a for a in args):
        out.append("resume.args never uses {checkpoint}: the resumed attempt would not know where to resume from")
    return out


def resume_template(resume: "Resume") -> list[str] | None:
    """The arguments a resumed attempt adds, in either form: ``resume.args`` as written, or the
    older ``resume.arg`` as ``[arg, "{checkpoint}"]`` (what ``resume_argv`` does with it). None
    without resume settings. Every check of a resume reads it through here, so both forms get them."""
    if resume.args:
        return [str(a) for a in resume.args]
    if resume.arg:
        return [str(resume.arg), PLACEHOLDER]
    return None


def fill_checkpoint(template: list[str], checkpoint: str) -> list[str]:
    """The template with ``{checkpoint}`` and ``{step}`` (the checkpoint's step by the one rule,
    ``discover.step_of``; empty when it has none) filled in."""
    found = step_of(Path(checkpoint))
    step = "" if found is None else str(found)
    return [a.replace(PLACEHOLDER, checkpoint).replace("{step}", step) for a in template]


def resume_argv(argv: list[str], resume: "Resume", checkpoint: str) -> list[str]:
    """``argv`` with the recipe's resume arguments for ``checkpoint`` in place of any the
    command already had. Without resume settings ``argv`` comes back unchanged."""
    if resume.args:
        add = groups(fill_checkpoint([str(a) for a in resume.args], checkpoint))
        replaced = {_unnegated(g[0]) for g in add if g[0].startswith("--")}
        kept = [g for g in groups(argv) if not (g[0].startswith("--") and _unnegated(g[0]) in replaced)]
        return [a for g in kept + add for a in g]
    if resume.arg:
        return set_flag(argv, resume.arg, checkpoint)
    return list(argv)

