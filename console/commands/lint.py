"""``moeconsole lint RECIPE [--fix]``: recipe checks before anything is launched; ``--fix``
writes the corrected recipe (ms-swift flags renamed for the targeted version, ``--load``
replaced by a resume template) and keeps the original beside it as ``RECIPE.bak``."""
from __future__ import annotations

import copy
import os
import stat
import sys
from typing import TYPE_CHECKING

import msgspec


from moeconsole.runner.rundir import jsonio
from moeconsole.runner.rundir.secrets import Redactor
from moeconsole.runner.recipes import recipe as recipes, recipe_edit
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.recipes.lint import launch_commands, lint_recipe
from moeconsole.runner.rundir import yamlio

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe


def _leading_comments(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")


class DoesNotLoad(InputError):
    """``fix`` wrote nothing because the recipe does not load (its renames made): the one refusal
    ``run`` answers with the list of problems. Any other (a missing file, a fix that cannot be
    applied in place) is said as it is (review R51: every one had been followed by "--fix writes
    only a recipe that loads" and the problem list, the real reason never printed)."""


def fix(path: str, overrides: list[str]) -> list[str]:
    """Rewrite the recipe file with the fixes lint knows; returns what changed, in words. Only
    the changed values are rewritten in the text (``moeconsole.runner.recipes.recipe_edit``): comments, key order,
    line breaks of a flow list and quoting stay as written."""
    from moeconsole.runner.recipes.swift.lint import fix_recipe

    try:
        text = yamlio.read_text(path, what="recipe file")
    except yamlio.YamlError as exc:
        raise InputError(str(exc)) from None
    original = text
    text, renames = _rename_mistyped_keys(path, text)
    try:
        raw = yamlio.loads_yaml(text, path)
    except yamlio.YamlError as exc:
        raise InputError(str(exc)) from None
    try:
        recipe = recipes.load(path, overrides) if not renames else recipes.from_raw(copy.deepcopy(raw), path, overrides)
    except InputError as exc:
        raise DoesNotLoad(str(exc)) from None
    fixed, changes = fix_recipe(raw, recipe)
    changes = renames + changes
    if not changes:
        return []
    recipes.validate(fixed, path)       # never write a recipe that does not load
    try:
        body = recipe_edit.patch(text, fixed)
    except recipe_edit.EditError as exc:
        raise InputError(f"{path}: cannot apply the fixes in place ({exc}); nothing written. "
                         f"The fixes: {'; '.join(changes)}") from None
    note = "# Corrected by `moeconsole lint --fix`: " + "; ".join(changes) + "\n"
    lead = _leading_comments(body)
    # New files renamed into place (never written through a planted link), the recipe's own mode kept.
    keep = stat.S_IMODE(os.stat(path).st_mode)
    jsonio.atomic_write_bytes(path + ".bak", original.encode(), mode=keep, follow_dir=True)
    jsonio.atomic_write_bytes(path, (lead + note + body[len(lead):]).encode(), mode=keep, follow_dir=True)
    return changes


MAX_RENAMES = 20   # mistyped keys renamed in one --fix (each found by loading the recipe again)


def _rename_mistyped_keys(path: str, text: str) -> tuple[str, list[str]]:
    """The recipe's text with each unknown key renamed to the key lint's own message suggests
    ("unknown key (did you mean max_restarts?)") when that suggestion is the only near one
    (``schema.sure_miss``), and the renames in words. It stops at the first other problem (the
    load then reports it) or at a key whose suggestion is not sure (the message says the
    choices: the user picks)."""
    renames: list[str] = []
    for _ in range(MAX_RENAMES):
        try:
            recipes.validate(yamlio.loads_yaml(text, path), path)
            break
        except recipes.RecipeError as exc:
            if not exc.meant or not exc.place:
                break
            place = exc.place.split(".")
            try:
                text = recipe_edit.rename_key(text, place, exc.meant)
            except recipe_edit.EditError:
                break
            renames.append(f"{exc.place}: renamed to {'.'.join(place[:-1] + [exc.meant])} (an unknown key; "
                           f"the only known one near it)")
        except (yamlio.YamlError, InputError):
            break
    return text, renames


def _estimate(recipe: "RunRecipe"):
    """The static memory table, or None (no config.json, or one lint already reported unreadable)."""
    from moeconsole.runner.recipes.lint import static_memory
    try:
        return static_memory(recipe)
    except InputError:
        return None
def _shown_commands(recipe: "RunRecipe") -> dict[str, list[str]]:
    """The commands the runner will run, secrets masked (lint output lands in CI logs)."""
    redactor = Redactor(recipes.secret_values(recipes.resolve_env(recipe.env), recipe.command))
    return {k: redactor.redact_argv(v) for k, v in launch_commands(recipe).items()}


def _refused(path: str, overrides: list[str], first: InputError) -> None:
    """A recipe that does not load: every problem at once (``recipes.every_problem``), the first
    as it was, the others on lines of their own before it; InputError (exit 2) with the count, and
    when the list was cut, that it was and that lint finds the rest once these are mended (the
    count had read as the total: 25 unknown keys said "20 problems": review R51)."""
    problems = recipes.every_problem(path, overrides)
    found = [str(p) for p in problems.found] or [str(first)]
    if len(found) == 1:   # one problem is one line (bad input's contract), cut or not
        if problems.whole:   # the root found, not a refusal it caused (args.x=1 after command=5)
            raise first if found[0] == str(first) else InputError(found[0])
        raise InputError(f"{found[0]} (lint looks no further until this is mended)")
    for line in found[:-1]:
        sys.stderr.write(f"moeconsole: {line}\n")
    if problems.whole:
        raise InputError(f"{found[-1]}\n{path}: {len(found)} problems; nothing else is checked until it loads")
    raise InputError(f"{found[-1]}\n{path}: {len(found)} problem{'s' if len(found) > 1 else ''} listed, and the list is "
                     f"cut (at most {recipes.MAX_PROBLEMS}, or a value lint cannot set aside to look further): "
                     "there may be more; lint again after mending these")


def run(args) -> int:
    if getattr(args, "fix", False):
        try:
            changes = fix(args.recipe, args.overrides)
        except DoesNotLoad as exc:   # --fix writes only a recipe that loads: say that nothing was
            sys.stderr.write(f"moeconsole: {args.recipe}: nothing written: --fix writes only a recipe that loads; "
                             "mend by hand what it cannot (below), then run it again\n")
            _refused(args.recipe, args.overrides, exc)
            raise
        for c in changes:
            sys.stderr.write(f"fixed: {c}\n")
        sys.stderr.write(f"{args.recipe}: {len(changes)} fix(es) written" + (f" (original in {args.recipe}.bak)\n"
                                                                            if changes else "\n"))
    try:
        recipe = recipes.load(args.recipe, args.overrides)
    except InputError as exc:
        _refused(args.recipe, args.overrides, exc)
    model_config = getattr(args, "model_config", None)
    if model_config:   # in place of memory.model_config
        memory = msgspec.structs.replace(recipe.memory, model_config=os.path.abspath(model_config))
        recipe = msgspec.structs.replace(recipe, memory=memory)
    problems = lint_recipe(recipe)
    errors = sum(1 for p in problems if p["level"] == "error")
    est = _estimate(recipe)
    if args.json:
        print(jsonio.dumps({"v": 1, "recipe": args.recipe, "ok": errors == 0, "problems": problems,
                            "memory": est.to_dict() if est else None, "commands": _shown_commands(recipe)}))
    else:
        for p in problems:
            print(f"{p['level']:7s} {p['rule']}: {p['message']}")
        if est is not None:
            from moeconsole.runner.recipes.memory_estimate import render_estimate
            print("\n".join(render_estimate(est)))
        warnings = sum(1 for p in problems if p["level"] == "warning")
        print(f"{args.recipe}: {errors} error(s), {warnings} warning(s)")
    return 1 if errors else 0
