"""The ASCII decision and translation (console/glyphs.py): inside tmux or screen the locale rule
is tmux's (the first set of LC_ALL, LC_CTYPE, LANG names UTF-8), outside them Unicode,
MOECONSOLE_ASCII overrides both, and every stand-in
takes as many cells as the character it replaces (nothing on the screen moves)."""
from __future__ import annotations

import pytest
from rich.cells import cell_len

from moeconsole.console.glyphs import ascii_only, to_ascii


TMUX = {"TMUX": "/tmp/tmux-0/default,123,0"}


@pytest.mark.parametrize("env, ascii", [
    ({**TMUX, "LANG": "C.UTF-8"}, False),
    ({**TMUX, "LANG": "en_US.utf8"}, False),
    (TMUX, True),                                                    # nothing set: tmux sends no UTF-8
    ({**TMUX, "LANG": "C"}, True),
    ({"STY": "123.pts-0.host", "LANG": "C"}, True),                  # GNU screen likewise
    ({**TMUX, "LANG": "en_US.UTF-8", "LC_ALL": "POSIX"}, True),      # LC_ALL first
    ({**TMUX, "LANG": "C", "LC_CTYPE": "en_US.UTF-8"}, False),       # then LC_CTYPE
    ({**TMUX, "LANG": "C", "LC_ALL": ""}, True),                     # an empty one does not count
    ({"LANG": "C"}, False),                        # no multiplexer: the terminal shows what it is sent
    ({}, False),
    ({**TMUX, "LANG": "C", "MOECONSOLE_ASCII": "0"}, False),         # tmux -u
    ({"LANG": "C.UTF-8", "MOECONSOLE_ASCII": "yes"}, True),          # a terminal set to another charset
    ({**TMUX, "LANG": "C.UTF-8", "MOECONSOLE_ASCII": "maybe"}, False),   # not a yes or no: the locale decides
])
def test_the_locale_rule_is_tmuxs_and_moeconsole_ascii_overrides_it(env, ascii):
    assert ascii_only(env) is ascii


@pytest.mark.parametrize("text", [
    "  5.52┤⠙⢦   2.9┤  ⡞⢳ ⠀", "      └─────C────C──", "attempt 1 · restarts 0/10 · $0.28…",
    "[████▌     ] ▁▂▃▄▅▆▇█ ╭─╮ ╰─╯", "démo 東京 ↑2.9 ┃ ━ \x1b[1mbold\x1b[0m", "e\u0301",
])
def test_every_stand_in_is_ascii_and_as_wide_as_the_character(text):
    out = to_ascii(text)
    assert out.isascii(), out
    assert cell_len(out) == cell_len(text), (text, out)


def test_a_falling_braille_line_reads_as_a_falling_line():
    # dots high in the cell, then in the middle, then low; a stroke over the whole cell
    assert to_ascii("\u2809\u2812\u28c0\u2847") == "'-.|"
    assert to_ascii("step 4 · loss 2.1…") == "step 4 | loss 2.1~"
