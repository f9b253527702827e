"""Round 12 of the real ms-swift 4.6 audit: ``--num_train_epochs`` together with ``--max_steps``.

transformers 5.19 takes ``--max_steps`` when it is above 0 and derives the epochs from it (trainer.py l.727-728 logs
"max_steps is given, it will override any value given in num_train_epochs"; l.2508-2511 recompute the epochs from
``max_steps``). ms-swift 4.6 passes both on unchanged. Measured: ``--num_train_epochs 50 --max_steps 4`` trains 4 steps (``'global_step/max_steps': '4/4'``) and
the run reads SUCCEEDED at 4 of 4, never ENDED SHORT; the runner's total is the one the log prints.

A restart sent through the control socket (the run screen's ``r``) when the save is at the training's total: the
runner pauses again before it launches, "nothing left to train"."""
from __future__ import annotations

import json

from tests.swift.swift_helpers import cli, require_swift, start


def test_max_steps_wins_over_num_train_epochs(swift_runs, tiny):
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=4", "args.save_steps=2", "args.num_train_epochs=50")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed", "paused"),
                                  "the end")
    assert "'global_step/max_steps': '4/4'" in run.log()
    assert "'global_step/max_steps': '5/" not in run.log()
    assert state["status"] == "succeeded" and state.get("ended_short") is None, state
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert shown["status_word"] == "SUCCEEDED", shown


def test_a_restart_sent_through_the_control_socket_at_the_total_stays_paused(swift_runs, tiny, tmp_path):
    """Round 11 tested ``moeconsole restart``'s refusal; the run screen's ``r`` and any other client send
    ``{"cmd": "restart"}`` to the runner's control socket, which the CLI's check never sees. The runner asks the same
    before it launches (``Supervisor._launch_at_total_refusal``): measured, no attempt 2, no ``checkpoint-5``, no ``5/4``."""
    require_swift()
    from moeconsole.runner.supervisor import control
    from tests.swift.test_swift_round10 import END_CRASH
    plugin = tmp_path / "crash_at_end.py"
    plugin.write_text(END_CRASH.format(marker=str(tmp_path / "crashed-once")))
    run = start(swift_runs, tiny, "args.max_steps=4", "args.save_steps=2", f"args.external_plugins={plugin}",
                "args.callbacks=crash_at_end")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed", "paused"),
                                  "the pause")
    assert state["status"] == "paused" and state["attempt"] == 1, state
    control.send(run.path / "control.sock", {"cmd": "restart"})
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed", "paused")
                                  and bool(run.events("pause")) and len(run.events("pause")) >= 2
                                  or (s.get("attempt") or 0) >= 2, "the runner's answer")
    assert not list(run.path.glob("output/v*/checkpoint-5")), "restarted past its total"
    assert (state["status"], state["attempt"], state["step"]) == ("paused", 1, 4), state
    assert "5/4" not in run.log()
    assert "nothing left to train" in json.dumps(run.events("pause")[-1]), run.events("pause")
    cli(swift_runs, "kill", run.id)


def test_eval_steps_with_a_val_split_reads_as_ms_swift_printed_it(swift_runs, tiny):
    """``--eval_strategy steps --eval_steps 2 --split_dataset_ratio 0.1`` in ``swift sft``, 6 steps, saves every 2:
    ms-swift prints an eval dict (``eval_loss`` 4 digits) after train steps 2, 4, 6 and at the end
    ``last_model_checkpoint`` and ``best_model_checkpoint`` (both checkpoint-6 here: eval_loss 6.877, 6.835, 6.831).
    Measured: evals.jsonl holds the three at their steps, the run's best save is the one ms-swift named, by
    ``eval_loss`` (the 8-decimal value trainer_state.json holds), and the run is SUCCEEDED at 6 of 6."""
    require_swift()
    import re
    run = start(swift_runs, tiny, "args.max_steps=6", "args.save_steps=2", "args.eval_strategy=steps",
                "args.eval_steps=2", "args.split_dataset_ratio=0.1")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed", "paused"), "end")
    log = run.log()
    printed = [(int(m.group(2)), float(m.group(1))) for m in
               re.finditer(r"'eval_loss': '([0-9.]+)'.*?'global_step/max_steps': '(\d+)/6'", log)]
    assert [s for s, _ in printed] == [2, 4, 6], printed
    evals = [json.loads(line) for line in (run.path / "evals.jsonl").read_text().splitlines()]
    assert [(e["step"], e["loss"]) for e in evals] == printed, evals
    best_line = re.search(r"best_model_checkpoint: (\S+)", log)
    assert best_line is not None
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert shown["status_word"] == "SUCCEEDED" and state["step"] == 6, shown
    best = shown["best_checkpoint"]
    assert (best["path"], best["metric"], best["ok"]) == (best_line.group(1), "eval_loss", True), best
    assert round(best["value"], 3) == min(loss for _, loss in printed), best
