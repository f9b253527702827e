"""One-off, re-runnable: put every import of the project's code under the one install name.

`runner.x` / `console.x` (module paths, in code, configs, recipes and docs) become
`moeconsole.runner.x` / `moeconsole.console.x`. Only names of real children of runner/ and
console/ are rewritten, and only where they stand as a module path (not `self.runner.x`, not a
file name such as `runner.log`). Running it twice changes nothing the second time.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runner", "console")
SUFFIXES = {".py", ".toml", ".yaml", ".yml", ".sh", ".md", ".cfg", ".ini", ".txt", ".c"}
SKIP_DIRS = {".git", ".venv", ".venv-swift", ".venv-bench", "build", "dist", "moeconsole", "__pycache__",
             ".swift-tiny", ".mypy_cache", ".import_linter_cache"}


def children(pkg: str) -> set[str]:
    base = ROOT / pkg
    names = {p.stem for p in base.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in base.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return names


def pattern() -> re.Pattern[str]:
    alts = "|".join(f"{pkg}\\.(?:{'|'.join(sorted(children(pkg), key=len, reverse=True))})" for pkg in PACKAGES)
    # not after a word, a dot, a slash or a dash: `self.runner.core`, `tests/runner.x`, `moeconsole.runner.x`
    return re.compile(rf"(?<![\w./-])({alts})(?![\w])")


BARE = re.compile(r"^(\s*)(from|import) (runner|console)(\s|$)", re.M)


def rewrite(text: str, rx: re.Pattern[str]) -> str:
    text = rx.sub(r"moeconsole.\1", text)
    return BARE.sub(r"\1\2 moeconsole.\3\4", text)


def files() -> list[Path]:
    out = []
    for p in ROOT.rglob("*"):
        if any(part in SKIP_DIRS for part in p.relative_to(ROOT).parts[:-1]) or p.is_dir() or p.is_symlink():
            continue
        if p.suffix in SUFFIXES or p.name in ("Makefile", "run"):
            if p.resolve() == Path(__file__).resolve():
                continue
            out.append(p)
    return out


def main() -> int:
    rx = pattern()
    changed = 0
    for p in files():
        try:
            text = p.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite(text, rx)
        if new != text:
            p.write_text(new)
            changed += 1
    print(f"{changed} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
