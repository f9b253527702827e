"""The ASCII decision and translation (console/glyphs.py): inside tmux or screen the locale rule
is tmux's (the first set of LC_ALL, LC_CTYPE, LANG names UTF-8), outside them Unicode,
MOECONSOLE_ASCII overrides both, and every stand-in
takes as many cells as the character it replaces (nothing on the screen moves)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from rich.cells import cell_len

from moeconsole.console.glyphs import ascii_only, tmux_clients_utf8, to_ascii
from moeconsole.console import glyphs


TMUX = {"TMUX": "/nonexistent/moeconsole-test/tmux,123,0", "TMUX_PANE": "%0"}   # no server answers: the locale rule


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


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_tmux_session_with_no_client_yet_leaves_it_to_the_locale(tmp_path):
    """``new-session -d``: no client to ask (tmux expands ``#{client_utf8}`` to nothing, as an old
    tmux does for a name it does not know), so the locale rule decides. A real server on a socket of
    its own, ended with kill-server on that socket."""
    sock = tmp_path / "tmux.sock"
    subprocess.run(["tmux", "-S", str(sock), "-f", "/dev/null", "new-session", "-d", "-s", "t", "sleep 600"],
                   check=True, timeout=20)
    try:
        shown = subprocess.run(["tmux", "-S", str(sock), "display-message", "-p", "-t", "t",
                                "#{pid},#{pane_id}"], capture_output=True, text=True, timeout=20).stdout.strip()
        pid, pane = shown.split(",")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMUX": f"{sock},{pid},0", "TMUX_PANE": pane}
        assert tmux_clients_utf8(env) is None
        assert ascii_only({**env, "LANG": "C"}) is True and ascii_only({**env, "LANG": "C.UTF-8"}) is False
    finally:
        subprocess.run(["tmux", "-S", str(sock), "kill-server"], timeout=20)


def test_the_tmux_question_is_asked_once_on_a_thread_and_its_answer_decides(monkeypatch):
    """``attach``/``run``/``demo`` ask tmux while the console's modules import
    (``ask_tmux_early``); the driver's ``ascii_only`` takes that answer instead of asking again
    on the way to the first frame. (The real question to a real tmux: the tmux tests.)"""
    import threading
    calls: list[str] = []

    def ask(env, timeout=3.0):
        calls.append(threading.current_thread().name)
        return False   # a client attached from a locale without UTF-8
    monkeypatch.setattr(glyphs, "started_environ", lambda: {"TMUX": "/nowhere/tmux-0/x,1,0", "LANG": "C.UTF-8"})
    monkeypatch.delenv("MOECONSOLE_ASCII", raising=False)
    monkeypatch.setattr(glyphs, "tmux_clients_utf8", ask)
    monkeypatch.setattr(glyphs, "_EARLY", [])
    glyphs.ask_tmux_early()
    glyphs.ask_tmux_early()   # once a process
    assert glyphs.ascii_only() is True
    assert calls == ["tmux-utf8"]
    monkeypatch.setenv("MOECONSOLE_ASCII", "0")   # the user's word still decides
    assert glyphs.ascii_only() is False


def test_every_console_of_a_process_takes_one_answer_from_tmux(tmp_path):
    """Inside tmux, a process that makes consoles without the early question (a test, an
    embedding program) asks tmux once: each ``MoeConsole`` asks for its terminal driver
    (``get_driver_class``), and the question is a process of its own. A `tmux` on PATH that notes
    each call and says its client takes no UTF-8; the process is started inside "tmux"."""
    bin_dir, asked = tmp_path / "bin", tmp_path / "asked"
    bin_dir.mkdir()
    (bin_dir / "tmux").write_text(f"#!/bin/sh\necho \"$@\" >> {asked}\necho 0\n")
    (bin_dir / "tmux").chmod(0o755)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": repo, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "TMUX": "/nowhere/tmux-0/default,1,0", "TMUX_PANE": "%0", "LANG": "C.UTF-8"}
    env.pop("MOECONSOLE_ASCII", None)
    code = ("import sys\nfrom moeconsole.console.app import MoeConsole\n"
            "made = [MoeConsole(sys.argv[1]) for _ in range(3)]\n"
            "from moeconsole.console import glyphs\n"
            "print(glyphs.ascii_only(), ' '.join(app.driver_class.__name__ for app in made))\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # tmux's answer decides each one: the driver draws ASCII (``Ascii``), or will once the answer
    # is in (``Asking``: the first frame is not held back for it)
    said, *names = done.stdout.split()
    assert said == "True" and len(names) == 3 and all(n in ("AsciiLinuxDriver", "AskingLinuxDriver") for n in names), names
    assert asked.read_text().splitlines() == ["list-clients -t %0 -F #{client_utf8}"]
