"""The one way moeconsole reads YAML (recipes, ``--set`` values, a run's ``recipe.yaml``).

PyYAML's ``safe_load`` speaks YAML 1.1, where ``on``, ``off``, ``yes``, ``no``, ``y`` and ``n``
are booleans: the documented ``notify: {on: [crash]}`` became ``{True: [crash]}``. It also lets
a duplicated key win silently, recurses once per nesting level (a recipe nested 5000 deep is a
``RecursionError``) and turns a 5000-digit number into a ``ValueError`` deep inside. This loader
resolves plain scalars by YAML 1.2's core schema (booleans are ``true``/``false`` only, no
dates, no octal ``017``), refuses a key given twice, refuses nesting
deeper than ``MAX_DEPTH`` and integers longer than ``MAX_INT_DIGITS``, and reports any problem as
one ``YamlError`` line with the place. Files are read by ``read_text``: a regular file, at most
``MAX_BYTES`` (``/dev/zero`` and a FIFO are refused, never read forever).
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

MAX_DEPTH = 64          # a recipe is 3 levels deep; an argv list one more
MAX_INT_DIGITS = 30     # no count, port, time or size needs more; int() refuses beyond 4300
MAX_BYTES = 1 << 20     # a recipe is a few KiB
# Aliases (``*name``) make a document larger than its text: nine nested lists of ten aliases each
# ("billion laughs") are 10**9 values in 1 KiB, and whatever walks them (validation, a copy, a
# hash) never ends. A document is refused when it holds more aliases than ``MAX_ALIASES`` or
# when, with every alias expanded, it would hold more than ``MAX_EXPANDED_NODES`` values.
MAX_ALIASES = 100
MAX_EXPANDED_NODES = 100_000


class YamlError(ValueError):
    """The text is not YAML we accept: one line with the place (``line L, column C``)."""


# YAML 1.2's core schema: what a plain scalar resolves to. YAML 1.1 (PyYAML's default) also reads
# yes/no/on/off as booleans, 017 as octal, 1:30 as 90 and 2024-01-01 as a date.
_CORE = {
    "tag:yaml.org,2002:bool": (re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    "tag:yaml.org,2002:null": (re.compile(r"^(?:~|null|Null|NULL|)$"), "~nN"),
    "tag:yaml.org,2002:int": (re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+)$"), "-+0123456789"),
    "tag:yaml.org,2002:float": (re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*|[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+|\.[0-9]+[eE][-+]?[0-9]+)"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), "-+.0123456789"),
}


class _Bounded(yaml.SafeLoader):
    """SafeLoader with bounded depth, aliases and integers: what every reading here shares."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def _compose_bounded(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Any:
        node = super().compose_document()
        _check_expansion(node, self._aliases)
        self._aliases = 0
        return node

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: F811 - counts aliases, then the depth rule
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_ALIASES} aliases (*name)",
                                                  self.peek_event().start_mark)
        return self._compose_bounded(parent, index)

    def _check_int(self, node: Any) -> str:
        text = str(node.value)
        digits = text.lstrip("+-").replace("_", "")
        if len(digits) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(digits)} digits is too long (at most {MAX_INT_DIGITS})",
                node.start_mark)
        return text


