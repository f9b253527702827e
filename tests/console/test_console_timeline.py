"""The events pane, the alert bar and the status line as pure functions: sentences, order,
de-duplication, acknowledgements, ETA and the quiet-time indicator, the log tail's columns."""
from __future__ import annotations

from moeconsole.console import alerts
from moeconsole.runner.rundir import alertgroups
from moeconsole.console import format as fmt
from moeconsole.console.logtail import MetricColumns
from moeconsole.console.timeline import entry_detail_lines, sentence, timeline

T = 1_700_000_000.0


def ev(t, type_, **fields):
    return {"v": 1, "t": T + t, "type": type_, **fields}


def test_every_event_kind_reads_as_a_sentence_without_python_dicts():
    events = [
        ev(0, "status", status="running", reason="attempt 1 started"),
        ev(1, "kill", reason="divergence", requested_by="runner", pids=[{"pid": 11}, {"pid": 12}], grace_s=5.0),
        ev(2, "kill_done", reason="divergence", seconds=1.25, escalated=False, survivors=[]),
        ev(3, "kill_escalate", pids=[12], why="still alive after 5s grace"),
        ev(4, "blocker_kill", pid=77, labels=["port_holder"], result={"ok": True, "reason": "ended by SIGTERM"}),
        ev(5, "port_change", old=29500, new=29501),
        ev(6, "some_new_kind", detail={"a": 1}, count=3),
    ]
    texts = [sentence(e)[0] for e in events]
    assert not any("{" in t or "}" in t or "[" in t for t in texts), texts
    assert "SIGTERM to pids 11, 12, SIGKILL after 5s" in texts[1]
    assert texts[2] == "kill done (divergence) in 1.25s, no SIGKILL needed"
    assert texts[5] == "rendezvous port moved from 29500 to 29501"
    assert texts[6].startswith("some new kind: detail a 1, count 3")


def test_paused_reason_is_not_doubled():
    assert sentence(ev(0, "pause", reason="paused: divergence at step 50"))[0] == "PAUSE: divergence at step 50"
    assert sentence(ev(0, "status", status="paused", reason="paused: paused: grad norm"))[0] == "PAUSED: grad norm"
    run = {"status": "paused", "status_word": "PAUSED", "pause_reason": "paused: divergence", "step": 3}
    assert fmt.plain(fmt.status_lines(run)[1]).startswith("paused: divergence · "), "said once, first"
    assert "paused: paused" not in fmt.plain(fmt.status_lines(run)[1])


def test_time_order_with_a_stable_sequence_and_no_repeats():
    events = [
        ev(0, "cooldown", until=T + 2, reason="pre-flight"),
        ev(0, "status", status="cooldown", reason="pre-flight"),      # implied by the cooldown: dropped
        ev(3, "attempt_start", attempt=1, resumed_from=None, pid=42, port=29500),
        ev(3, "status", status="running", reason="attempt 1 started"),  # implied: dropped
        ev(2.5, "alert", level="warning", rule="cooldown_ceiling", message="launching anyway"),  # written late
        ev(4, "alert", level="warning", rule="grad_spike", step=9, message="grad norm 50"),
        ev(4, "alert", level="warning", rule="grad_spike", step=9, message="grad norm 50"),
    ]
    entries = timeline(events)
    # the first cooldown is the pre-flight check, and says so; the attempt names its pids by role
    assert [e.text.split(" ")[0] for e in entries] == ["PRE-FLIGHT:", "WARN", "attempt", "WARN"]
    assert "before the first attempt" in entries[0].text and "COOLDOWN" not in entries[0].text
    assert "pids waiter 42" in entries[2].text and "leader" not in entries[2].text
    assert entries[1].t == T + 2.5 and entries[-1].count == 2 and entries[-1].line.endswith("(×2)")
    assert [e.seq for e in timeline(events)] == [e.seq for e in entries]  # the same order every time


def test_alert_groups_critical_first_and_acknowledged_by_cause(tmp_path):
    events = [
        ev(0, "alert", level="info", rule="note", message="fyi"),
        ev(1, "alert", level="warning", rule="loss_spike", step=5, message="loss 9"),
        ev(2, "crash", attempt=1, **{"class": "cuda_oom"}, summary="CUDA out of memory", recovery="restart"),
        ev(3, "alert", level="critical", rule="non_finite", step=7, message="loss nan"),
    ]
    groups = alertgroups.AlertBook().feed_all(events).groups()
    active = alertgroups.active(groups)
    # the loss spike and the NaN are one cause (divergence): critical, seen twice, steps 5-7
    assert [(g.key, g.level, g.count) for g in active] == [("divergence", "critical", 2),
                                                          ("crash:cuda_oom", "critical", 1)]
    assert active[0].headline() == "loss nan (x2, steps 5-7)"
    bar = alerts.bar_lines(active, room=3)
    assert bar[0][0].startswith("2 active alerts (2 CRIT) · a: acknowledge · d: details") and len(bar) == 3
    alertgroups.acknowledge(tmp_path, active[:1])
    assert [g.key for g in alertgroups.active(
        alertgroups.AlertBook().feed_all(events).groups(alertgroups.read_acks(tmp_path)))] == ["crash:cuda_oom"]
    assert alertgroups.read_acks(tmp_path / "nowhere") == {}


