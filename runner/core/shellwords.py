"""Words a shell reads back as what they name: the one owner of how a printed command writes a
path, a run's name or a recipe, so that typed as printed it finds the same file or run.

``shlex.quote`` is that word wherever the output carries every character of it. Where it does
not (``ASCII_OUTPUT``: ``LANG=C`` in tmux, ``PYTHONIOENCODING=ascii``, a latin-1 locale), each
character the output lacks had been written as its ASCII stand-in (``glyphs.to_ascii``: ``ü`` as
``u``), so `moeconsole attach 0bb4 --runs-dir '/tmp/x y/ü'` was printed as ``--runs-dir '/tmp/x
y/u'``: another directory, where the run is not (newcomer round 11). Such a word is written in
the shell's ANSI-C quoting instead, each byte of its UTF-8 that is not printable ASCII as an
octal escape: ``$'/tmp/x y/\\303\\274'``, the form bash's own ``printf %q`` gives in the C locale
(bash 5.2 ``printf '%q' 'x y/ü'`` under ``LC_ALL=C``; ``$'...'`` is read by bash, zsh, ksh93 and
busybox sh). A path the filesystem gave in bytes that are not UTF-8 (Python's surrogate escapes)
is written so on every output: UTF-8 cannot carry it either.
"""
from __future__ import annotations

import shlex
from collections.abc import Iterable

# Whether what this process prints reaches a reader that takes ASCII only. Set by the console,
# which decides it: ``cli._encodable_output`` for the command line's streams, the app for what its
# terminal driver draws (``glyphs.DRAWING_ASCII``).
ASCII_OUTPUT: list[bool] = [False]


def _output_carries(word: str, ascii_only: bool) -> bool:
    """Whether the output prints ``word`` as it is (ASCII, or UTF-8 where the output takes it)."""
    if word.isascii():
        return True
    if ascii_only:
        return False
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:   # a surrogate escape: bytes of a name that are not UTF-8
        return False
    return True


def _ansi_c(word: str) -> str:
    """``word`` in ANSI-C quoting: printable ASCII as itself (``\\`` and ``'`` escaped), every
    other byte of its UTF-8 (surrogate escapes as the bytes they stand for) as ``\\ooo``."""
    out = []
    for byte in word.encode("utf-8", "surrogateescape"):
        ch = chr(byte)
        if ch in "\\'":
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return "$'" + "".join(out) + "'"


def quote(word: str, *, ascii_only: bool | None = None) -> str:
    """``word`` as one shell word that reads back as ``word``: ``shlex.quote`` where the output
    carries it, else ANSI-C quoting (the module's docstring). ``ascii_only`` None: ``ASCII_OUTPUT``."""
    if _output_carries(word, ASCII_OUTPUT[0] if ascii_only is None else ascii_only):
        return shlex.quote(word)
    return _ansi_c(word)


def join(words: Iterable[str], *, ascii_only: bool | None = None) -> str:
    """A command line of ``words``, each ``quote``d."""
    return " ".join(quote(w, ascii_only=ascii_only) for w in words)


def path_shown(path: str, *, ascii_only: bool | None = None) -> str:
    """A path shown on a line of its own (`runs show`'s ``dir``, the one `rm -r` is told to
    take): as it is where the output carries it and it prints, else in ANSI-C quoting, never a
    look-alike of stand-ins naming another directory (nor a newline or ESC that splits the line
    or drives the terminal)."""
    if path.isprintable() and _output_carries(path, ASCII_OUTPUT[0] if ascii_only is None else ascii_only):
        return path
    return _ansi_c(path)
