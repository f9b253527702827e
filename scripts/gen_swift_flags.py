#!/usr/bin/env python3
"""Generate an ms-swift flag table (JSON data) from a released package's source, without
importing it: every ``.py`` file under ``swift/`` is parsed with ``ast``, the argument
dataclasses are found by name, their bases resolved through each module's imports, and the
fields collected in dataclass order (reverse MRO). Nothing of ms-swift is executed.

    scripts/gen_swift_flags.py ms_swift-4.2.0-py3-none-any.whl      # a wheel (or .tar.gz sdist)
    scripts/gen_swift_flags.py .venv-swift/lib/python3.12/site-packages   # an installed tree
    scripts/gen_swift_flags.py --git /path/ms-swift.git --rev v4.2.0      # a git tag
    scripts/gen_swift_flags.py --git /path/ms-swift.git --rev main        # a branch: 4.6.0.dev0

The table goes to runner/recipes/swift/flags/ms-swift-<version>.json.gz (``--out`` to choose), where
``moeconsole lint`` reads it. Bases that live outside ms-swift (transformers'
TrainingArguments behind ``swift sft``) cannot be read here and are listed as
``unresolved_bases``: lint treats such a table as partial.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "runner" / "recipes" / "swift" / "flags"
sys.path.insert(0, str(REPO))
from moeconsole.runner.recipes.swift.flags import table_name, write_table_file  # noqa: E402

# The commands lint knows, and the argument class each one parses (ms-swift's ROUTE_MAPPING
# sends ``megatron sft`` to swift/cli/_megatron/sft.py, which parses MegatronSftArguments).
COMMANDS = {
    "megatron sft": "MegatronSftArguments",
    "megatron pt": "MegatronPretrainArguments",
    "megatron rlhf": "MegatronRLHFArguments",
    "megatron export": "MegatronExportArguments",   # swift/cli/_megatron/export.py: to_hf/to_mcore, LoRA merge
    "swift sft": "SftArguments",
    "swift pt": "PretrainArguments",        # swift/cli/pt.py
    "swift rlhf": "RLHFArguments",          # swift/cli/rlhf.py: DPO, KTO, GRPO, GKD, ...
    "swift export": "ExportArguments",
}
_VERSION = re.compile(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", re.M)


def read_sources(target: str, rev: str | None = None) -> dict[str, str]:
    """``{"swift/x/y.py": source}`` from a wheel, an sdist, a directory, or a git revision."""
    out: dict[str, str] = {}
    if rev is not None:
        names = subprocess.run(["git", "--git-dir", target, "ls-tree", "-r", "--name-only", rev, "swift"],
                               check=True, capture_output=True, text=True).stdout.split()
        for name in names:
            if name.endswith(".py"):
                out[name] = subprocess.run(["git", "--git-dir", target, "show", f"{rev}:{name}"], check=True,
                                           capture_output=True, text=True).stdout
        return out
    p = Path(target)
    if p.is_dir():
        root = p if (p / "swift").is_dir() else None
        if root is None:
            raise SystemExit(f"{p}: no swift/ package inside")
        for f in (root / "swift").rglob("*.py"):
            out[str(f.relative_to(root))] = f.read_text(encoding="utf-8", errors="replace")
    elif p.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(p) as z:
            for name in z.namelist():
                if name.startswith("swift/") and name.endswith(".py"):
                    out[name] = z.read(name).decode("utf-8", "replace")
    elif p.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(p) as t:
            for m in t.getmembers():
                parts = m.name.split("/", 1)
                if len(parts) == 2 and parts[1].startswith("swift/") and m.name.endswith(".py") and m.isfile():
                    data = t.extractfile(m)
                    if data is not None:
                        out[parts[1]] = data.read().decode("utf-8", "replace")
    else:
        raise SystemExit(f"{p}: expected a wheel, an sdist (.tar.gz), a directory, or --git DIR --rev TAG")
    if not out:
        raise SystemExit(f"{target}: no swift/*.py files found")
    return out


def _module_name(path: str) -> str:
    mod = path[:-3].replace("/", ".")
    return mod[: -len(".__init__")] if mod.endswith(".__init__") else mod


class Index:
    """Classes and imports of every module, enough to resolve a base class name."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.classes: dict[tuple[str, str], ast.ClassDef] = {}
        self.imports: dict[str, dict[str, tuple[str, str]]] = {}
        self.by_name: dict[str, list[str]] = {}
        self.packages = {_module_name(p) for p in sources if p.endswith("__init__.py")}
        for path, src in sources.items():
            mod = _module_name(path)
            try:
                tree = ast.parse(src)
            except SyntaxError:
                continue
            imports: dict[str, tuple[str, str]] = {}
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    self.classes[(mod, node.name)] = node
                    self.by_name.setdefault(node.name, []).append(mod)
                elif isinstance(node, ast.ImportFrom):
                    base = self._resolve_from(mod, node, path.endswith("__init__.py"))
                    for alias in node.names:
                        imports[alias.asname or alias.name] = (base, alias.name)
            self.imports[mod] = imports

    @staticmethod
    def _resolve_from(mod: str, node: ast.ImportFrom, is_pkg: bool) -> str:
        if not node.level:
            return node.module or ""
        parts = mod.split(".")
        keep = len(parts) - node.level + (1 if is_pkg else 0)
        base = ".".join(parts[:keep])
        return f"{base}.{node.module}" if node.module else base

    def find(self, mod: str, name: str, depth: int = 0) -> tuple[str, str] | None:
        """Where the class ``name`` seen from module ``mod`` is defined (following re-exports)."""
        if (mod, name) in self.classes:
            return mod, name
        if depth > 10:
            return None
        src = self.imports.get(mod, {}).get(name)
        if src:
            found = self.find(src[0], src[1], depth + 1)
            if found:
                return found
        if depth == 0 and len(self.by_name.get(name, [])) == 1:
            return self.by_name[name][0], name
        return None


