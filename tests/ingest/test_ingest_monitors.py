"""Each monitor rule on plain series, restarts, duplicates, and batch invariance."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.rundir.jsonio import dumps
from moeconsole.runner.core.columns import records_to_columns
from moeconsole.runner.core.monitors import Monitors, Thresholds


def feed(series: list[dict], t: Thresholds | None = None, checkpoints: dict[int, str] | None = None):
    """Records (with steps 1..n unless given) one at a time; checkpoint saves after a step."""
    m = Monitors(t)
    alerts = []
    for i, rec in enumerate(series, 1):
        rec = {"step": i, **rec}
        alerts += m.observe(rec)
        if checkpoints and rec["step"] in checkpoints:
            alerts += m.on_checkpoint(rec["step"], checkpoints[rec["step"]])
    return alerts, m


def rules(alerts) -> list[tuple[str, str, int]]:
    return [(a["level"], a["rule"], a["step"]) for a in alerts]


def steady(n: int, **fields) -> list[dict]:
    return [dict(fields) for _ in range(n)]


# ----------------------------------------------------------------------------- grad norm

def test_grad_spike_warning_against_the_ema_before_the_step():
    series = steady(50, grad_norm=1.0) + [{"grad_norm": 15.0}] + steady(5, grad_norm=1.0)
    alerts, _ = feed(series)
    assert rules(alerts) == [("warning", "grad_norm_spike", 51)]
    v = alerts[0]["values"]
    assert v["ema"] == pytest.approx(1.0) and v["ratio"] == pytest.approx(15.0)


def test_grad_spike_critical_is_reachable():
    """An EMA updated with the spike first could never exceed 1/alpha = 100x."""
    alerts, _ = feed(steady(50, grad_norm=1.0) + [{"grad_norm": 1e6}])
    assert rules(alerts) == [("critical", "grad_norm_spike", 51)]
    assert alerts[0]["values"]["ratio"] == pytest.approx(1e6)


def test_an_excursion_fires_once_and_again_when_it_escalates():
    series = steady(30, grad_norm=1.0) + [{"grad_norm": 20.0}] * 3 + [{"grad_norm": 5000.0}] + steady(200, grad_norm=1.0) \
        + [{"grad_norm": 900.0}]
    alerts, _ = feed(series)
    got = rules(alerts)
    assert got[:2] == [("warning", "grad_norm_spike", 31), ("critical", "grad_norm_spike", 34)]
    assert got[2][1] == "grad_norm_spike" and got[2][2] == len(series)   # a new excursion later
    assert len(got) == 3


def test_no_spike_alert_during_warm_up():
    alerts, _ = feed([{"grad_norm": 0.1}, {"grad_norm": 50.0}] + steady(20, grad_norm=1.0))
    assert alerts == []


# ----------------------------------------------------------------------------- non-finite

@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "nan", "inf"])
def test_non_finite_loss_is_critical_once_per_run(bad):
    series = steady(5, loss=1.0) + [{"loss": bad}] * 3 + steady(2, loss=1.0) + [{"loss": bad}]
    alerts, _ = feed(series)
    assert rules(alerts) == [("critical", "non_finite", 6), ("critical", "non_finite", 11)]
    assert not math.isfinite(alerts[0]["values"]["loss"])


def test_non_finite_grad_norm_is_critical():
    alerts, _ = feed(steady(3, loss=1.0, grad_norm=1.0) + [{"loss": 1.0, "grad_norm": math.nan}])
    assert rules(alerts) == [("critical", "non_finite", 4)]
    assert "grad_norm" in alerts[0]["values"]


# ----------------------------------------------------------------------------- loss

def test_loss_spike_on_the_smoothed_loss():
    series = steady(150, loss=2.0) + steady(30, loss=6.0)
    alerts, _ = feed(series)
    assert [a[:2] for a in rules(alerts)] == [("warning", "loss_spike")]
    step = alerts[0]["step"]
    assert 151 < step <= 160          # the mean of the last 10 passes 2x after a few steps
    assert alerts[0]["values"]["smoothed"] > 2 * alerts[0]["values"]["average"]


def test_a_single_outlier_and_a_falling_loss_do_not_fire():
    falling = [{"loss": 5.0 * math.exp(-i / 100)} for i in range(400)]
    assert feed(falling)[0] == []
    assert feed(steady(150, loss=2.0) + [{"loss": 9.0}] + steady(20, loss=2.0))[0] == []


# ----------------------------------------------------------------------------- throughput

def test_throughput_drop_in_tokens_per_second():
    alerts, _ = feed(steady(40, tokens_per_s=1000.0) + steady(3, tokens_per_s=400.0) + steady(5, tokens_per_s=1000.0))
    assert rules(alerts) == [("warning", "throughput_drop", 41)]
    assert alerts[0]["values"] == {"tokens_per_s": 400.0, "median": 1000.0}


def test_throughput_drop_from_step_time_when_there_are_no_tokens():
    alerts, _ = feed(steady(40, step_time_s=1.0) + [{"step_time_s": 2.5}])
    assert ("warning", "throughput_drop", 41) in rules(alerts)


def test_step_time_is_not_used_for_throughput_when_tokens_exist():
    alerts, _ = feed(steady(40, tokens_per_s=1000.0, step_time_s=1.0) + [{"tokens_per_s": 1000.0, "step_time_s": 3.0}])
    assert "throughput_drop" not in {a["rule"] for a in alerts}


def test_step_time_instability():
    jitter = [{"step_time_s": 0.4 if i % 2 else 1.6} for i in range(60)]
    alerts, _ = feed(steady(60, step_time_s=1.0) + jitter)
    assert [a[:2] for a in rules(alerts)] == [("warning", "step_time_unstable")]
    assert alerts[0]["values"]["cv"] > 0.3
    assert feed(steady(200, step_time_s=1.0))[0] == []


# ----------------------------------------------------------------------------- memory

def test_memory_is_no_monitor_rule_any_more():
    """Headroom and growth moved to moeconsole.runner.core.memory (per GPU, NVML beside the log): a leak
    that the old growth rule reported 18 times raises nothing here (tests/core/test_memory_*)."""
    series = [{"mem_gib": 30.0 + 0.05 * i} for i in range(400)]
    assert feed(series)[0] == []
    # the memory keys of older recipes still load (lint says where they went)
    t = Thresholds.from_recipe({"mem_headroom_warn_gib": 6.0, "mem_growth_gib": 1.0, "grad_warn_x": 5})
    assert t.grad_warn_x == 5.0


# ----------------------------------------------------------------------------- checkpoints

def test_checkpoint_saved_during_a_grad_norm_excursion():
    series = steady(30, grad_norm=1.0) + [{"grad_norm": 30.0}] * 2 + steady(10, grad_norm=1.0)
    alerts, m = feed(series, checkpoints={20: "/c/20", 31: "/c/31", 40: "/c/40"})
    assert rules(alerts) == [("warning", "grad_norm_spike", 31), ("warning", "checkpoint_in_excursion", 31)]
    assert "/c/31" in alerts[1]["message"] and not m.in_excursion


def test_checkpoint_saved_after_a_nan_is_critical():
    alerts, m = feed(steady(5, loss=1.0) + [{"loss": math.nan}], checkpoints={6: "/c/6"})
    assert rules(alerts)[-1] == ("critical", "checkpoint_in_excursion", 6)
    assert m.in_excursion


# ----------------------------------------------------------------------------- restarts

def test_a_restart_does_not_fire_false_alerts():
    """Loss falls from 5 to ~1 over 500 steps; the run resumes from step 100 (loss ~4):
    against the old window that is a 4x spike, against a fresh one it is nothing."""
    first = [{"step": s, "loss": 5.0 * math.exp(-s / 300), "grad_norm": 1.0, "mem_gib": 30.0}
             for s in range(1, 501)]
    second = [{"step": s, "loss": 5.0 * math.exp(-s / 300), "grad_norm": 1.0, "mem_gib": 20.0}
              for s in range(100, 300)]
    m = Monitors()
    alerts = [a for r in first + second for a in m.observe(r)]
    assert alerts == [] and m.restarts == 1


def test_duplicate_steps_from_two_ranks_count_once():
    recs = []
    for s in range(1, 40):
        rec = {"step": s, "loss": 1.0, "grad_norm": 1.0}
        recs += [rec, dict(rec)]
    recs += [{"step": 40, "loss": math.nan}, {"step": 40, "loss": math.nan}]
    m = Monitors()
    alerts = [a for r in recs for a in m.observe(r)]
    assert rules(alerts) == [("critical", "non_finite", 40)] and m.restarts == 0


# ----------------------------------------------------------------------------- batching

def random_run(n: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    recs, step = [], 0
    for i in range(n):
        step = step + 1 if rnd.random() > 0.002 else max(1, step - rnd.randint(1, 50))
        rec = {"step": step}
        if rnd.random() > 0.05:
            rec["loss"] = rnd.choice([2.0 + rnd.random(), 2.0 + rnd.random(), math.nan, 9.0]) if rnd.random() < 0.01 \
                else 2.0 + rnd.random() * 0.1
        if rnd.random() > 0.1:
            rec["grad_norm"] = 1.0 + rnd.random() * 0.2 if rnd.random() > 0.01 else rnd.choice([30.0, 3000.0, math.inf])
        if rnd.random() > 0.3:
            rec["tokens_per_s"] = 1000.0 if rnd.random() > 0.01 else 300.0
        rec["step_time_s"] = 1.0 + (rnd.random() if 300 < i < 400 else 0.01 * rnd.random())
        rec["mem_gib"] = 30.0 + (i // 500) * 1.5
        recs.append(rec)
    return recs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_results_do_not_depend_on_batch_sizes(seed):
    recs = random_run(3000, seed)
    t = Thresholds()
    one_by_one = [a for m in [Monitors(t)] for r in recs for a in m.observe(r)]
    assert len(one_by_one) > 10
    for size in (7, 256, 1025, len(recs)):
        m = Monitors(t)
        got = []
        for i in range(0, len(recs), size):
            got += m.observe_records(recs[i:i + size])
        assert dumps(got) == dumps(one_by_one)          # bit for bit, NaN included


def test_checkpoints_inside_a_batch_match_one_by_one():
    recs = random_run(2000, 9)
    saves = {i: f"/c/{i}" for i in range(0, 2000, 2)}
    m1, want = Monitors(), []
    for i, r in enumerate(recs):
        want += m1.observe(r)
        if i in saves:
            want += m1.on_checkpoint(r["step"], saves[i])
    m2 = Monitors()
    steps, values, present = records_to_columns(recs)
    got = m2.observe_arrays(steps, values, present, [(i + 1, recs[i]["step"], p) for i, p in saves.items()])
    assert dumps([a for _, a in got]) == dumps(want)
    assert any(a["rule"] == "checkpoint_in_excursion" for a in want)


# ----------------------------------------------------------------------------- thresholds

def test_thresholds_from_recipe():
    t = Thresholds.from_recipe({"grad_warn_x": 5, "loss_window": 50})
    assert (t.grad_warn_x, t.loss_window, t.grad_crit_x) == (5.0, 50, 100.0)
    assert Thresholds.from_recipe(None) == Thresholds()
    alerts, _ = feed(steady(50, grad_norm=1.0) + [{"grad_norm": 6.0}], t)
    assert rules(alerts) == [("warning", "grad_norm_spike", 51)]


@pytest.mark.parametrize("alerts, word", [({"grad_warn": 5}, "grad_warn"), ({"ema_alpha": "x"}, "ema_alpha"),
                                          ({"loss_window": 2.5}, "loss_window"), ({"ema_alpha": 2.0}, "ema_alpha"),
                                          ({"grad_warn_x": -1}, "grad_warn_x")])
def test_bad_thresholds_name_the_key(alerts, word):
    with pytest.raises(InputError, match=word):
        Thresholds.from_recipe(alerts)


def test_records_to_columns_reads_back_jsonio_strings():
    steps, values, present = records_to_columns([{"step": 3, "loss": "nan", "grad_norm": None, "mem_gib": "x"}])
    assert steps.tolist() == [3] and np.isnan(values["loss"][0]) and present["loss"][0]
    assert not present["grad_norm"][0] and not present["mem_gib"][0]