class _Loader(_Bounded):
    """YAML 1.2 booleans, unique keys, bounded depth and bounded integers: moeconsole's own files."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:
                    continue  # an unhashable key: the base class says so
                if first is not key_node:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} given twice (first at line {first.start_mark.line + 1})",
                        key_node.start_mark)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> int:
        text = self._check_int(node)
        digits = text.lstrip("+-")
        return int(text, 16) if digits.startswith("0x") else int(text, 10)  # 017 is 17, as in YAML 1.2


class _PyYamlLoader(_Bounded):
    """PyYAML's own ``safe_load`` reading (YAML 1.1: ``on``/``off``/``yes``/``no`` are booleans, ``1_000``
    is 1000, ``010`` is 8, ``1:30`` is 90, a key given twice keeps its last value), with the same bounds.
    For a file another program reads with ``yaml.safe_load`` (ms-swift's config file), whose values
    must be what that program sees, not what a recipe would mean."""

    def construct_yaml_int(self, node: Any) -> int:
        self._check_int(node)
        return super().construct_yaml_int(node)


def _check_expansion(root: Any, aliases: int) -> None:
    """Refuse a composed document whose aliases expand it beyond ``MAX_EXPANDED_NODES`` values
    (or into itself: ``&a [*a]``). Each distinct node is sized once (memoized), so the check
    costs the document's size, not its expansion's."""
    if root is None or not aliases:
        return
    sizes: dict[int, int] = {}
    busy: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in busy:
            raise yaml.composer.ComposerError(None, None, "an alias refers to the value it stands in", node.start_mark)
        busy.add(key)
        if isinstance(node, yaml.MappingNode):
            n = 1 + sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            n = 1 + sum(size(v) for v in node.value)
        else:
            n = 1
        busy.discard(key)
        if n > MAX_EXPANDED_NODES:
            raise yaml.composer.ComposerError(
                None, None, f"aliases expand this document beyond {MAX_EXPANDED_NODES} values", node.start_mark)
        sizes[key] = n
        return n

    size(root)


_Loader.yaml_implicit_resolvers = {}
for _tag, (_rx, _first) in _CORE.items():
    _Loader.add_implicit_resolver(_tag, _rx, list(_first) + ([""] if _tag.endswith("null") else []))
_Loader.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_PyYamlLoader.add_constructor("tag:yaml.org,2002:int", _PyYamlLoader.construct_yaml_int)


class _Dumper(yaml.SafeDumper):
    """SafeDumper that quotes exactly the strings ``loads`` would read as something else
    (``'1e-4'``, ``'true'``): what is written reads back the same."""


_Dumper.yaml_implicit_resolvers = dict(_Loader.yaml_implicit_resolvers)


def yaml_text(obj: Any, **kw: Any) -> str:
    """YAML text that ``loads`` reads back as ``obj`` (keys in their order, lists in flow style
    where short)."""
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=None, allow_unicode=True, **kw)


def loads_yaml(text: str, src: str = "<yaml>", *, as_pyyaml: bool = False) -> Any:
    """Parse YAML text; ``YamlError("SRC: line L, column C: problem")`` when it is not accepted.
    ``as_pyyaml``: the values PyYAML's ``safe_load`` gives (YAML 1.1, ``_PyYamlLoader``), for a file
    another program reads that way; the bounds hold either way."""
    try:
        return yaml.load(text, Loader=_PyYamlLoader if as_pyyaml else _Loader)  # noqa: S506 - both are SafeLoaders
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(f"{src}: {where}invalid YAML: {problem}") from None
    except (RecursionError, ValueError, OverflowError) as exc:  # belt and braces: never a traceback
        raise YamlError(f"{src}: invalid YAML: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None


# A YAML comment: a ``#`` at the start or after white space (YAML 1.2 [75] c-nb-comment-text, [77]
# s-b-comment: "comments must be separated from other tokens by white space characters"), outside a quoted
# scalar. A quote opens one only where a token starts (YAML 1.2 [120] c-single-quoted, [109] c-double-quoted:
# after white space, the start, or a flow indicator ``[{,`` / a ``:`` value indicator); ``it's`` is plain text.
_TOKEN_START = " \t[{,:"


def _comment_at(text: str) -> int | None:
    """Where YAML would start a comment in ``text`` (a ``#`` after white space or first, outside quotes), or
    None. Single quotes escape themselves by doubling (``''``), double quotes by a backslash."""
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                if text[i + 1:i + 2] == "'":
                    i += 1
                else:
                    quote = ""
        elif quote == '"':
            if c == "\\":
                i += 1
            elif c == '"':
                quote = ""
        elif c in "'\"" and (i == 0 or text[i - 1] in _TOKEN_START):
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            return i
        i += 1
    return None


def scalar(text: str) -> Any:
    """A ``--set`` value: YAML when it parses as YAML we accept, else the text as a string. A
    command-line value holds no comment: where YAML would read part of it as one (a ``#`` at its
    start or after a space, outside a quoted scalar: ``_comment_at``), the text is the value, as
    typed. ``--set 'log_format=#(?P<step>\\d+) ...'`` had set null (the recipe's default: no format),
    without a word (newcomer round 6); ``iter#(?P<step>\\d+) #tok ...`` had kept YAML's cut value, its
    ``#`` inside the text taken for a ``#`` kept (review R60). A ``#`` inside quotes stays YAML's
    (``"#abc"``, ``[a, "#b"]``)."""
    if text == "":
        return ""
    try:
        value = loads_yaml(text, "--set")
    except YamlError:
        return text
    if _comment_at(text) is not None:
        return text
    return value


def read_text(path: str | Path, *, max_bytes: int = MAX_BYTES, what: str = "file") -> str:
    """A small text file (a recipe): a regular file only, at most ``max_bytes``, UTF-8. A device
    (/dev/zero), a FIFO or a directory is refused at once instead of read forever; every problem
    is one ``YamlError`` line naming the path."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise YamlError(f"{path}: no such {what}") from None
    except OSError as exc:
        raise YamlError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise YamlError(f"{path}: {kind}; give a {what} (a regular file)")
        if st.st_size > max_bytes:
            raise YamlError(f"{path}: {st.st_size} bytes is too large for a {what} (at most {max_bytes})")
        data = b""
        while len(data) <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        raise YamlError(f"{path}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise YamlError(f"{path}: too large for a {what} (at most {max_bytes} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def load_yaml_file(path: str | Path, *, what: str = "file") -> Any:
    """``read_text`` then ``loads``."""
    return loads_yaml(read_text(path, what=what), str(path))
