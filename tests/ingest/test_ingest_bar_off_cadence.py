"""The Hugging Face Trainer logs only at multiples of ``logging_steps`` (transformers ``DefaultFlowCallback.on_step_end``:
``state.global_step % state.logging_steps == 0``; step 1 with ``logging_first_step``). A bar drawn under a step-less dict
at a count off that cadence is not the dict's redraw but the bar moved on (a terminal copy keeps only its last draw):
LLaMA-Factory's 51-step run logging every 10 shows ``51/51`` under the dict of step 50 (a corpus log). Newcomer 13's
rule (the redraw at the total gives the last dict its step) had read it at 51. Refusal: with no cadence known, or a
total on the cadence, the redraw at the total is the dict's step, as newcomer 13 needs."""
from __future__ import annotations

from moeconsole.runner.ingest.parser import LogParser


def steps(text: str) -> list[int | None]:
    p = LogParser()
    out = []
    for line in text.split("\n"):
        out += p.process_line(line.encode())
    out += p.end_of_input()
    return [d["step"] for kind, d in out if kind == "record"]


def bar(n: int, total: int) -> str:
    return f"{100 * n // total:3d}%|#####| {n}/{total} [04:54<00:00,  4.38s/it]"


def log(total: int, every: int, said: str) -> str:
    rows = [said, bar(0, total)]
    for step in range(every, total + 1, every):
        rows.append(f"{{'loss': {2 - step / 100}, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': {step / 17:.2f}}}")
    rows.append(bar(total, total) + "[INFO|trainer.py:3705] 2025-05-27 15:22:15,098 >> Saving model checkpoint to out/checkpoint-"
                + str(total))
    return "\n".join(rows) + "\n"


def test_a_bar_at_its_total_off_the_told_cadence_is_the_bar_moved_on():
    assert steps(log(51, 10, "  logging_steps: 10"))[-1] == 50
    assert steps(log(51, 10, "--logging_steps 10 --save_steps 51"))[-1] == 50


def test_refusal_a_total_on_the_cadence_or_no_cadence_gives_the_last_dict_the_total():
    assert steps(log(50, 10, "  logging_steps: 10"))[-1] == 50
    assert steps(log(51, 10, "no cadence printed"))[-1] == 51
