"""GRPO that learns nothing: every group's rewards equal (``frac_reward_zero_std`` 1) for a stretch of
steps is one warning with the fix; a run whose groups vary (some or all) never warns. The records are
ms-swift 4.6's own dict lines (as measured: ``--reward_funcs format`` on the tiny model) read by the
log parser, as the runner reads them."""
from __future__ import annotations

import re

import pytest

from moeconsole.runner.core.monitors import Thresholds
from moeconsole.runner.core.reward_watch import RewardWatch
from moeconsole.runner.core.schema import SettingsError
from tests.ingest.ingest_samples import parsed
from moeconsole.runner.ingest import LogParser


def swift_line(step: int, total: int, frac: float, reward: float = 0.0) -> str:
    """A GRPO dict as ms-swift 4.6 prints it (measured; values .4g strings)."""
    flat = frac >= 1
    return ("{'loss': '%s', 'grad_norm': '%s', 'learning_rate': '0.004665', 'completions/mean_length': '13', "
            "'reward': '%g', 'reward_std': '%s', 'frac_reward_zero_std': '%g', 'rewards/Format/mean': '%g', "
            "'kl': '0', 'step_time': '5.2', 'epoch': '0.009346', 'global_step/max_steps': '%d/%d', "
            "'elapsed_time': '5s', 'remaining_time': '27s', 'train_speed(s/it)': '5.336'}"
            % ("0" if flat else "1e-08", "0" if flat else "0.7234", reward, "0" if flat else "3.2", frac, reward,
               step, total))


def records(*lines: str) -> list[dict]:
    data = b"".join(ln.encode() + b"\n" for ln in lines)
    recs, _ = parsed(LogParser(), data)
    return recs


def run(fracs: dict[int, float], total: int = 100, watch: RewardWatch | None = None, attempt: int = 1) -> list[dict]:
    w = watch or RewardWatch()
    out = []
    for step, frac in fracs.items():   # one record at a time, as a live run is read
        out += w.observe(records(swift_line(step, total, frac)), attempt)
    return out


def test_every_group_flat_for_five_steps_is_one_warning_with_the_fix():
    alerts = run({s: 1.0 for s in range(1, 7)}, total=6)
    (a,) = alerts
    assert (a["level"], a["rule"], a["step"]) == ("warning", "reward_no_signal", 5)
    assert "every group's rewards were equal at steps 1-5" in a["message"]
    assert "frac_reward_zero_std 1" in a["message"] and "loss 0, grad_norm 0" in a["message"]
    assert "--num_generations" in a["message"] and "--dynamic_sample true" in a["message"]
    assert a["values"]["steps"] == 5 and a["values"]["first_step"] == 1


@pytest.mark.parametrize("fracs", [
    {s: 0.0 for s in range(1, 40)},                                          # every group varied
    {s: (1.0 if s % 5 else 0.5) for s in range(1, 40)},                       # flat 4 steps, then half the groups taught
    {s: 0.75 for s in range(1, 40)},                                          # one group in four teaches
    {s: 0.999 for s in range(1, 40)},                                         # one group in a thousand still does
])
def test_a_run_where_some_groups_vary_never_warns(fracs):
    assert run(fracs) == []


def test_a_sparse_logger_counts_the_steps_each_dict_covers():
    # logging_steps 10: the first dict covers its own step only (where its attempt started is unknown),
    # the next covers the 10 steps since: the stretch is 11 steps at step 20
    (a,) = run({10: 1.0, 20: 1.0, 30: 1.0})
    assert a["step"] == 20 and "steps 10-20" in a["message"]


def test_a_stretch_closed_by_a_varied_dict_warns_again_when_another_one_is_long_enough():
    fracs = {**{s: 1.0 for s in range(1, 8)}, 8: 0.5, **{s: 1.0 for s in range(9, 16)}}
    assert [a["step"] for a in run(fracs)] == [5, 13]


