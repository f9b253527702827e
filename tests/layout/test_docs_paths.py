"""Every file of this checkout that README.md and docs/ name (`runner/ingest/memory.py`,
`recipes/tiny-moe-slurm.yaml`, `scripts/slurm-local.sh`) is there: a newcomer who opens one
finds it (docs/memory.md named a module that had moved, docs/recipes.md a path without its
package)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOP = ("runner", "console", "recipes", "scripts", "docs", "tests", "bench", "moeconsole")
# A file path in backticks: a top folder, then parts, ending in a file's suffix (a dotted
# `module.function` reference, `runner/core/units.clip`, is a name, not a path).
PATH = re.compile(r"`((?:%s)/[A-Za-z0-9_./-]+\.(?:py|md|yaml|sh|toml|json|txt|tcss))(?::\d+)?`" % "|".join(TOP))


def named_paths() -> list[tuple[str, str]]:
    out = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for m in PATH.finditer(doc.read_text()):
            out.append((doc.name, m.group(1)))
    return out


def test_every_path_the_docs_name_exists():
    found = named_paths()
    assert len(found) > 50, "the pattern still finds the docs' paths"
    missing = sorted({(doc, p) for doc, p in found if not (REPO / p).exists()})
    assert not missing, missing
