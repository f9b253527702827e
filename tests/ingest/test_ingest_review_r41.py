"""Review R41 of log batch 45's readers: OpenRLHF's step line skipped when its status holds a field
the dict reader knows (grad_norm, loss, lr), so its printed global steps were replaced by counted
ones; the label-behind-block rule taking srun's labels only (torchrun's ``[default0]:`` /
``[rank0]:`` and mpirun's tag too); a tqdm-loggable evaluation bar leaving a junk evaluation. (The
tail pattern's square on a long whitespace run is guarded in tests/test_patterns_never_hang.py.)
Each input fed as bytes, checked on the records and evaluations a user gets."""
from __future__ import annotations

import pytest

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


def _steps(recs) -> list:
    return [r["step"] for r in recs]


# --------------------------------------------------------------------------- OpenRLHF

_HEAD = "(PPOTrainer pid=2345) [2026-01-05 10:00:00] ppo_trainer.py:547] ✨ Global step {}: {}"


@pytest.mark.parametrize("status", [
    # openrlhf/trainer/ray/ppo_actor.py: status["grad_norm"] when the step computed it
    "{{'policy_loss': 0.012, 'actor_lr': 5e-07, 'grad_norm': {g}, 'kl': 0.0, 'reward': 0.25}}",
    "{{'grad_norm': {g}, 'policy_loss': 0.012}}",
    "{{'policy_loss': 0.5, 'lr': 1e-06, 'grad_norm': {g}}}",
    "{{'loss': 0.5, 'grad_norm': {g}}}",
    "{{'policy_loss': 0.012, 'actor_lr': 5e-07, 'grad_norm': {g}, ...}}",   # a note's cut dict
    "{{'policy_loss': 0.012, 'actor_lr': 5e-07, 'kl': 0.0}}",              # none: read so before too
])
def test_a_resumed_openrlhf_run_keeps_its_printed_global_steps_whatever_its_status_holds(status):
    recs, p = parse(_HEAD.format(201, status.format(g=0.41)), _HEAD.format(202, status.format(g=0.38)))
    assert _steps(recs) == [201, 202]
    assert {r["src"] for r in recs} == {"openrlhf"}
    assert all("step_inferred" not in (r.get("extra") or {}) for r in recs)
    if "grad_norm" in status:
        assert [r["grad_norm"] for r in recs] == [0.41, 0.38]


def test_a_dict_behind_a_prefix_that_names_no_global_step_is_still_the_dict_readers():
    """The other way: a logger's prefix before a step-less dict still gives the counted dict record."""
    recs, p = parse("[2026-01-05 10:00:00] INFO {'loss': 0.5, 'grad_norm': 0.4, 'learning_rate': 1e-05, 'epoch': 0.1}",
                    "[2026-01-05 10:01:00] INFO {'loss': 0.4, 'grad_norm': 0.3, 'learning_rate': 1e-05, 'epoch': 0.2}")
    assert steps(recs) == [(1, 0.5), (2, 0.4)]
    assert {r["src"] for r in recs} == {"hf_dict"}


# --------------------------------------------------------------------------- a block behind a launcher's label

def _composer(label: str, sep: str = "") -> list[str]:
    return [f"{label}{sep}[batch=1/100]:", f"{label}       Train loss/train/total: 12.0",
            f"{label}       Train lr-DecoupledAdamW/group0: 0.0001",
            f"{label}{sep}[batch=2/100]:", f"{label}       Train loss/train/total: 11.0"]


@pytest.mark.parametrize("label, sep", [
    ("[default0]:", ""),          # torchrun --tee's role prefix: "[{role}{local_rank}]:"
    ("[rank0]:", " "),            # torch logging's rank prefix
    ("[trainer0]:", ""),          # another --role
    ("0: [default0]:", ""),       # srun --label in front of torchrun's
    ("[1,0]<stdout>:", ""),       # mpirun --tag-output
    ("0:", " "),                  # srun --label (batch 45's rule, kept)
])
def test_a_composer_block_behind_a_launchers_label_gives_its_records(label, sep):
    recs, p = parse(*_composer(label, sep))
    assert steps(recs) == [(1, 12.0), (2, 11.0)]
    assert recs[0]["lr"] == 0.0001
    assert {r["extra"]["rank"] for r in recs} == {0}