def test_a_new_attempt_or_a_resume_from_an_older_save_starts_the_count_again():
    w = RewardWatch()
    assert [a["step"] for a in run({s: 1.0 for s in range(1, 4)}, watch=w, attempt=1)] == []
    assert run({s: 1.0 for s in range(4, 7)}, watch=w, attempt=2) == []         # 3 + 3, never 6
    assert [a["step"] for a in run({s: 1.0 for s in range(7, 12)}, watch=w, attempt=2)] == [8]


def test_each_ranks_copy_of_a_dict_counts_once():
    w = RewardWatch()
    out = []
    for s in range(1, 5):
        out += w.observe(records(swift_line(s, 100, 1.0)) * 2, 1)
    assert out == []


def test_the_stretch_is_the_recipes_alerts_reward_flat_steps():
    t = Thresholds.from_recipe({"reward_flat_steps": 2})
    assert [a["step"] for a in run({s: 1.0 for s in range(1, 4)}, watch=RewardWatch(t.reward_flat_steps))] == [2]
    with pytest.raises(SettingsError, match="reward_flat_steps"):
        Thresholds.from_recipe({"reward_flat_steps": 0})


def test_dicts_without_the_key_and_evaluations_are_not_read():
    sft = "{'loss': '0', 'grad_norm': '0', 'learning_rate': '5e-3', 'global_step/max_steps': '%d/9'}"
    ev = "{'eval_loss': '0', 'eval_frac_reward_zero_std': '1', 'global_step/max_steps': '%d/9'}"
    w = RewardWatch(1)
    assert w.observe(records(*(sft % s for s in range(1, 9))), 1) == []
    assert w.observe(records(*(ev % s for s in range(1, 9))), 1) == []


# ---- a grad norm of 0 is no gradient, not its scale (the grad-norm spike rule)

def spikes(grad_norms: list[float], batch: int = 1) -> list[tuple[str, str, int]]:
    from moeconsole.runner.core.monitors import Monitors
    m, out = Monitors(), []
    recs = [{"step": i, "grad_norm": g, "loss": 1.0} for i, g in enumerate(grad_norms, 1)]
    for k in range(0, len(recs), batch):
        out += m.observe_records(recs[k:k + batch])
    return [(a["rule"], a["level"], a["step"]) for a in out]


@pytest.mark.parametrize("batch", [1, 4, 64])
def test_the_first_gradient_after_a_flat_grpo_stretch_is_no_spike(batch):
    # six steps of every group alike (grad norm 0, as measured), then groups vary: before, the EMA seeded
    # by the zeros made step 8's 0.72 a "critical" spike of 100x
    assert spikes([0.0] * 6 + [0.7, 0.72, 0.69, 0.71, 0.7, 0.68] * 3, batch) == []


def test_a_distillation_that_starts_at_its_teacher_is_no_spike():
    # swift rlhf --rlhf_type gkd with the student as its own teacher (measured, ms-swift 4.6.0): grad norm 0
    # at step 1; before, a warning at step 6 (0.002803 = 24x an EMA seeded by the 0)
    assert spikes([0, 1.384e-05, 0.00431, 0.00185, 0.005502, 0.002803]) == []


def test_a_real_spike_after_zero_grad_norms_still_alerts():
    assert spikes([0.0] * 6 + [1.0] * 10 + [500.0]) == [("grad_norm_spike", "critical", 17)]


# Reviewed (R57): leaving the 0 out only moved the false spike: the next, near-zero value (1.384e-05) seeded
# the EMA. The reviewer's 14-step GKD run (student == teacher, ms-swift 4.6.0, measured grad norms) warned at
# steps 7 and 12, and checkpoints 9 and 12 were marked suspect. The warm-up's median seeds the EMA now.
GKD_14 = [0, 1.384e-05, 0.004551, 0.003239, 0.006161, 0.004617, 0.002797, 0.002382, 0.004743, 0.00322, 0.002765,
          0.003513, 0.002202, 0.002695]


@pytest.mark.parametrize("batch", [1, 3, 64])
def test_a_distillation_that_starts_at_its_teacher_is_no_spike_past_the_warm_up(batch):
    assert spikes(GKD_14, batch) == []
    assert spikes([0, 1.384e-05, 0.00431, 0.00185, 0.005502, 0.002803, 0.0035, 0.004], batch) == []
    assert spikes([1e-7, 1e-7] + [0.7, 0.72, 0.69, 0.71, 0.7, 0.68] * 20, batch) == []   # two tiny, not one


