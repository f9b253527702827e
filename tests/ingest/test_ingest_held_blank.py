"""A step-less Trainer dict waits past blank lines for the bar redrawn under it (``LogParser.process_line``):
tqdm's clearing of the bar and a print's own empty line stand between the dict and the redraw at its step
(VG-LLM's log: the dict, an empty line, then ``10/1233``). Before, the blank line released the dict
numbered 1, so a paste that starts at a dict charted its first step ten steps early."""
from __future__ import annotations

from moeconsole.runner.ingest.parser import LogParser


def steps(text: str) -> list[tuple[int | None, float | None]]:
    p = LogParser()
    out = []
    for line in text.split("\n"):
        out += p.process_line(line.encode())
    out += p.end_of_input()
    return [(d["step"], d["loss"]) for kind, d in out if kind == "record"]


DICT = "{'loss': 1.7018, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'epoch': 0.01}"
REDRAWS = "  1%|          | 10/1233 [07:54<14:12:16, 41.81s/it]\r  1%|          | 11/1233 [08:34<16:24:43, 48.35s/it]"


def test_a_dict_then_blank_lines_then_its_bars_redraw_is_at_the_bars_step():
    assert steps(f"{DICT}\n\n{REDRAWS}\n") == [(10, 1.7018)]
    assert steps(f"{DICT}\n   \n\n{REDRAWS}\n") == [(10, 1.7018)]


def test_refusal_a_line_that_is_no_bar_after_the_blank_keeps_the_dicts_own_number():
    assert steps(f"{DICT}\n\nSaving model checkpoint to out/checkpoint-5\n{REDRAWS}\n") == [(1, 1.7018)]