def test_detail_of_a_crash_has_the_report_and_of_an_alert_its_evidence():
    crash = timeline([ev(0, "crash", attempt=2, **{"class": "nccl_timeout"}, summary="watchdog", recovery="restart")])[0]
    report = {"attempt": 2, "class": "nccl_timeout", "exit_code": 1, "signal": None, "summary": "watchdog",
              "evidence": ["Watchdog caught collective operation timeout", "rank 3"], "recovery": "restart"}
    text = "\n".join(entry_detail_lines(crash, report))
    assert "Watchdog caught collective operation timeout" in text and "how it ended: exit 1" in text
    alert = timeline([ev(0, "alert", level="critical", rule="hang", message="no output", values={"quiet_s": 1900.0})])[0]
    assert "  quiet_s: 1900.0" in entry_detail_lines(alert)


def test_no_eta_while_paused_or_hung_and_the_quiet_time_beside_the_hang_limit():
    run = {"status": "running", "status_word": "RUNNING", "step": 10, "max_steps": 100, "eta_s": 90.0,
           "step_time_s": 1.0}
    assert "ETA 1m30s" in fmt.plain(fmt.status_lines(run, quiet_s=2.0)[0])
    line = fmt.plain(fmt.status_lines(run, quiet_s=20.0, heartbeat_s=1800)[0])
    assert "ETA" in line and "quiet 20s (hang limit 30m00s)" in line
    line = fmt.plain(fmt.status_lines(run, quiet_s=300.0, heartbeat_s=1800)[0])
    assert "ETA" not in line and "quiet 5m00s" in line
    paused = {**run, "status": "paused", "status_word": "PAUSED"}
    assert "ETA" not in fmt.plain(fmt.status_lines(paused)[0])


def test_cooldown_past_its_floor_says_what_it_waits_on():
    run = {"status": "cooldown", "status_word": "COOLDOWN 0s",
           "cooldown": {"remaining_s": 0.0, "waiting_on": ["port 29500 busy"]}}
    lines = [fmt.plain(x) for x in fmt.status_lines(run)]
    assert "COOLDOWN 0s" not in lines[0] and "COOLDOWN waiting" in lines[0]
    assert "waiting on: port 29500 busy" in lines[1]


def test_metric_lines_become_aligned_columns_and_other_lines_stay():
    lines = ["{'loss': 1.2345, 'grad_norm': 0.61, 'learning_rate': 9.9e-05, 'global_step/max_steps': '10/100'}",
             "Traceback (most recent call last):",
             "step 12/100 loss 0.7707 grad_norm 1.5 lr 1e-4"]
    rows = MetricColumns().rows(lines)
    assert rows[0].split() == ["step", "loss", "grad", "norm", "lr"]
    assert rows[1].split() == ["10/100", "1.234", "0.61", "9.9e-05"]
    assert rows[2] == "Traceback (most recent call last):"
    assert len(rows[1]) == len(rows[3])  # right-aligned in the same columns


def test_event_details_show_times_as_clock_times_not_epoch_floats():
    entry = timeline([ev(0, "cooldown", attempt=1, until=T + 42, ceiling_at=T + 90, reason="nccl_error: restart")])[0]
    text = "\n".join(entry_detail_lines(entry))
    assert f"until: {fmt.clock(T + 42)}" in text and f"ceiling at: {fmt.clock(T + 90)}" in text
    assert "e+09" not in text


def test_a_checkpoint_sync_reads_as_a_sentence_not_its_fields():
    """Newcomer round 14: the 8xH200 recipe's `sync.dest` copied checkpoint-60 and the event log said
    `sync: attempt 1, ok True, src /tmp/n14-user/out/v0-202…`. The refusal: a failed copy says so."""
    ok = ev(0, "sync", attempt=1, ok=True, src="/o/v0-20261204-142946/checkpoint-60", dest="/mnt/ebs/checkpoint-60",
            step=60, bytes=87829, seconds=0.069, method="rsync", reason="copied and verified", deleted=[])
    text, _ = sentence(ok)
    assert text.startswith("SYNC checkpoint-60 copied to /mnt/ebs/checkpoint-60 and verified ("), text
    assert "True" not in text and "ok " not in text, text
    bad = ev(0, "sync", ok=False, reason="the sync process ended without a result", src="/o/checkpoint-80")
    assert sentence(bad) == ("SYNC FAILED checkpoint-80: the sync process ended without a result", "event--warn")