@pytest.mark.parametrize("batch", [1, 3, 64])
def test_a_real_spike_after_a_tiny_first_gradient_still_alerts(batch):
    assert spikes(GKD_14 + [0.06], batch) == [("grad_norm_spike", "warning", 15)]     # 20x the run's 0.003
    assert spikes(GKD_14 + [0.5], batch) == [("grad_norm_spike", "critical", 15)]
    # a spike inside the warm-up is not its scale: the median ignores it, the next spike is seen
    assert spikes([1.0, 1.1, 300.0, 0.9, 1.0, 1.0, 1.05, 50.0], batch) == [("grad_norm_spike", "warning", 8)]


def test_a_checkpoint_after_a_tiny_first_gradient_is_not_suspect():
    from moeconsole.runner.core.monitors import Monitors
    m = Monitors()
    m.observe_records([{"step": i, "grad_norm": g, "loss": 1.0} for i, g in enumerate(GKD_14, 1)][:12])
    assert m.on_checkpoint(12, "checkpoint-12") == []


# Reviewed (R57): a GRPO run that a teacher trains (ms-swift 4.6 OPD-RL: `swift rlhf --rlhf_type grpo
# --teacher_model T --num_generations 2`, no --reward_funcs) has flat rewards at every step by design and
# still learns (loss and grad norm > 0). These are the reviewer's measured dicts (ms-swift 4.6.0, CPU).
OPD_RL = [
    "{'loss': '0.1075', 'grad_norm': '0.3417', 'learning_rate': '0.004665', 'completions/mean_length': '13', 'completions/min_length': '4', 'completions/max_length': '16', 'completions/clipped_ratio': '0.75', 'reward': '0', 'reward_std': '0', 'frac_reward_zero_std': '1', 'teacher_kl': '0.01421', 'kl': '0', 'clip_ratio/low_mean': '0', 'clip_ratio/low_min': '0', 'clip_ratio/high_mean': '0', 'clip_ratio/high_max': '0', 'clip_ratio/region_mean': '0', 'step_time': '6.923', 'epoch': '0.009346', 'global_step/max_steps': '1/6'}",
    "{'loss': '0.07537', 'grad_norm': '0.1136', 'learning_rate': '0.00375', 'completions/mean_length': '16', 'completions/min_length': '16', 'completions/max_length': '16', 'completions/clipped_ratio': '1', 'reward': '0', 'reward_std': '0', 'frac_reward_zero_std': '1', 'teacher_kl': '0.01034', 'kl': '0.001395', 'clip_ratio/low_mean': '0', 'clip_ratio/low_min': '0', 'clip_ratio/high_mean': '0', 'clip_ratio/high_max': '0', 'clip_ratio/region_mean': '0', 'step_time': '1.987', 'epoch': '0.01869', 'global_step/max_steps': '2/6'}",
    "{'loss': '0.06164', 'grad_norm': '0.118', 'learning_rate': '0.0025', 'completions/mean_length': '16', 'completions/min_length': '16', 'completions/max_length': '16', 'completions/clipped_ratio': '1', 'reward': '0', 'reward_std': '0', 'frac_reward_zero_std': '1', 'teacher_kl': '0.01134', 'kl': '0.00153', 'clip_ratio/low_mean': '0', 'clip_ratio/low_min': '0', 'clip_ratio/high_mean': '0', 'clip_ratio/high_max': '0', 'clip_ratio/region_mean': '0', 'step_time': '4.998', 'epoch': '0.02804', 'global_step/max_steps': '3/6'}",
    "{'loss': '0.07718', 'grad_norm': '0.12', 'learning_rate': '0.00125', 'completions/mean_length': '16', 'completions/min_length': '16', 'completions/max_length': '16', 'completions/clipped_ratio': '1', 'reward': '0', 'reward_std': '0', 'frac_reward_zero_std': '1', 'teacher_kl': '0.01206', 'kl': '0.002542', 'clip_ratio/low_mean': '0', 'clip_ratio/low_min': '0', 'clip_ratio/high_mean': '0', 'clip_ratio/high_max': '0', 'clip_ratio/region_mean': '0', 'step_time': '3.299', 'epoch': '0.03738', 'global_step/max_steps': '4/6'}",
    "{'loss': '0.07413', 'grad_norm': '0.1552', 'learning_rate': '0.0003349', 'completions/mean_length': '15.25', 'completions/min_length': '13', 'completions/max_length': '16', 'completions/clipped_ratio': '0.75', 'reward': '0', 'reward_std': '0', 'frac_reward_zero_std': '1', 'teacher_kl': '0.01315', 'kl': '0.003178', 'clip_ratio/low_mean': '0', 'clip_ratio/low_min': '0', 'clip_ratio/high_mean': '0', 'clip_ratio/high_max': '0', 'clip_ratio/region_mean': '0', 'step_time': '6.503', 'epoch': '0.04673', 'global_step/max_steps': '5/6'}",
    "{'loss': '0.08685', 'grad_norm': '0.1811', 'learning_rate': '0', 'completions/mean_length': '16', 'completions/min_length': '16', 'completions/max_length': '16', 'completions/clipped_ratio': '1', 'reward': '0', 'reward_std': '0', 'frac_reward_zero_std': '1', 'teacher_kl': '0.0141', 'kl': '0.005593', 'clip_ratio/low_mean': '0', 'clip_ratio/low_min': '0', 'clip_ratio/high_mean': '0', 'clip_ratio/high_max': '0', 'clip_ratio/region_mean': '0', 'step_time': '3.735', 'epoch': '0.05607', 'global_step/max_steps': '6/6'}",
]


