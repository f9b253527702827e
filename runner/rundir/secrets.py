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

import functools
import json
import os
import re
from typing import Iterable, Mapping, Sequence

SECRETS_FILE = "secrets.json"  # in a run directory, mode 0600: literal secrets the runner needs

MASK = "***"

# The secret-name rule. A name is split into words (``HF_TOKEN`` -> hf, token; ``apiKey`` -> api,
# key) and judged on whole words, never substrings: ``AUTHOR`` is not ``AUTH``, ``token_acc``
# (a metric) is not ``HF_TOKEN``.
# Words that make any name a secret, wherever they stand:
_SECRET_WORDS = frozenset({"secret", "secrets", "password", "passwd", "passphrase", "apikey", "credential",
                           "credentials", "privatekey", "accesskey"})
# Words that make a name a secret when they end it (``HF_TOKEN``, ``DB_PWD``, ``PROXY_AUTH``):
# followed by another word they name something else (``token_acc``, ``auth_url``).
_LAST_WORDS = frozenset({"token", "pwd", "auth", "cookie", "sessionid"})
# "key" is a secret after these words (``WANDB_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``--ssh-key``).
_KEY_QUALIFIERS = frozenset({"api", "access", "secret", "private", "auth", "license", "signing", "ssh",
                             "encryption", "master", "client", "service"})
# "token" after these words names a tokenizer's token or a per-token quantity, not a credential:
# ``pad_token``, ``eos_token``, ``image_token``, ``loss_per_token``, ``max_token``.
_NOT_CREDENTIAL_BEFORE_TOKEN = frozenset({
    "pad", "eos", "bos", "unk", "sep", "cls", "mask", "special", "start", "end", "image", "video", "audio",
    "vision", "think", "tool", "im", "per", "num", "max", "min", "first", "last", "avg", "mean", "total",
    "next", "prev", "new", "each", "added", "split", "stop", "decoder", "default", "ignore", "label"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
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


def name_words(name: str) -> list[str]:
    """A name's words, lower case: ``--hub-token`` -> [hub, token], ``HF_TOKEN_2`` -> [hf, token]
    (a trailing number is a copy's index), ``apiKey`` -> [api, key]."""
    words = [w.lower() for part in re.split(r"[^A-Za-z0-9]+", name) if part for w in _CAMEL.split(part) if w]
    while words and words[-1].isdigit():
        words.pop()
    return words


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """The one secret-name rule (runner.recipes.recipe, the redactor, lint and the ingest all ask here):
    HF_TOKEN, --hub-token, WANDB_API_KEY, --db.password, MY_SECRET_VALUE, apiKey are secrets;
    AUTHOR, PAD_TOKEN, token_acc, max_new_tokens, tokens_per_s are not."""
    words = name_words(name)
    for i, w in enumerate(words):
        if w in _SECRET_WORDS:
            return True
        last = i == len(words) - 1
        if w == "key" and i > 0 and words[i - 1] in _KEY_QUALIFIERS:
            return True
        if w in _LAST_WORDS and last:
            if w == "token" and i > 0 and words[i - 1] in _NOT_CREDENTIAL_BEFORE_TOKEN:
                return False
            if w == "pwd" and i == 0:
                return False  # PWD is the working directory
            return True
        if last and len(w) > 5 and w.endswith(("token", "secret", "apikey", "password")):
            return True  # hftoken, accesstoken, clientsecret
    return False


def holds_token(text: str) -> bool:
    """A token-shaped value (Hugging Face, OpenAI, GitHub, Slack, AWS, JWT) inside ``text``."""
    return _TOKEN_VALUE.search(text) is not None


def mask_values(text: str, mask: str = MASK) -> str:
    """Mask token-shaped substrings and URL passwords inside any text."""
    text = _TOKEN_VALUE.sub(mask, text)
    return _URL_PASSWORD.sub(lambda m: m.group(1) + mask + "@", text)


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


def mask_field(name: str, value: object) -> object:
    """One named value of a metric record (an ``extra`` field): masked when its name is a
    secret's, a string with tokens and URL passwords masked; numbers as they are unless the
    name says secret."""
    if is_secret_name(name):
        return MASK if value is not None else None
    if isinstance(value, str):
        return mask_values(value)
    return value


# Bytes every token shape and URL password starts with: a slice of JSON lines holding none of
# them needs no regex (the live ingest path stays a handful of memchr scans per slice).
_VALUE_MARKS = (b"hf_", b"sk-", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_", b"xox", b"AKIA",
                b"eyJ", b"://")


def mask_lines(lines: list[bytes], known: Sequence[str] = (), probe: bytes | None = None) -> list[bytes]:
    """JSON lines (metric records as the ingest writes them) with tokens, URL passwords and the
    ``known`` secret values masked inside their strings; the list itself when none holds any.
    ``probe``: the only bytes that can hold one (a template's text values), when the caller
    knows them: far less to scan than the lines. A line that does is read, masked value by
    value and written again (``jsonio.dumps``'s form), so a mask never lands in a number or
    breaks the JSON."""
    if not lines:
        return lines
    blob = b"".join(lines) if probe is None else probe
    known_b = [v.encode() for v in known]
    marks = [m for m in _VALUE_MARKS if m in blob] + [v for v in known_b if v in blob]
    if not marks:
        return lines
    from runner.rundir import jsonio
    redactor = Redactor(known)
    out = []
    for line in lines:
        if any(m in line for m in marks):
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if isinstance(rec, dict):
                line = (jsonio.dumps(redactor.mask_record(rec)) + "\n").encode()
        out.append(line)
    return out


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
        from runner.rundir import runfiles
        doc = runfiles.read_secrets(os.fspath(run_dir))
        return cls(list(doc.env.values()) + list(doc.argv.values()) if doc else [])

    def redact(self, text: str) -> str:
        for v in self.values:
            if v in text:
                text = text.replace(v, MASK)
        return mask_assignments(mask_values(text))

    def mask_record(self, rec: dict) -> dict:
        """A metric record with every string in it (and every secret-named extra) masked."""
        def clean(name: str, v: object) -> object:
            if isinstance(v, dict):
                return {k: clean(str(k), x) for k, x in v.items()}
            if isinstance(v, list):
                return [clean(name, x) for x in v]
            v = mask_field(name, v)
            return self.redact(v) if isinstance(v, str) else v
        return {k: clean(str(k), v) for k, v in rec.items()}

    def mask_rows(self, records: list, rows: Sequence[int]) -> list:
        """The batch's ``records`` (a template row's JSON line, or a dict) with the given rows
        masked for this run's known secret values (tokens and secret-named fields are masked
        by the ingest already); the list itself when nothing needed it."""
        if not self.values:
            return records
        out = list(records)
        lines = [i for i in rows if isinstance(out[i], bytes)]
        for i, line in zip(lines, mask_lines([out[i] for i in lines], self.values)):
            out[i] = line
        for i in rows:
            rec = out[i]
            if isinstance(rec, dict) and any(v in repr(rec) for v in self.values):
                out[i] = self.mask_record(rec)
        return out

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
