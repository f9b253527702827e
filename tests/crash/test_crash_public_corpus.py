"""Real crash texts from public issue threads (from batch 20 also forum threads and blog posts), as
their users pasted them (wrapped, on one line, behind prefixes, in markdown, without the traceback
header), each with its source and the class
written by hand from the text before the classifier was run (tests/crash/public/*.txt).

The per-family counts are in docs/crash-classes.md ("Public crash texts")."""
from __future__ import annotations

from pathlib import Path

import pytest

from moeconsole.runner.core.crash import classify

CORPUS = Path(__file__).resolve().parent / "public"


def load_case(path: Path) -> tuple[dict[str, str], list[str]]:
    """The ``# key: value`` header (source, framework, family, expected, steps_seen) and the text."""
    header: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    body = 0
    for body, line in enumerate(lines):
        if not line.startswith("# ") or ": " not in line:
            break
        key, value = line[2:].split(": ", 1)
        header[key.strip()] = value.strip()
    return header, lines[body:]


CASES = sorted(CORPUS.glob("*.txt"))


def test_the_corpus_is_large_and_cited():
    assert len(CASES) >= 60
    for path in CASES:
        header, text = load_case(path)
        # issue threads (batches 1-19) and, from batch 20, forum threads, Q&A and blog posts (since batch 69 also a
        # page a site serves only over plain http, cited as it was read: 1492)
        assert header["source"].startswith(("https://", "http://")), path.name
        assert header["expected"] and header["family"] and header["framework"] and text, path.name


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_public_crash_text_is_classified_as_written_by_hand(path):
    header, text = load_case(path)
    v = classify(1, text, steps_seen=int(header.get("steps_seen", "10")))
    assert v.cls == header["expected"], (header["source"], v.summary, v.evidence)
