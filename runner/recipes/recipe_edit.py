"""Change values in a recipe's YAML text and keep everything else as written (pure).

``lint --fix`` corrects a few values (a renamed flag in the command, a resume template). A YAML
library that loads and dumps the file loses what a person put there: PyYAML drops every comment;
ruamel.yaml's round trip keeps most, but it reflows a flow-style list (``command: [megatron,
sft, ...]`` written over twenty lines becomes two) and drops the comments inside it (measured
with ruamel.yaml 0.19.1). Recipes are written that way, so this module edits the text itself:
PyYAML's composer gives the exact span of every node, and only the spans of values that change
are rewritten, in the quoting of their neighbours. A list is edited item by item (difflib), so
the untouched items keep their lines and comments.

``patch`` checks its own result: the edited text must load to exactly the wanted mapping, else
``EditError`` (the caller then says so, instead of writing something else).
"""
from __future__ import annotations

import difflib
import json
import re
from typing import Any

import yaml

Edit = tuple[int, int, str]  # replace text[start:end] with the string
_PLAIN_OK = re.compile(r"[A-Za-z0-9_./{}@+-][A-Za-z0-9_./{}@+=:-]*\Z")


class EditError(ValueError):
    """The text cannot be changed in place to the wanted values."""


def patch(text: str, new: dict) -> str:
    """``text`` (a YAML mapping) edited so that it loads as ``new``."""
    try:
        root = yaml.compose(text)
        old = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EditError(f"not YAML: {exc}") from None
    if not isinstance(root, yaml.MappingNode) or not isinstance(old, dict):
        raise EditError("a recipe must be a YAML mapping")
    edits: list[Edit] = []
    _mapping(text, root, old, new, edits)
    out = text
    for start, end, repl in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + repl + out[end:]
    if yaml.safe_load(out) != new:
        raise EditError("the edited text does not load as the corrected recipe")
    return out


def rename_key(text: str, place: list[str], new: str) -> str:
    """``text`` (a YAML mapping) with the key at ``place`` (the keys down to it, the last one
    the key itself) renamed to ``new``, in its quoting; nothing else moves (its comment, its
    value and their lines stay). ``EditError`` when there is no such key, or the result does not
    load as the same mapping with that one key renamed."""
    try:
        node = yaml.compose(text)
        old = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EditError(f"not YAML: {exc}") from None
    key_node = None
    for i, name in enumerate(place):
        if not isinstance(node, yaml.MappingNode):
            raise EditError(f"{'.'.join(place[:i])} is not a mapping")
        found = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == name]
        if len(found) != 1:
            raise EditError(f"no key {'.'.join(place[:i + 1])}")
        key_node, node = found[0]
    if key_node is None or not _PLAIN_OK.match(new):
        raise EditError(f"cannot rename {'.'.join(place)} to {new!r}")
    quote = key_node.style if key_node.style in ("'", '"') else ""
    out = text[:key_node.start_mark.index] + f"{quote}{new}{quote}" + text[key_node.end_mark.index:]
    want = _renamed(old, place, new)
    if yaml.safe_load(out) != want:
        raise EditError("the edited text does not load as the recipe with that key renamed")
    return out


def _renamed(data: Any, place: list[str], new: str) -> Any:
    """``data`` with the key at ``place`` renamed to ``new`` (its position kept)."""
    if not isinstance(data, dict):
        return data
    if len(place) == 1:
        return {(new if k == place[0] else k): v for k, v in data.items()}
    return {k: (_renamed(v, place[1:], new) if k == place[0] else v) for k, v in data.items()}


# ---- rendering --------------------------------------------------------------------------------
def _scalar_token(value: Any, style: str | None) -> str:
    """One scalar as a flow token, in the quoting ``style`` of the node it replaces ('"', "'" or
    None for plain) when that quoting can carry it."""
    if not isinstance(value, str):
        return json.dumps(value) if value is not None else "null"
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if style is None and _PLAIN_OK.match(value) and yaml.safe_load(value) == value and not value.startswith("{"):
        return value
    return json.dumps(value)


def _flow(value: Any, style: str | None = None) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v, style) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_scalar_token(k, None)}: {_flow(v, style)}" for k, v in value.items()) + "}"
    return _scalar_token(value, style)


def _style_of(nodes: list) -> str | None:
    """The quoting most scalar items of a list use (the new items follow it)."""
    styles = [n.style for n in nodes if isinstance(n, yaml.ScalarNode)]
    return max(set(styles), key=styles.count) if styles else None


def _line_start(text: str, i: int) -> int:
    return text.rfind("\n", 0, i) + 1


def _line_end(text: str, i: int) -> int:
    """Just past the newline of the line holding ``i`` (a trailing comment goes with it)."""
    j = text.find("\n", i)
    return len(text) if j < 0 else j + 1


def _value_end(text: str, node) -> int:
    """Where a value ends: a block node's end mark is the start of what follows it."""
    end = node.end_mark.index
    while end > node.start_mark.index and text[end - 1] in " \n":
        end -= 1
    return end


