"""Settings as declarative models: a recipe section is a msgspec ``Struct`` whose fields say
the key, its type, its default and its allowed values, and nothing else checks them.

- ``Section``: unknown keys are refused (``forbid_unknown_fields``).
- Numbers: ``Annotated[float, within(bounds.SECONDS)]`` (or one of the aliases below) takes the
  constraint *and* the message from ``moeconsole.runner.core.bounds`` (one range rule); NaN and infinity
  never pass a range, so every number a model holds is finite.
- Choices: ``Literal[...]``; text with a shape: ``text(pattern, "what it must be")``.
- Rules across keys (a ceiling below its floor): ``__post_init__`` raises
  ``ValueError("KEY: problem")``.

``convert(data, Model, "section")`` turns msgspec's ``ValidationError`` (``Expected `float` <=
3600.0 - at `$.kill.grace_s```) into today's one line: ``kill.grace_s: must be a finite number of
seconds >= 0 and <= 3600 (1 h), got 1e+308``, an unknown key with "did you mean X?".

Pure: msgspec and the standard library only.
"""
from __future__ import annotations

import copy
import difflib
import json
import re
import shlex
from typing import Annotated, Any, Iterable, Sequence, TypeVar

import msgspec
from msgspec import inspect as mi

from moeconsole.runner.core import bounds
from moeconsole.runner.core.errors import InputError, shown

T = TypeVar("T")