def test_two_torchrun_ranks_blocks_keep_their_own_values():
    recs, p = parse("[rank0]: [batch=1/100]:", "[rank0]:       Train loss/train/total: 12.0",
                    "[rank1]: [batch=1/100]:", "[rank1]:       Train loss/train/total: 12.5",
                    "[rank0]: [batch=2/100]:", "[rank0]:       Train loss/train/total: 11.0",
                    "[rank1]: [batch=2/100]:", "[rank1]:       Train loss/train/total: 11.5")
    assert [(r["step"], r["loss"], r["extra"]["rank"]) for r in recs] == [
        (1, 12.0, 0), (1, 12.5, 1), (2, 11.0, 0), (2, 11.5, 1)]


@pytest.mark.parametrize("lines", [
    # another rank's indented line does not join rank 0's block
    ("[default0]:[batch=1/100]:", "[default1]:       Train loss/train/total: 99.0"),
    # a label with the text right behind it is no indented block line
    ("[default0]:[batch=1/100]:", "[default0]:Train loss/train/total: 99.0"),
])
def test_a_line_behind_another_label_or_not_indented_joins_no_block(lines):
    recs, p = parse(*lines)
    assert all(r["loss"] != 99.0 for r in recs), steps(recs)


# --------------------------------------------------------------------------- tqdm-loggable

_TRAIN = "Progress on:train {n}.0it/18.0it rate:34.5s/it remaining:04:01 elapsed:17:46 postfix:loss={loss}"


@pytest.mark.parametrize("bar", [
    "Progress on:eval 106it/184it rate:2.1it/s remaining:00:37 elapsed:00:50 postfix:loss=0.693",
    "Progress on:eval 106/- rate:2.1it/s remaining:? elapsed:00:50 postfix:-",     # Levanter's (no total)
    "Progress on:validation 3.00it/10.0it rate:2.1it/s remaining:00:03 elapsed:00:01 postfix:loss=0.7, acc=0.5",
    "Progress on:train 1.00kit/5.00kit rate:2.1it/s remaining:29:48 elapsed:09:45 postfix:loss=2.5",
    "Progress on:train -/18 rate:- remaining:? elapsed:00:00 postfix:-",
])
def test_a_tqdm_loggable_bar_that_is_no_record_leaves_no_evaluation_and_no_record(bar):
    recs, p = parse(_TRAIN.format(n=11, loss=15.5), bar, _TRAIN.format(n=12, loss=15.1))
    assert steps(recs) == [(11, 15.5), (12, 15.1)]
    assert p.marks == []


def test_levanter_evaluation_result_under_its_bar_is_the_evaluation():
    """levanter/eval.py's bar is tqdm(iterator, "eval"): its result line is the evaluation, at the last step."""
    recs, p = parse(_TRAIN.format(n=11, loss=15.5), "Progress on:eval 106/- rate:2.1it/s remaining:? elapsed:00:50 postfix:-",
                    "eval loss: 2.345", _TRAIN.format(n=12, loss=15.1))
    assert [(m["kind"], m["step"], m["loss"]) for m in p.marks] == [("eval", 11, 2.345)]


def test_a_tqdm_loggable_training_bar_without_a_total_is_read_at_its_count():
    """display(): with no total the count is printed as it is ("106/-"): an exact step, no max_steps."""
    recs, p = parse("Progress on:train 106/- rate:1.2it/s remaining:? elapsed:01:27 postfix:loss=2.5")
    assert steps(recs) == [(106, 2.5)]
    assert recs[0].get("max_steps") is None