# ---- mappings ---------------------------------------------------------------------------------
def _mapping(text: str, node: yaml.MappingNode, old: dict, new: dict, edits: list[Edit]) -> None:
    entries = [(k.value, k, v) for k, v in node.value]
    for key, k_node, v_node in entries:
        if key not in new:
            edits.append(_remove_entry(text, node, k_node, v_node))
        elif old.get(key) != new[key]:
            _value(text, v_node, old.get(key), new[key], edits)
    added = [k for k in new if k not in old]
    if added:
        edits.append(_add_entries(text, node, entries, {k: new[k] for k in added}))


def _remove_entry(text: str, node: yaml.MappingNode, k_node, v_node) -> Edit:
    if node.flow_style:
        start, end = k_node.start_mark.index, v_node.end_mark.index
        rest = text[end:]
        m = re.match(r"\s*,\s*", rest)
        if m:
            return start, end + m.end(), ""
        before = text[:start]
        m2 = re.search(r",\s*\Z", before)
        return (m2.start() if m2 else start), end, ""
    return _line_start(text, k_node.start_mark.index), _line_end(text, _value_end(text, v_node)), ""


def _add_entries(text: str, node: yaml.MappingNode, entries: list, values: dict) -> Edit:
    if node.flow_style or not entries:
        close = node.end_mark.index - 1
        sep = ", " if entries else ""
        body = ", ".join(f"{_scalar_token(k, None)}: {_flow(v)}" for k, v in values.items())
        return close, close, sep + body
    _, k_last, v_last = entries[-1]
    indent = " " * k_last.start_mark.column
    at = _line_end(text, _value_end(text, v_last))
    lines = "".join(f"{indent}{_scalar_token(k, None)}: {_flow(v)}\n" for k, v in values.items())
    if at == len(text) and not text.endswith("\n"):
        lines = "\n" + lines
    return at, at, lines


# ---- values -----------------------------------------------------------------------------------
def _value(text: str, node, old: Any, new: Any, edits: list[Edit]) -> None:
    if isinstance(node, yaml.MappingNode) and isinstance(old, dict) and isinstance(new, dict):
        _mapping(text, node, old, new, edits)
    elif isinstance(node, yaml.SequenceNode) and isinstance(old, list) and isinstance(new, list) \
            and all(isinstance(n, yaml.ScalarNode) for n in node.value) and len(node.value) == len(old):
        _sequence(text, node, old, new, edits)
    else:
        start, end = node.start_mark.index, _value_end(text, node)
        style = node.style if isinstance(node, yaml.ScalarNode) else None
        if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
            edits.append((start, end, _flow(new, style)))
        else:  # a block list or mapping replaced by something else: written in flow style in its place
            edits.append((start, end, _flow(new)))


def _sequence(text: str, node: yaml.SequenceNode, old: list, new: list, edits: list[Edit]) -> None:
    """Edit a list of scalars item by item: unchanged items keep their place, line and comments."""
    items = node.value
    style = _style_of(items)
    flow = bool(node.flow_style)
    a, b = [json.dumps(v) for v in old], [json.dumps(v) for v in new]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        if op == "replace" and i2 - i1 == j2 - j1:
            for i, j in zip(range(i1, i2), range(j1, j2)):
                edits.append((items[i].start_mark.index, items[i].end_mark.index, _scalar_token(new[j], items[i].style)))
            continue
        if op in ("replace", "delete"):
            edits.append(_remove_items(text, items, i1, i2, flow))
        if op in ("replace", "insert"):
            edits.append(_insert_items(text, node, items, i1 if op == "insert" else i2, new[j1:j2], style, flow))


def _remove_items(text: str, items: list, i1: int, i2: int, flow: bool) -> Edit:
    if not flow:
        return _line_start(text, items[i1].start_mark.index), _line_end(text, items[i2 - 1].end_mark.index), ""
    if i2 < len(items):
        return items[i1].start_mark.index, items[i2].start_mark.index, ""
    if i1 > 0:
        return items[i1 - 1].end_mark.index, items[i2 - 1].end_mark.index, ""
    return items[i1].start_mark.index, items[i2 - 1].end_mark.index, ""


def _insert_items(text: str, node: yaml.SequenceNode, items: list, at: int, values: list, style: str | None,
                  flow: bool) -> Edit:
    tokens = [_scalar_token(v, style) for v in values]
    if flow:
        if at < len(items):
            pos = items[at].start_mark.index
            return pos, pos, "".join(t + ", " for t in tokens)
        if items:
            pos = items[-1].end_mark.index
            return pos, pos, "".join(", " + t for t in tokens)
        pos = node.end_mark.index - 1
        return pos, pos, ", ".join(tokens)
    if not items:
        raise EditError("cannot add to an empty block list")
    ref = items[min(at, len(items) - 1)]
    indent = " " * (ref.start_mark.column - 2)
    lines = "".join(f"{indent}- {t}\n" for t in tokens)
    pos = _line_start(text, ref.start_mark.index) if at < len(items) else _line_end(text, items[-1].end_mark.index)
    return pos, pos, lines
