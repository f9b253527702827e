"""Hide secrets in command lines before they are shown or written anywhere.

A flag or ``NAME=value`` assignment whose name says token/secret/password/api key keeps its
name and loses its value; a value that looks like a known token format (Hugging Face,
OpenAI, GitHub, Slack, AWS, JWT) or a URL password is masked wherever it appears.
Over-redaction is acceptable; a leaked token is not.
"""
from __future__ import annotations

import re

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


def redact_argv(argv: list[str]) -> list[str]:
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            hide_next = False
            if not arg.startswith("-"):
                out.append(MASK)
                continue
        if arg.startswith("-"):
            name, eq, _value = arg.partition("=")
            if is_secret_name(name):
                if eq:
                    out.append(f"{name}={MASK}")
                else:
                    out.append(arg)
                    hide_next = True
                continue
        else:
            name, eq, _value = arg.partition("=")
            if eq and _ENV_NAME.fullmatch(name) and is_secret_name(name):
                out.append(f"{name}={MASK}")
                continue
        out.append(mask_values(arg))
    return out


def _quote(arg: str) -> str:
    if arg == "" or re.search(r"[\s'\"\\]", arg):
        return "'" + arg.replace("'", "'\"'\"'") + "'"
    return arg


def redact_cmdline(argv: list[str]) -> str:
    """One shell-like line with secrets masked."""
    return " ".join(_quote(a) for a in redact_argv(argv))
