"""Secrets out of everything moeconsole shows or writes: logs, JSON, crash reports, recipe copies.

A flag or ``NAME=value`` assignment whose name says token/secret/password/api key keeps its
name and loses its value; a value that looks like a known token format (Hugging Face,
OpenAI, GitHub, Slack, AWS, JWT) or a URL password is masked wherever it appears; and the
literal values a run was given as secrets (secret-named environment variables, secret flags'
values) are masked wherever they show up later, e.g. when the training prints them.
Over-redaction is acceptable; a leaked token is not.

    r = Redactor.from_env(env, argv)   # collect the run's secret values
    r.redact(line)                     # any text: a log line, a crash summary, a JSON string
    r.redact_argv(argv)                # an argv safe to show
"""
from __future__ import annotations

import json
import os
import re
from typing import Iterable, Mapping, Sequence

SECRETS_FILE = "secrets.json"  # in a run directory, mode 0600: literal secrets the runner needs

MASK = "***"

_SECRET_WORDS = frozenset({"token", "secret", "password", "passwd", "pwd", "apikey", "credential",
                           "credentials", "passphrase"})
_KEY_QUALIFIERS = frozenset({"api", "access", "secret", "private", "auth", "license", "signing"})
# "pad_token", "eos_token" ... name tokenizer tokens, not credentials.
_TOKENIZER_WORDS = frozenset({"pad", "eos", "bos", "unk", "sep", "cls", "mask", "special", "start", "end"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN_VALUE = re.compile(
    r"hf_[A-Za-z0-9]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"
)
_URL_PASSWORD = re.compile(r"(://[^/:@\s]+:)[^/@\s]+@")


def is_secret_name(name: str) -> bool:
    """True for names like HF_TOKEN, --hub-token, WANDB_API_KEY, --db.password."""
    words = [w for w in re.split(r"[-_.]+", name.lower().lstrip("-")) if w]
    for i, w in enumerate(words):
        if w == "token" and i > 0 and words[i - 1] in _TOKENIZER_WORDS:
            continue
        if w in _SECRET_WORDS:
            return True
        if w == "key" and i > 0 and words[i - 1] in _KEY_QUALIFIERS:
            return True
        if w.endswith(("token", "secret", "apikey", "password")) and w not in {"tokens"}:
            return True
    return False


def mask_values(text: str) -> str:
    """Mask token-shaped substrings and URL passwords inside any text."""
    text = _TOKEN_VALUE.sub(MASK, text)
    return _URL_PASSWORD.sub(lambda m: m.group(1) + MASK + "@", text)


def secret_positions(argv: Sequence[str]) -> dict[int, str]:
    """Index -> the secret part of that argument: the value after a secret-named flag
    (``--hub_token V``) or the ``V`` of ``--hub_token=V`` (possibly empty). The one walk of an
    argv that everything masking, storing or hashing secrets relies on."""
    out: dict[int, str] = {}
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            continue
        name, eq, value = arg.partition("=")
        if not is_secret_name(name):
            continue
        if eq:
            out[i] = value
        elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            out[i + 1] = argv[i + 1]
    return out


def redact_argv(argv: list[str]) -> list[str]:
    hidden = secret_positions(argv)
    out: list[str] = []
    for i, arg in enumerate(argv):
        if i in hidden:
            out.append(f"{arg.partition('=')[0]}={MASK}" if arg.startswith("-") else MASK)
            continue
        name, eq, _value = arg.partition("=")
        if not arg.startswith("-") and eq and _ENV_NAME.fullmatch(name) and is_secret_name(name):
            out.append(f"{name}={MASK}")
        elif arg.startswith("-") and is_secret_name(name):
            out.append(arg)
        else:
            out.append(mask_values(arg))
    return out


# `name=value` / `name: value` inside free text (a log line echoing a config), name secret-like.
_ASSIGNMENT = re.compile(r"(?P<name>[A-Za-z_][\w.-]*)(?P<nq>['\"]?)(?P<sep>\s*[=:]\s*)(?P<q>['\"]?)"
                         r"(?P<value>[^\s'\",;]{4,})")


def mask_assignments(text: str) -> str:
    """``hub_token=abc``, ``"api_key": "abc"`` -> the value masked; tokenizer names left alone."""
    def sub(m: re.Match) -> str:
        if not is_secret_name(m.group("name")) or m.group("value") == MASK:
            return m.group(0)
        return f"{m.group('name')}{m.group('nq')}{m.group('sep')}{m.group('q')}{MASK}"
    return _ASSIGNMENT.sub(sub, text)


def secret_argv_values(argv: Sequence[str]) -> list[str]:
    """The values of secret-named flags: ``--hub_token V`` and ``--hub_token=V``."""
    return [v for v in secret_positions(argv).values() if v]


class Redactor:
    """Masks a run's known secret values and anything that looks like a secret."""

    MIN_LEN = 4  # shorter values would mask ordinary words

    def __init__(self, values: Iterable[str] = ()) -> None:
        self.values = sorted({v for v in values if isinstance(v, str) and len(v) >= self.MIN_LEN},
                             key=len, reverse=True)

    @classmethod
    def from_env(cls, env: Mapping[str, str], argv: Sequence[str] = ()) -> "Redactor":
        values = [v for k, v in env.items() if is_secret_name(k)]
        return cls(values + secret_argv_values(argv))

    @classmethod
    def for_run_dir(cls, run_dir: "str | os.PathLike[str]") -> "Redactor":
        """For readers of a run directory (the console, --json): the literal secrets the launcher
        kept in ``secrets.json``; token-shaped values are masked whatever their source."""
        values: list[str] = []
        try:
            fd = os.open(os.path.join(run_dir, SECRETS_FILE), os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            doc = None
        if isinstance(doc, dict):
            parts = [doc.get("env"), doc.get("argv")] if "v" in doc else [doc]
            for part in parts:
                if isinstance(part, dict):
                    values += [v for v in part.values() if isinstance(v, str)]
        return cls(values)

    def redact(self, text: str) -> str:
        for v in self.values:
            if v in text:
                text = text.replace(v, MASK)
        return mask_assignments(mask_values(text))

    def redact_argv(self, argv: Sequence[str]) -> list[str]:
        return [self._known(a) for a in redact_argv(list(argv))]

    def _known(self, text: str) -> str:
        for v in self.values:
            if v in text:
                text = text.replace(v, MASK)
        return text


def _quote(arg: str) -> str:
    if arg == "" or re.search(r"[\s'\"\\]", arg):
        return "'" + arg.replace("'", "'\"'\"'") + "'"
    return arg


def redact_cmdline(argv: list[str]) -> str:
    """One shell-like line with secrets masked."""
    return " ".join(_quote(a) for a in redact_argv(argv))