class Section(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """A recipe section: keys and defaults are its fields; any other key is refused."""


class SettingsError(InputError, ValueError):
    """A settings value a model refuses: ``place`` (``kill.grace_s``) and the ``problem``, one
    line. Both an InputError (exit 2) and a ValueError (what the operations sections raised)."""

    def __init__(self, place: str, problem: str, meant: str | None = None, across: tuple[str, ...] = ()) -> None:
        self.place, self.problem = place, problem
        self.meant = meant   # an unknown key at ``place``: the one key it was surely meant to be (``sure_miss``)
        # a rule across keys (``__post_init__``): the other keys of the section its words name
        # (``cooldown.floor_s`` for ceiling_s's rule); ``recipe.every_problem`` lists a rule broken
        # only by a default that stood in for a refused value as no problem of the user's
        self.across = across
        super().__init__(f"{place}: {problem}" if place else problem)


def within(rng: bounds.Range) -> msgspec.Meta:
    """The msgspec constraint of a ``bounds.Range`` (its bounds, and the range itself for the
    message). NaN fails every comparison, so a ranged float is always finite."""
    lo: dict[str, Any] = {"gt": rng.lo} if rng.lo_open else {"ge": rng.lo}
    if rng.integer:
        lo = {k: int(v) for k, v in lo.items()}
    return msgspec.Meta(**lo, le=int(rng.hi) if rng.integer else rng.hi, extra={"range": rng})


def text(pattern: str, must: str) -> msgspec.Meta:
    """A string matching ``pattern``; ``must`` says what it must be in the message."""
    return msgspec.Meta(pattern=pattern, extra={"must": must})


def described(must: str) -> msgspec.Meta:
    """No constraint; ``must`` says what the value must be in the message (``an argv``)."""
    return msgspec.Meta(extra={"must": must})


Seconds = Annotated[float, within(bounds.SECONDS)]
PositiveSeconds = Annotated[float, within(bounds.POSITIVE_SECONDS)]
Grace = Annotated[float, within(bounds.GRACE)]
Count = Annotated[int, within(bounds.COUNT)]
PositiveCount = Annotated[int, within(bounds.POSITIVE_COUNT)]
Port = Annotated[int, within(bounds.PORT)]
PortOrAny = Annotated[int, within(bounds.PORT_OR_ANY)]
NoNul = Annotated[str, text(r"^[^\x00]*$", "text without a NUL byte, which no command or file name can carry")]
PathText = Annotated[str, text(r"^[^\x00]+$", "a path (not empty, no NUL byte)")]


def convert(data: Any, model: type[T], place: str = "") -> T:
    """``data`` (plain values from YAML or JSON) as ``model``; SettingsError naming the key
    under ``place`` and the problem in words when it does not fit."""
    try:
        return msgspec.convert(data, model)
    except msgspec.ValidationError as exc:
        where, problem = refusal_words(str(exc), data, model)
        raise SettingsError(_dotted(place, where), problem, _meant(str(exc), data, model),
                            _across(str(exc), data, model, _dotted(place, where))) from None


def as_dict(value: msgspec.Struct) -> dict[str, Any]:
    """A model as its readers use it: plain JSON types, keys that hold no value (``UNSET``) left
    out. One conversion for state.json, crash reports, exit records and secrets.json."""
    out = msgspec.to_builtins(value)
    return out if isinstance(out, dict) else {}


def field_names(model: type) -> list[str]:
    """The keys a section accepts (their names in the recipe)."""
    info = mi.type_info(model)
    return [f.encode_name for f in info.fields] if isinstance(info, mi.StructType) else []


def _edits(a: str, b: str) -> int:
    """Levenshtein distance with adjacent swaps counted as one edit (`rnus` -> `runs`)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            d = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                d = min(d, prev2[j - 2] + 1)
            cur.append(d)
        prev2, prev = prev, cur
    return prev[-1]


def _typo_edits(word: str) -> int:
    """The edits a typo of ``word`` makes at most: 1 in a word of up to 4 letters, else 2."""
    return 1 if len(word.lstrip("-")) <= 4 else 2


NEAR_RATIO = 0.6   # difflib's similarity at which a word counts as near


def near_misses(word: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known words a mistyped ``word`` was probably meant to be, nearest first (at most ``n``):
    the one rule for a command, an option, a recipe key or a recipe file's name. Near: a
    similarity (difflib's ratio, case aside) of at least ``NEAR_RATIO`` (``init`` -> ``init_done``),
    or at most 1 edit for a word of up to 4 letters, 2 for a longer one (an adjacent swap is one
    edit: ``rnu`` -> ``run``). Nearest: the fewest edits, then the same length (a typo replaces a
    letter more often than it drops one: ``runz`` -> ``runs`` before ``run``), then similarity."""
    w = word.lower()
    limit = _typo_edits(word)
    scored = []
    for k in dict.fromkeys(known):
        kl = k.lower()
        edits, ratio = _edits(w, kl), difflib.SequenceMatcher(None, w, kl).ratio()
        if edits <= limit or ratio >= NEAR_RATIO:
            scored.append((edits, abs(len(kl) - len(w)), -ratio, k))
    return [k for *_, k in sorted(scored)[:n]]


def typo_misses(word: str, known: Iterable[str], n: int = 3) -> list[str]:
    """``near_misses`` that a typo or a shortening makes, nearest first: at most 1 edit for a word
    of up to 4 letters, 2 for a longer one, or one word the start of the other (`superv` ->
    `supervise`, `linting` -> `lint`). What a command line offers for a mistyped command: alike is
    not enough there, `moeconsole status` (another tool's word) was told "did you mean
    `moeconsole restart`?", a command that ends the run's processes, by similarity alone.

    A word that is the known word's end with two letters or more gone from its start is another
    word, not a typo (reviewed R37: `start` is 2 edits from `restart`, the prefix `re` dropped;
    `build` is not `rebuild`): a slip loses a letter, a shortening keeps the start."""
    w = word.lower()

    def typo(k: str) -> bool:
        if k.endswith(w) and len(k) - len(w) >= 2:
            return False
        return _edits(w, k) <= _typo_edits(word) or k.startswith(w) or w.startswith(k)
    return [k for k in near_misses(word, known, n) if typo(k.lower())]


def sure_miss(word: str, known: Iterable[str]) -> str | None:
    """The one known word a mistyped ``word`` was meant to be (``lint --fix`` renames the key
    to it): ``near_misses`` finds only it, and it is a typo away (at most 1 edit for a word of up
    to 4 letters, 2 for a longer one: ``max_restart`` -> ``max_restarts``, ``kil`` -> ``kill``).
    Else None: two near words (``heart``: ``restart`` or ``heartbeat``) or one only alike
    (``args`` is not a typo of ``alerts``) are the user's to pick."""
    close = near_misses(word, known)
    if len(close) == 1 and _edits(word.lower(), close[0].lower()) <= _typo_edits(word):
        return close[0]
    return None


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """"did you mean X?" for a near miss (``near_misses``), else the known words."""
    close = near_misses(word, known)
    return f"did you mean {' or '.join(close)}?" if close else f"known: {', '.join(known)}"


# ---- msgspec's error, in the words of a recipe ----------------------------------------------

_AT = re.compile(r"^(?P<msg>.*?)(?: - at `(?P<key>key` in `)?(?P<path>\$[^`]*)`)?$", re.S)
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<key>.*)`$", re.S)
_MISSING = re.compile(r"^Object missing required field `(?P<key>.*)`$", re.S)
_ABSENT = object()


def refusal_words(message: str, data: Any, model: type) -> tuple[str, str]:
    """(place, problem) for msgspec's validation ``message`` on ``data`` against ``model``."""
    m = _AT.match(message)
    msg, path, is_key = (m.group("msg"), m.group("path") or "$", bool(m.group("key"))) if m else (message, "$", False)
    info: Any = mi.type_info(model)
    value: Any = data
    names: list[str] = []
    for name, index in _STEP.findall(path[1:]):
        info = _walk(info, name or None)
        if name:
            names.append(name)
            value = value.get(name, _ABSENT) if isinstance(value, dict) else _ABSENT
        else:
            if index == "...":  # a mapping's value: msgspec does not say which key
                key = _culprit(data, model, names, value)
                if key is None:
                    value = _ABSENT
                else:
                    names.append(key)
                    value = value[key]
            else:
                names[-1:] = [f"{names[-1] if names else ''}[{index}]"]
                value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else _ABSENT
    place = ".".join(names)
    if is_key:
        return place, f"keys must be strings, got {msg.rsplit('got ', 1)[-1].strip('`')}"
    unknown = _UNKNOWN.match(msg)
    if unknown:
        key = unknown.group("key")
        return _dotted(place, key), f"unknown key ({did_you_mean(key, _fields(info))})"
    missing = _MISSING.match(msg)
    if missing:
        return _dotted(place, missing.group("key")), "missing"
    if not msg.startswith(("Expected `", "Invalid enum value", "Number out of range", "Integer value out of range")):
        # a rule across keys (__post_init__): "KEY: problem" of the section at ``place``
        key, sep, rest = msg.partition(": ")
        if sep and key in _fields(info):
            return _dotted(place, key), rest
        return place, msg
    return place, _mismatch(info, value)


