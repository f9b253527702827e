"""``moeconsole lint RECIPE [--fix]``: recipe checks before anything is launched; ``--fix``
writes the corrected recipe (ms-swift flags renamed for the targeted version, ``--load``
replaced by a resume template) and keeps the original beside it as ``RECIPE.bak``."""
from __future__ import annotations

import os
import shutil
import sys

from runner import jsonio, recipe as recipes, yamlio
from runner.errors import InputError
from runner.lint import lint_recipe


def _leading_comments(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")


def fix(path: str, overrides: list[str]) -> list[str]:
    """Rewrite the recipe file with the fixes lint knows; returns what changed, in words."""
    from runner.swift.lint import fix_recipe

    recipe = recipes.load(path, overrides)
    try:
        text = yamlio.read_text(path, what="recipe file")
        raw = yamlio.loads(text, path)
    except yamlio.YamlError as exc:
        raise InputError(str(exc)) from None
    fixed, changes = fix_recipe(raw, recipe)
    if not changes:
        return []
    recipes.validate(fixed, path)       # never write a recipe that does not load
    body = yamlio.dumps(fixed, width=110)
    header = _leading_comments(text) + "# Corrected by `moeconsole lint --fix`: " + "; ".join(changes) + "\n"
    shutil.copy2(path, path + ".bak")
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(header + body)
    os.replace(tmp, path)
    return changes


def run(args) -> int:
    if getattr(args, "fix", False):
        changes = fix(args.recipe, args.overrides)
        for c in changes:
            sys.stderr.write(f"fixed: {c}\n")
        sys.stderr.write(f"{args.recipe}: {len(changes)} fix(es) written" + (f" (original in {args.recipe}.bak)\n"
                                                                            if changes else "\n"))
    recipe = recipes.load(args.recipe, args.overrides)
    problems = lint_recipe(recipe)
    errors = sum(1 for p in problems if p["level"] == "error")
    if args.json:
        print(jsonio.dumps({"v": 1, "recipe": args.recipe, "ok": errors == 0, "problems": problems}))
    else:
        for p in problems:
            print(f"{p['level']:7s} {p['rule']}: {p['message']}")
        warnings = sum(1 for p in problems if p["level"] == "warning")
        print(f"{args.recipe}: {errors} error(s), {warnings} warning(s)")
    return 1 if errors else 0