def opd(step_lines: list[str], add: dict[str, str] | None = None, drop: tuple[str, ...] = (),
        grad_norm: str | None = None) -> list[str]:
    """The dicts with keys added after the fraction, dropped, or the grad norm replaced."""
    out = []
    for ln in step_lines:
        for k in drop:
            ln = re.sub(r", '%s': '[^']*'" % re.escape(k), "", ln)
        for k, v in (add or {}).items():
            ln = ln.replace("'frac_reward_zero_std': '1'", f"'frac_reward_zero_std': '1', '{k}': '{v}'")
        if grad_norm is not None:
            ln = re.sub(r"'grad_norm': '[^']*'", f"'grad_norm': '{grad_norm}'", ln)
        out.append(ln)
    return out


def feed(lines: list[str]) -> list[dict]:
    w = RewardWatch()
    return [a for ln in lines for a in w.observe(records(ln), 1)]


def test_a_run_a_teacher_trains_on_flat_rewards_is_no_alarm():
    assert feed(OPD_RL) == []                                   # OPD-RL: teacher_kl, kl (beta 0.04)
    assert feed(opd(OPD_RL, {"sdar/loss": "0.02"})) == []       # SDAR's distillation loss too
    assert feed(opd(OPD_RL, drop=("kl",))) == []                # beta 0: grad norm > 0 is another loss term


def test_a_teacher_that_only_rescales_the_advantage_or_no_gradient_still_warns():
    # --advantage_reweight rlsd: the teacher rescales a 0 advantage (still 0), the KL term's gradient remains
    (a,) = feed(opd(OPD_RL, {"rlsd_lambda": "0.5"}))
    assert (a["rule"], a["step"]) == ("reward_no_signal", 5)
    # beta 0 and grad norm 0 (teacher_kl_coef 0): nothing trains, whatever keys the dict has
    flat = opd(OPD_RL, drop=("kl",), grad_norm="0")
    (a,) = feed(flat)
    assert (a["rule"], a["step"]) == ("reward_no_signal", 5)
    # no teacher, beta 0.04: the KL term's grad norm alone is no learning signal
    (a,) = feed(opd(OPD_RL, drop=("teacher_kl",)))
    assert (a["rule"], a["step"]) == ("reward_no_signal", 5)


def test_the_default_stretch_is_the_thresholds_one():
    assert RewardWatch().steps == Thresholds().reward_flat_steps