def _across(message: str, data: Any, model: type, place: str) -> tuple[str, ...]:
    """For a rule across keys (``__post_init__``'s "KEY: problem", the branch of
    ``refusal_words`` that is neither msgspec's type, range nor key words): the other keys of the
    rule's section that its words name, as places; () for any other refusal."""
    m = _AT.match(message)
    msg, path = (m.group("msg"), m.group("path") or "$") if m else (message, "$")
    if msg.startswith(("Expected `", "Invalid enum value", "Number out of range", "Integer value out of range",
                       "Object contains unknown field", "Object missing required field")):
        return ()
    info: Any = mi.type_info(model)
    for name, index in _STEP.findall(path[1:]):
        if not name:
            return ()
        info = _walk(info, name)
    section = place.rpartition(".")[0] if "." in place else ""
    own = place.rpartition(".")[2]
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", msg.partition(": ")[2]))
    return tuple(_dotted(section, f) for f in _fields(info) if f != own and f in words)


def _meant(message: str, data: Any, model: type) -> str | None:
    """For msgspec's "unknown field" ``message``: the key it was surely meant to be
    (``sure_miss`` among the fields of the section it stands in), else None."""
    m = _AT.match(message)
    unknown = _UNKNOWN.match(m.group("msg")) if m else None
    if m is None or unknown is None:
        return None
    info: Any = mi.type_info(model)
    for name, index in _STEP.findall((m.group("path") or "$")[1:]):
        if not name:
            return None   # inside a list or a mapping of sections: left to the user
        info = _walk(info, name)
    return sure_miss(unknown.group("key"), _fields(info))


