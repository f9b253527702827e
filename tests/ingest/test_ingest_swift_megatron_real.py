"""ms-swift 4.6's Megatron trainer as its source prints it (docs/megatron.md, "Audit against the
source"): the per-step dict with its MoE keys and the evaluation dict, read through the parser.

Sources (ms_swift-4.6.0 wheel): swift/megatron/trainers/base.py ``run_train_step`` (l.741-762),
``_log_callback`` (l.142-193, the MoE keys of track_moe_metrics), ``on_log`` (l.134-140, the
``eval_`` prefix put on every key the trainer made); swift/megatron/callbacks/print.py ``on_log``
(l.54-69: ``iteration``, ``elapsed_time``, ``remaining_time``, ``memory(GiB)``,
``train_speed(s/it)`` added to every dict it prints, evaluations included)."""
from __future__ import annotations

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.history import read_events

TRAIN = ("{'loss': 1.5, 'grad_norm': 0.7, 'learning_rate': 2e-05, 'load_balancing_loss': 1.01, 'z_loss': 0.0321, "
         "'iteration': '100/4473', 'elapsed_time': '30m 1s', 'remaining_time': '21h 52m 3s', 'memory(GiB)': 132.91, "
         "'train_speed(s/it)': 18.01}")
EVAL = ("{'eval_loss': 1.43, 'eval_load_balancing_loss': 0.0, 'eval_z_loss': 0.0, 'iteration': '100/4473', "
        "'elapsed_time': '31m 40s', 'remaining_time': '23h 5m 2s', 'memory(GiB)': 132.91, 'train_speed(s/it)': 19.0}")


def _events(lines: list[str]) -> list[tuple[str, dict]]:
    p = LogParser()
    return [(k, o) for k, o in read_events(p, [b"".join(ln.encode() + b"\n" for ln in lines)])
            if k in ("record", "mark")]


def test_the_step_dict_keeps_the_loss_and_the_moe_losses_as_extras():
    (kind, rec), = [e for e in _events([TRAIN]) if e[0] == "record"]
    assert (rec["step"], rec["max_steps"], rec["loss"], rec["grad_norm"], rec["lr"]) == (100, 4473, 1.5, 0.7, 2e-05)
    assert rec["extra"]["load_balancing_loss"] == 1.01 and rec["extra"]["z_loss"] == 0.0321
    assert rec["src"] == "swift_megatron"


def test_an_evaluation_holds_the_evaluation_values_not_the_print_callbacks_bookkeeping():
    evals = [o for k, o in _events([TRAIN, EVAL]) if o.get("kind") == "eval"]
    assert len(evals) == 1
    ev = evals[0]
    assert (ev["step"], ev["split"], ev["loss"]) == (100, "eval", 1.43)
    # memory(GiB) and train_speed(s/it) are PrintCallback's, added to every printed dict: no eval series
    assert ev["values"] == {"eval_loss": 1.43, "eval_load_balancing_loss": 0.0, "eval_z_loss": 0.0}


def test_refusal_an_evaluation_dict_of_another_trainer_keeps_its_own_numbers():
    other = "{'eval_loss': 0.9, 'eval_runtime': 12.5, 'eval_samples_per_second': 40.1, 'epoch': 1.0}"
    ev, = [o for k, o in _events([other]) if o.get("kind") == "eval"]
    assert ev["values"]["eval_runtime"] == 12.5 and ev["values"]["eval_samples_per_second"] == 40.1
