"""The modes users run with the real ms-swift 4.6 (a few steps each, on CPU), run by the real CLI
and runner: what moeconsole shows and writes against what ms-swift printed and saved."""
from __future__ import annotations

import json

import pytest

from tests.swift.swift_helpers import Run, require_swift, start


def swift_logged(run: Run) -> list[dict]:
    """ms-swift's own logging.jsonl records of the run (every v<N>-<time>/ dir, in order)."""
    out = []
    for logfile in sorted((run.path / "output").glob("v*-*/logging.jsonl")):
        out += [json.loads(line) for line in logfile.read_text().splitlines()]
    return out


def evals_of(run: Run) -> list[dict]:
    try:
        return [json.loads(line) for line in (run.path / "evals.jsonl").read_text().splitlines()]
    except OSError:
        return []


@pytest.fixture(scope="module")
def evaluated(swift_runs, tiny) -> Run:
    """`--eval_steps 4 --split_dataset_ratio 0.1`: ms-swift evaluates at steps 4 and 8."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=8", "args.save_steps=4", "args.eval_steps=4",
                "args.split_dataset_ratio=0.1")
    run.wait(lambda s: s.get("status") == "succeeded", "status succeeded")
    return run


def test_evaluations_are_the_ones_ms_swift_logged_and_nothing_else(evaluated):
    """The `eval_steps=4.0,` line of ms-swift's argument dump and its `run sh:` command line were
    evaluations without a step (evals.jsonl, the run screen's eval pane) before the real ones."""
    logged = [(int(r["global_step/max_steps"].split("/")[0]), r["eval_loss"])
              for r in swift_logged(evaluated) if "eval_loss" in r]
    assert [s for s, _ in logged] == [4, 8]
    evals = evals_of(evaluated)
    assert [(e["step"], e["split"], e["src"]) for e in evals] == [(4, "eval", "swift_dict"), (8, "eval", "swift_dict")]
    for e, (_, loss) in zip(evals, logged):
        assert e["loss"] == pytest.approx(loss, rel=1e-3)
        assert e["values"]["eval_token_acc"] >= 0
    # the evaluation dicts are no training steps
    assert [m["step"] for m in evaluated.metrics()] == list(range(1, 9))


@pytest.mark.parametrize("override, said", [
    # swift/template/register.py l.50: one 3.5 KB line naming every template it knows
    ("args.template=qwen9_nope", "template_type: 'qwen9_nope' not in ["),
    # swift/dataset/loader.py l.92
    ("args.dataset=/nonexistent/z7/data.jsonl", "The local path does not exist, dataset_id: `/nonexistent/z7/data.jsonl`"),
])
def test_ms_swifts_start_up_refusals_fail_at_once_as_config_errors(swift_runs, tiny, override, said):
    """ms-swift refuses before training starts: one attempt, `config_error`, failed (no restart),
    and the line the user sees is ms-swift's own. The unknown template was `unknown` ("exited
    with code 1") and restarted three times: the runner's log tail kept only the end of that line."""
    require_swift()
    run = start(swift_runs, tiny, override)
    state = run.wait(lambda s: s.get("status") == "failed", "status failed")
    assert state["restarts"] == 0 and state["attempt"] == 1
    (crash,) = run.events("crash")
    assert (crash["class"], crash["decision"]) == ("config_error", "fail")
    assert said in crash["summary"] and said in state["pause_reason"]
    assert run.metrics() == []