def _culprit(data: Any, model: type, names: list[str], mapping: Any) -> str | None:
    """The key of ``mapping`` (at ``names`` in ``data``) whose value the model refuses: the
    first one that alone still fails (error path only, on a copy)."""
    if not names or not isinstance(mapping, dict) or not isinstance(data, dict) or any("[" in n for n in names):
        return None
    for key, item in mapping.items():
        trial = copy.deepcopy(data)
        node = trial
        for n in names[:-1]:
            node = node[n]
        node[names[-1]] = {key: item}
        try:
            msgspec.convert(trial, model)
        except msgspec.ValidationError:
            return str(key)
    return None


def _mismatch(info: Any, value: Any) -> str:
    """What is wrong with ``value`` for a field of type ``info``."""
    if value is _ABSENT:   # a value msgspec could not point at: say what is expected
        return f"expected {_words(info)}"
    options = info.types if isinstance(info, mi.UnionType) else (info,)
    for opt in options:
        extra = opt.extra if isinstance(opt, mi.Metadata) else None
        base = opt.type if isinstance(opt, mi.Metadata) else opt
        if extra and "range" in extra and _is_numeric_value(value):
            return f"must be {extra['range'].describe()}, got {shown(value)}"
        if extra and "must" in extra and (isinstance(value, str) or not isinstance(base, mi.StrType)):
            return f"must be {extra['must']}, got {shown(value)}" + _as_list(base, value)
        if isinstance(base, mi.LiteralType):
            return f"must be one of {', '.join(map(str, base.values))}, got {shown(value)}"
    got = shown(value) if isinstance(value, bool) or value is None else f"{type(value).__name__} {shown(value)}"
    return f"expected {_words(info)}, got {got}"


_LIST_TYPES = (mi.ListType, mi.TupleType, mi.VarTupleType)


def _as_list(base: Any, value: Any) -> str:
    """For a list of arguments given as one string (``command: python train.py``): the list to
    write instead, split the way a shell would split it (it is never run through one)."""
    if not isinstance(value, str) or not isinstance(base, _LIST_TYPES):
        return ""
    try:
        words = shlex.split(value)
    except ValueError:   # an unbalanced quote: split at spaces
        words = value.split()
    return f"; write it as a list: {json.dumps(words)}" if words else ""


def _is_numeric_value(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _words(info: Any) -> str:
    if isinstance(info, mi.UnionType):
        words = [_words(t) for t in info.types]
        if "a number" in words:   # int | float: "a number", not "a whole number or a number"
            words = [w for w in words if w != "a whole number"]
        return " or ".join(dict.fromkeys(words))
    if isinstance(info, mi.Metadata):
        return _words(info.type)
    names: dict[type, str] = {mi.FloatType: "a number", mi.IntType: "a whole number", mi.StrType: "a string",
             mi.BoolType: "true/false", mi.NoneType: "null", mi.ListType: "a list", mi.TupleType: "a list",
             mi.VarTupleType: "a list", mi.SetType: "a list", mi.FrozenSetType: "a list",
             mi.DictType: "a mapping", mi.StructType: "a mapping", mi.AnyType: "a value"}
    if isinstance(info, mi.LiteralType):
        return "one of " + ", ".join(map(str, info.values))
    return names.get(type(info), "a value")


def _walk(info: Any, name: str | None) -> Any:
    """The type one step down ``info``: a struct's field ``name``, a list's item, a dict's value."""
    while True:
        if isinstance(info, mi.Metadata):
            info = info.type
        elif isinstance(info, mi.UnionType):
            inner = [t for t in info.types if not isinstance(t, mi.NoneType)]
            if len(inner) != 1:
                return mi.AnyType()
            info = inner[0]
        else:
            break
    if name is not None and isinstance(info, mi.StructType):
        for f in info.fields:
            if f.encode_name == name:
                return f.type
        return mi.AnyType()
    if name is None and isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
        return info.item_type
    if name is None and isinstance(info, mi.DictType):
        return info.value_type
    return mi.AnyType()


def _fields(info: Any) -> list[str]:
    while isinstance(info, (mi.Metadata, mi.UnionType)):
        info = info.type if isinstance(info, mi.Metadata) else next(
            (t for t in info.types if isinstance(t, mi.StructType)), mi.AnyType())
    return [f.encode_name for f in info.fields] if isinstance(info, mi.StructType) else []


def _dotted(place: str, key: str) -> str:
    """The setting's dotted name: ``place.key``, or whichever of them is given."""
    return f"{place}.{key}" if place and key else place or key
