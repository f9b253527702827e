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
                           "credentials", "privatekey", "accesskey", "authorization"})
# Words that make a name a secret when they end it (``HF_TOKEN``, ``DB_PWD``, ``PROXY_AUTH``):
# followed by another word they name something else (``token_acc``, ``auth_url``).
_LAST_WORDS = frozenset({"token", "pwd", "auth", "cookie", "sessionid"})
# "key" is a secret after these words (``WANDB_API_KEY``, ``AWS_SECRET_ACCESS_KEY``, ``--ssh-key``).
# Also after a service's name: ``--wandb_key``/``--wandb-key`` (many training scripts' flag for WANDB_API_KEY),
# ``HF_KEY``, ``OPENAI_KEY`` (review R73).
_KEY_QUALIFIERS = frozenset({"api", "access", "secret", "private", "auth", "license", "signing", "ssh",
                             "encryption", "master", "client", "service",
                             "wandb", "hf", "hub", "huggingface", "openai", "comet", "neptune", "anthropic"})
# "token" after these words names a tokenizer's token or a per-token quantity, not a credential:
# ``pad_token``, ``eos_token``, ``image_token``, ``loss_per_token``, ``max_token``.
_NOT_CREDENTIAL_BEFORE_TOKEN = frozenset({
    "pad", "eos", "bos", "unk", "sep", "cls", "mask", "special", "start", "end", "image", "video", "audio",
    "vision", "think", "tool", "im", "per", "num", "max", "min", "first", "last", "avg", "mean", "total",
    "next", "prev", "new", "each", "added", "split", "stop", "decoder", "default", "ignore", "label"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A JWT (``eyJ...``) is read once per run of base64url characters, from the run's start (the lead before its
# ``eyJ`` kept, group ``lead``), and only when the run goes on to a ``.`` and a second segment: tried at every
# ``eyJ`` it scanned the run to its end each time (the square of a run of ``eyJ``: 0.7 s at 32k characters, minutes at
# 1 MB; review R73). It is the first branch so that at a run's start it wins over a token that would end inside it.
_TOKEN_VALUE = re.compile(
    r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{8}[A-Za-z0-9_-]*\.[A-Za-z0-9_-])"
    r"(?P<lead>[A-Za-z0-9_-]*?)eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"
    r"|hf_[A-Za-z0-9]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{30,}"                     # Google API keys
    # a PEM private key: the whole block, or from its BEGIN line to the end of the text (a log
    # line holds one line of it)
    r"|-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|[\s\S]*)"
)
# One line of a PEM body on its own (a log prints the key line by line): 60-76 base64 characters
# with upper case, lower case and a digit (a hex digest has one case), nothing else on the line.
# Horizontal white space only around it (a PEM body line is one line): ``\s*`` under ``re.M`` ran from each line's
# start across every blank line after it (the square of a text of newlines, 20 s at 32k; review R73).
_PEM_BODY_LINE = re.compile(r"^([^\S\n]*)(?=[^\s]*[a-z])(?=[^\s]*[A-Z])(?=[^\s]*[0-9])[A-Za-z0-9+/]{60,76}={0,2}"
                            r"([^\S\n]*)$", re.M)
# A URL's password: ``scheme://user:PASSWORD@`` (the password may hold ``/``, never ``@`` or a space).
# Read once per run of ``[^@\s]`` from its start (review R73), and only when the run ends on an ``@``: the lead up to
# the run's first ``://user:`` kept (group ``lead``), the password from there to the ``@`` masked, so
# ``https://user:pa://ss@h`` keeps nothing of ``pa://ss``. Tried at every ``://`` it scanned to the next ``@`` or space
# each time (the square of a line of ``scheme://host:port`` without one: 16 min of CPU at 1 MB).
_URL_PASSWORD = re.compile(r"(?<![^@\s])(?=[^@\s]*@)(?P<lead>[^@\s]*?)(?P<user>://[^/:@\s]+:)[^@\s]+@")
# An HTTP credential after its scheme: ``Bearer X``, ``Basic X``, ``Token X`` (an Authorization
# header in a log line, an argv, a metric's text field).
# ``Bearer`` in any case; ``Basic``/``Token`` only capitalised and before a value with a digit
# (``basic block``, ``the token embedding`` stay prose).
_AUTH_SCHEME = re.compile(r"\b((?i:bearer)(?=\s+[A-Za-z0-9._~+/=:-]{6})|(?:Basic|Token)(?=\s+[A-Za-z._~+/=:-]*[0-9]))"
                          r"(\s+)(?!\*\*\*|<redacted>)[A-Za-z0-9._~+/=:-]{6,}")
# A URL query parameter whose name is a secret's: ``?password=X``, ``&api_key=X``.
_QUERY_PARAM = re.compile(r"([?&;])([A-Za-z0-9_.-]+)=([^&#\s'\"]+)")
# A header given as one argument or line: ``Authorization: Bearer X``, ``X-Api-Key: X``.
_HEADER = re.compile(r"^\s*(?:--?[A-Za-z][\w.-]*=)?(?P<name>[A-Za-z][A-Za-z0-9_-]*)\s*:\s*(?P<value>\S.*)$", re.S)
# Short flags that take a password (``mysql -p PASSWORD``, ``sshpass -p``): masked like --password.
SECRET_SHORT_FLAGS = frozenset({"-p"})


def name_words(name: str) -> list[str]:
    """A name's words, lower case: ``--hub-token`` -> [hub, token], ``HF_TOKEN_2`` -> [hf, token]
    (a trailing number is a copy's index), ``apiKey`` -> [api, key]."""
    words = [w.lower() for part in re.split(r"[^A-Za-z0-9]+", name) if part for w in _CAMEL.split(part) if w]
    while words and words[-1].isdigit():
        words.pop()
    return words


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """The one secret-name rule (moeconsole.runner.recipes.recipe, the redactor, lint and the ingest all ask here):
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
    """A token-shaped value (Hugging Face, OpenAI, GitHub, Slack, AWS, Google, JWT, a PEM private
    key, a Bearer credential) inside ``text``."""
    return _TOKEN_VALUE.search(text) is not None or _AUTH_SCHEME.search(text) is not None


def mask_values(text: str, mask: str = MASK) -> str:
    """The one pass by value shape: token-shaped substrings, PEM private keys, ``Bearer X``
    credentials, URL passwords and secret-named URL query parameters masked inside any text;
    a whole header argument (``X-Api-Key: X``) whose name is a secret's keeps its name only."""
    header = _HEADER.match(text)
    if header and is_secret_name(header.group("name")) and header.group("value") != mask:
        return text[: header.start("value")] + mask
    text = _TOKEN_VALUE.sub(lambda m: (m.group("lead") or "") + mask, text)
    if len(text) >= 60:
        text = _PEM_BODY_LINE.sub(lambda m: m.group(1) + mask + m.group(2), text)
    text = _AUTH_SCHEME.sub(lambda m: m.group(1) + m.group(2) + mask, text)
    text = _URL_PASSWORD.sub(lambda m: m.group("lead") + m.group("user") + mask + "@", text)
    if "=" in text:
        text = _QUERY_PARAM.sub(lambda m: f"{m.group(1)}{m.group(2)}={mask}" if is_secret_name(m.group(2))
                                and m.group(3) != mask else m.group(0), text)
    return text


def _is_secret_flag(name: str) -> bool:
    return name in SECRET_SHORT_FLAGS or is_secret_name(name)


def secret_positions(argv: Sequence[str]) -> dict[int, str]:
    """Index -> the secret part of that argument: the value after a secret-named flag
    (``--hub_token V``) or the ``V`` of ``--hub_token=V`` (possibly empty). The one walk of an
    argv that everything masking, storing or hashing secrets relies on."""
    out: dict[int, str] = {}
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if eq and i not in out and _ENV_NAME.fullmatch(name) and is_secret_name(name):
                out[i] = value  # ``token=V``, ``HF_TOKEN=V`` (an env assignment, a key=value argument)
            continue
        name, eq, value = arg.partition("=")
        if not _is_secret_flag(name):
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
            out.append(f"{arg.partition('=')[0]}={MASK}" if "=" in arg and (arg.startswith("-") or hidden[i] != arg)
                       else MASK)
            continue
        name, eq, _value = arg.partition("=")
        if not arg.startswith("-") and eq and _ENV_NAME.fullmatch(name) and is_secret_name(name):
            out.append(f"{name}={MASK}")
        elif arg.startswith("-") and _is_secret_flag(name):
            out.append(arg)
        elif arg.startswith("-") and eq:
            out.append(f"{name}={mask_values(_value)}")  # --header=X-Api-Key: X
        else:
            out.append(mask_values(arg))
    return out


# `name=value` / `name: value` inside free text (a log line echoing a config), name secret-like.
# Only the name and separator are matched: the scan goes on inside a value that is not masked,
# so ``--header=X-Api-Key: V`` finds ``X-Api-Key: V`` after ``header=``.
# Read once per run of name characters (round 22): the name is the run's tail from its first ASCII letter or
# underscore (``--password``, ``1password`` -> ``password``), and tried only where the run starts (the lookbehind),
# its lead (``--``, digits, a letter of another script) skipped there: tried from every start of a run it cost the
# square of a long run with no ``=`` or ``:`` after it (0.14 ms at 1k characters, a minute at a 1 MB line).
# The separators: ``=`` and ``:`` and their full-width forms (``HF_TOKEN：V``, a Chinese-locale print; review R73).
_ASSIGN_SEPARATORS = "=:：＝"
_ASSIGNMENT = re.compile(r"(?<![\w.-])(?:[.-]|[^\W_A-Za-z])*"
                         r"(?P<name>[A-Za-z_][\w.-]*)(?P<nq>['\"]?)(?P<sep>\s*[" + _ASSIGN_SEPARATORS + r"]\s*)(?P<q>['\"]?)")
# The value: after an opening quote, everything up to its closing quote on the same line (a passphrase with spaces,
# ``' hunter22'``); else the run up to white space or a quote, ``;`` and ``,`` included (``password=ab;cd1234``): a
# value cut at them left its tail in the clear (review R73). Over-redaction is the policy.
_ASSIGNED_VALUE = re.compile(r"[^\s'\"]*")
_QUOTED_VALUE = {q: re.compile(r"(?:[^%s\\\n]|\\.){4,}(?=%s)" % (q, q)) for q in "'\""}


# ``--password VALUE`` / ``-p VALUE`` inside free text (a log line echoing a command line).
# Read once per run of ``[\w.-]`` (review R73): every flag start in a run shares the run's end, so the run is gated
# once at its start (white space and a value after it) and the lead before its first flag start kept (group
# ``lead``); tried at every ``-`` after a ``.`` it scanned the run to its end each time (the square of ``.-a``
# repeated: 4 s at 32k characters, over an hour at 1 MB, on every line the console shows).
_FLAG_SPACE = re.compile(r"(?<![\w.-])(?=[\w.-]*\s+['\"]?[^\s'\"-][^\s'\"]{3})(?P<lead>[\w.-]*?)(?<![\w-])"
                         r"(?P<flag>--?[A-Za-z][\w.-]*)(?P<sep>\s+)(?P<q>['\"]?)(?P<value>[^\s'\"-][^\s'\"]{3,})")


def mask_assignments(text: str) -> str:
    """``hub_token=abc``, ``"api_key": "abc"``, ``--password abc`` -> the value masked;
    tokenizer names left alone.

    Every secret name's value and every secret flag's value is found on the same text and their union masked
    (review R73): a value that now runs on through ``;``/``,`` or a full-width separator may hold the next secret
    name, whose own value must stay masked (``password＝--hub_token V`` masks ``V`` too)."""
    spans: list[tuple[int, int]] = []
    if any(sep in text for sep in _ASSIGN_SEPARATORS):
        run = (-1, -1)   # the last unquoted value read: any value starting inside it ends where it ends
        for m in _ASSIGNMENT.finditer(text):
            if not is_secret_name(m.group("name")):
                continue
            start = m.end()
            # A closing quote missing from the rest of the line is missing for every later value with the same quote
            # on it, and two values with the same quote end at different quotes: a line costs a line of these scans.
            quoted = _QUOTED_VALUE[m.group("q")].match(text, start) if m.group("q") else None
            if quoted:
                end = quoted.end()
            elif run[0] <= start < run[1]:
                end = run[1]
            else:
                unquoted = _ASSIGNED_VALUE.match(text, start)
                end = unquoted.end() if unquoted else start
                run = (start, end)
            if end - start < 4 or text[start:end] in (MASK, "<redacted>"):
                continue
            spans.append((start, end))
    at = 0
    while "-" in text and (f := _FLAG_SPACE.search(text, at)):
        name, value = f.group("flag"), f.group("value")
        at = f.start("value")   # a value left alone may be the next flag (``--log-dir --password V``)
        if not _is_secret_flag(name) or value in (MASK, "<redacted>"):
            continue
        if name in SECRET_SHORT_FLAGS and value.startswith(("/", ".", "~")):
            continue  # ``mkdir -p /data/out`` in a log line: a path, not a password
        spans.append(f.span("value"))
        at = f.end()
    if not spans:
        return text
    out, pos = [], 0
    for start, end in sorted(spans):
        if end <= pos:
            continue
        out.append(text[pos:max(start, pos)] + (MASK if start >= pos else ""))
        pos = end
    return "".join(out) + text[pos:]


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
                b"eyJ", b"://", b"AIza", b"PRIVATE KEY", b"earer", b"EARER", b"Basic", b"Token")


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
    from moeconsole.runner.rundir import jsonio
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
        from moeconsole.runner.rundir import runfiles
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


def _readable_word(arg: str) -> str:
    """``arg`` as a word of the masked display line: quoted only where it holds white space, a quote or a
    backslash, so masks stay bare (``shellwords.quote`` writes words to type back)."""
    if arg == "" or re.search(r"[\s'\"\\]", arg):
        return "'" + arg.replace("'", "'\"'\"'") + "'"
    return arg


def redact_cmdline(argv: list[str]) -> str:
    """One shell-like line with secrets masked."""
    return " ".join(_readable_word(a) for a in redact_argv(argv))