def _base_names(node: ast.ClassDef) -> list[str]:
    out = []
    for b in node.bases:
        if isinstance(b, ast.Name):
            out.append(b.id)
        elif isinstance(b, ast.Attribute):
            out.append(b.attr)
        elif isinstance(b, ast.Subscript) and isinstance(b.value, ast.Name):
            out.append(b.value.id)      # Generic[...]
    return out


def _mro(index: Index, key: tuple[str, str], unresolved: set[str]) -> list[tuple[str, str]]:
    """C3 linearisation over the classes we can read; unreadable bases are noted and skipped."""
    node = index.classes[key]
    parents = []
    for name in _base_names(node):
        found = index.find(key[0], name)
        if found is None:
            if name not in ("object", "Generic", "ABC"):
                unresolved.add(name)
            continue
        parents.append(found)
    seqs = [_mro(index, p, unresolved) for p in parents] + [parents]
    result = [key]
    while True:
        seqs = [s for s in seqs if s]
        if not seqs:
            return result
        for s in seqs:
            head = s[0]
            if not any(head in t[1:] for t in seqs):
                break
        else:
            raise SystemExit(f"inconsistent MRO for {key[1]}")
        result.append(head)
        for t in seqs:
            if t and t[0] == head:
                del t[0]


def _literal(node: ast.AST | None) -> Any:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return {"expr": ast.unparse(node)}


def _field(stmt: ast.AnnAssign) -> dict[str, Any]:
    ann = ast.unparse(stmt.annotation)
    entry: dict[str, Any] = {"type": ann}
    value = stmt.value
    if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "field":
        kws = {k.arg: k.value for k in value.keywords if k.arg}
        if "default" in kws:
            entry["default"] = _literal(kws["default"])
        elif "default_factory" in kws:
            f = kws["default_factory"]
            entry["default"] = _literal(f.body) if isinstance(f, ast.Lambda) else {"factory": ast.unparse(f)}
        else:
            entry["required"] = True
    elif value is None:
        entry["required"] = True
    else:
        entry["default"] = _literal(value)
    lit = re.search(r"Literal\[(.*)\]", ann)
    if lit:
        try:
            choices = ast.literal_eval(f"[{lit.group(1)}]")
            entry["choices"] = [c for c in choices if isinstance(c, (str, int, float)) or c is None]
        except (ValueError, SyntaxError):
            pass
    return entry


def fields_of(index: Index, class_name: str) -> tuple[dict[str, dict], list[str], list[str]]:
    """Fields of a dataclass in dataclass order, the MRO read, and bases we could not read."""
    mods = index.by_name.get(class_name)
    if not mods:
        raise KeyError(class_name)
    key = (sorted(mods, key=len)[0], class_name)
    unresolved: set[str] = set()
    mro = _mro(index, key, unresolved)
    fields: dict[str, dict] = {}
    for k in reversed(mro):
        for stmt in index.classes[k].body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if "ClassVar" in ast.unparse(stmt.annotation):
                    continue
                name = stmt.target.id
                entry = _field(stmt)
                entry["defined_in"] = f"{k[0]}.{k[1]}"
                fields[name] = entry        # as in dataclasses: a redefinition keeps the base's position
    return fields, [f"{m}.{c}" for m, c in mro], sorted(unresolved)


def build_table(sources: dict[str, str], origin: str) -> dict[str, Any]:
    version_src = sources.get("swift/version.py", "")
    m = _VERSION.search(version_src)
    version = m.group(1) if m else "unknown"
    index = Index(sources)
    commands: dict[str, Any] = {}
    for command, cls in COMMANDS.items():
        try:
            fields, mro, unresolved = fields_of(index, cls)
        except KeyError:
            continue
        commands[command] = {"class": cls, "mro": mro, "unresolved_bases": unresolved, "fields": fields}
    return {"v": 1, "ms_swift_version": version, "source": origin,
            "generator": "scripts/gen_swift_flags.py", "commands": commands}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="wheel, sdist, directory holding swift/, or (with --rev) a git dir")
    ap.add_argument("--git", action="store_true", help="SOURCE is a git directory; read --rev from it")
    ap.add_argument("--rev", help="git revision (tag) to read")
    ap.add_argument("--out", help="output file (default runner/recipes/swift/flags/ms-swift-<version>.json.gz)")
    ns = ap.parse_args(argv)
    if ns.git and not ns.rev:
        ap.error("--git needs --rev")
    sources = read_sources(ns.source, ns.rev if ns.git else None)
    origin = Path(ns.source).name
    if ns.git:      # the commit itself, not just a name that moves (``main``, ``HEAD``)
        sha, date = subprocess.run(["git", "--git-dir", ns.source, "log", "-1", "--format=%H %cs", ns.rev],
                                   check=True, capture_output=True, text=True).stdout.split()
        origin = f"git {ns.rev} {sha} ({date})"
    table = build_table(sources, origin)
    out = Path(ns.out) if ns.out else OUT_DIR / table_name(table["ms_swift_version"])
    out.parent.mkdir(parents=True, exist_ok=True)
    write_table_file(out, table)
    counts = ", ".join(f"{c}: {len(t['fields'])}" for c, t in table["commands"].items())
    print(f"{out}: ms-swift {table['ms_swift_version']} ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
