"""``moeconsole lint RECIPE``: recipe checks before anything is launched."""
from __future__ import annotations

from runner import jsonio, recipe as recipes
from runner.lint import lint_recipe


def run(args) -> int:
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
