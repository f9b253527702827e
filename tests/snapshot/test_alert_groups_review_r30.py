"""Review R30 finding 5: an unclosed bracket before the detail's colon does not keep the whole
message as the headline (only a bracket that closes holds its colon)."""
from __future__ import annotations

from moeconsole.runner.rundir.alertgroups import short_message


def test_an_unclosed_bracket_does_not_stop_the_cut():
    assert short_message("checkpoint :-( bad: details") == "checkpoint :-( bad"
    assert short_message("loss is nan (step 3: see the log") == "loss is nan (step 3"


def test_a_closed_bracket_still_keeps_its_colon():
    assert short_message("the job reached its time limit (Slurm: TIMEOUT)", 48) == \
        "the job reached its time limit (Slurm: TIMEOUT)"
    assert short_message("loss is nan (step 3): see the log") == "loss is nan (step 3)"
    assert short_message("a (b (c: d) e: f") == "a (b (c: d) e"
