"""Review R73: the masking's squares (every line the console shows is redacted first) and values left in the clear.

The squares: a run of a pattern's own characters with its opening repeated (``.-a``, ``eyJ``, ``://a:``) or a text of
newlines cost the square of the text (4 s of CPU at 32k characters for ``.-a``, an hour at 1 MB). The leaks: a value
after a full-width separator, a quoted passphrase, a value holding ``;``/``,``, ``--wandb_key``. The mended patterns
are checked against their old sources (secrets.py at 2f19a484) on generated texts: the same text masked."""
from __future__ import annotations

import random
import re
import time

import pytest

from moeconsole.runner.rundir import secrets


def _ratio(fn, small: str, large: str) -> float:
    """CPU of fn(large) over fn(small) (lines 16 times apart: a line 16, a square 256), median of three pairs."""
    def cpu(text, reps):
        a = time.process_time()
        for _ in range(reps):
            fn(text)
        return (time.process_time() - a) / reps
    return sorted(cpu(large, 1) / cpu(small, 16) for _ in range(3))[1]


def _redact(text):
    return secrets.Redactor(()).redact(text)


SQUARES = {   # a run of the pattern's own class characters holding its opening again and again
    "_FLAG_SPACE": ".-a",          # '-' after '.', a letter: a flag start, scanned to the run's end each time
    "_TOKEN_VALUE": "eyJ",         # a JWT's start, scanned to the run's end for its '.' each time
    "_URL_PASSWORD": "://a:",      # each '://user:' scanned to the next '@' or space
    "_PEM_BODY_LINE": "\n",        # re.M: '^' at each line, (\s*) across every blank line after it
    "_ASSIGNMENT values": "password=",   # every value read again to the run's end
    "_ASSIGNMENT quoted": "password='\n",
}


@pytest.mark.parametrize("name", sorted(SQUARES))
def test_redact_costs_a_line_not_a_square(name):
    unit = SQUARES[name]
    small = unit * (2000 // len(unit))
    assert _ratio(_redact, small, small * 16) < 64, name


@pytest.mark.parametrize("line", [
    "HF_TOKEN：plainsecret99",                      # a full-width colon (a Chinese-locale print)
    "api_key＝plainsecret99",
    'password = "correct horse battery staple"',   # a passphrase: only its first word masked
    'password="ab cd1234xyz"',
    "password=ab;cd1234xyz",                        # ';' or ',' inside the value
    "ACCESS_TOKEN=ab,cd1234xyz",
    "password=' hunter22'",
    "--wandb-key=plainsecret99",                    # a service's key flag
    "train.py --wandb_key plainsecret99 --lr 1e-4",
    "https://user:pa://plainsecret99@host",         # a password holding '://': nothing of it in the clear
    "password＝--hub_token plainsecret99",          # a masked value holding the next secret flag
    "password=ab,-p plainsecret99",
    "--log-dir --password plainsecret99",           # a flag's value that is itself a secret flag
])
def test_a_secret_named_value_is_masked_whole(line):
    out = _redact(line)
    for word in ("plainsecret99", "horse", "battery", "staple", "cd1234xyz", "hunter22", "ss@"):
        assert word not in out, out


def test_what_is_not_a_secret_stays_in_the_clear():
    for line in ("--sort_key length --metric_key loss", "mkdir -p /data/out", "pad_token: <pad>",
                 "http://node1:8000,http://node2:8000", "lr=0.001, loss=2.3"):
        assert _redact(line) == line


# The sources at 2f19a484 (before review R73).
OLD = {
    "_URL_PASSWORD": (re.compile(r"(://[^/:@\s]+:)[^@\s]+@"), lambda m: m.group(1) + "***@"),
    "_PEM_BODY_LINE": (re.compile(r"^(\s*)(?=[^\s]*[a-z])(?=[^\s]*[A-Z])(?=[^\s]*[0-9])[A-Za-z0-9+/]{60,76}={0,2}(\s*)$",
                                  re.M), lambda m: m.group(1) + "***" + m.group(2)),
    "_JWT": (re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"), lambda m: "***"),
}
NEW = {
    "_URL_PASSWORD": lambda m: m.group("lead") + m.group("user") + "***@",
    "_PEM_BODY_LINE": lambda m: m.group(1) + "***" + m.group(2),
    "_JWT": lambda m: (m.group("lead") or "") + "***",
}
PIECES = ["://", "http", "user", ":", "@", "/", " ", "\n", " \n", "\t", "pa", "x", "训", "::", "@@", ",", '"', "eyJ",
          "eyJhbGciOiJI", "abcdefgh", ".", "-", "_", "aB3" * 22, "=", "==", "+/", "0123456789"]


@pytest.mark.parametrize("name", sorted(OLD))
def test_the_mended_pattern_masks_what_the_old_one_masked(name):
    old, old_repl = OLD[name]
    new = secrets._TOKEN_VALUE if name == "_JWT" else getattr(secrets, name)
    rnd = random.Random(73)
    for _ in range(30000):
        text = "".join(rnd.choice(PIECES) for _ in range(rnd.randint(1, 14)))
        if name == "_JWT" and re.search(r"hf_|sk-|gh[pousr]_|github_pat_|xox|AKIA|AIza|-----BEGIN", text):
            continue   # the other token shapes share the pattern: compared without them
        assert new.sub(NEW[name], text) == old.sub(old_repl, text), text


# crash._DEP_SO (a missing library's name in a dependency message), found by the reviewer's generator: the square
# of any long run of non-spaces without ``.so`` (7 s at 32k). Its source at 2f19a484:
OLD_DEP_SO = re.compile(r"(\S+?\.so(?:\.[\d.]+)?)\b")


@pytest.mark.parametrize("unit", [".soa", "a", "/usr/lib/x86_64-linux-gnu/"])
def test_the_missing_librarys_name_is_read_in_a_line_not_a_square(unit):
    from moeconsole.runner.core import crash
    small = unit * (2000 // len(unit))
    assert _ratio(crash._DEP_SO.search, small, small * 16) < 64


def test_the_missing_librarys_name_is_the_one_read_before():
    from moeconsole.runner.core import crash
    pieces = [".so", ".so.1", ".so.12.0", "lib", "a", "/usr/lib/", " ", "\n", ".", "1", ".2", "训", "-", "so", "x.so"]
    rnd = random.Random(74)
    for _ in range(30000):
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 12)))
        old, new = OLD_DEP_SO.search(text), crash._DEP_SO.search(text)
        assert (old and old.group(1)) == (new and new.group(1)), text
    assert crash._DEP_SO.search("OSError: libcudnn.so.8: cannot open shared object file").group(1) == "libcudnn.so.8"
