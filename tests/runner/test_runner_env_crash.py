"""Crashes a restart cannot fix, end to end: the demo trainer prints the program's own text at
start-up and exits 1; the runner fails the run once, with the hint, and never starts attempt 2."""
from __future__ import annotations

import json

import pytest

# A token-shaped value planted in the URL the Hub error prints (huggingface_hub never prints the
# token itself, but a proxy URL or a pasted header can carry one): it must not reach any output.
PLANTED = "hf_" + "PlantedTokenValue0123456789abcdef"


@pytest.mark.parametrize("fault, cls, summary, hint", [
    ("driver_old", "environment_error", "supports CUDA 11.4", "update the driver"),
    ("hub_gated", "hub_access", "meta-llama/Llama-3.1-8B", "huggingface-cli login"),
])
def test_a_crash_a_restart_cannot_fix_fails_once_with_its_hint(harness, fault, cls, summary, hint):
    url = f"https://user:{PLANTED}@huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json?token={PLANTED}"
    run = harness.start(harness.recipe(
        command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                 "--max_steps", "12", "--save_steps", "4", "--step_delay", "0.0", "--fault", fault],
        env={"OMP_NUM_THREADS": "1", "MOECONSOLE_DEMO_HUB_URL": url}))
    st = run.wait_status("failed", timeout=90)
    assert st["attempt"] == 1 and st.get("restarts", 0) == 0
    assert not (run.path / "crashes" / "attempt-2.json").exists()
    crash = run.crash(1)
    assert crash["class"] == cls and crash["retryable"] is False and crash["recovery"] == "fail"
    assert summary in crash["summary"] and hint in crash["hint"]
    assert [e["decision"] for e in run.events("crash")] == ["fail"]
    shown = harness.cli("runs", "show", run.id)
    assert "FAILED" in shown.stdout and hint in shown.stdout, shown.stdout
    # the alert's title (runs show's alert list; the console's alert bar and `d` read the same
    # group) names what the crash is about whole: the repo id keeps its namespace
    titles = [line for line in shown.stdout.splitlines() if line.strip().startswith(f"CRIT crash {cls}: ")]
    assert titles and all(summary in t for t in titles), shown.stdout
    # the receipt of a run that never reached a step: the fix, and no Python None in the text
    harness.cli("runs", "receipt", run.id, "--out", str(harness.tmp / "rc"), check=True)
    receipt = (harness.tmp / "rc" / "receipt.md").read_text()
    assert hint in receipt and "- steps — of " in receipt and "None" not in receipt, receipt
    as_json = harness.cli("runs", "show", run.id, "--json").stdout
    for text in (json.dumps(crash), json.dumps(run.events()), shown.stdout, as_json,
                 (run.path / "state.json").read_text()):
        assert PLANTED not in text


def test_the_hub_access_alert_keeps_the_repo_id_at_80_columns(harness, runs_dir):
    """At 80x24 the alert on the status line (and the bar's, and a toast's) drops the low-value
    words of the summary, never the repo id it is about (it comes last in the summary)."""
    import asyncio

    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.status import StatusLine
    from moeconsole.runner.rundir import rundir
    from tests.waiting import until_ui

    url = "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json"
    run = harness.start(harness.recipe(
        command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                 "--max_steps", "12", "--save_steps", "4", "--step_delay", "0.0", "--fault", "hub_gated"],
        env={"OMP_NUM_THREADS": "1", "MOECONSOLE_DEMO_HUB_URL": url}))
    run.wait_status("failed", timeout=90)

    async def status_line() -> str:
        app = MoeConsole(runs_dir, rundir.resolve(runs_dir, run.id), gpu=False, interval=0.25)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and "CRIT crash" in app.screen.query_one(StatusLine).plain_lines[1])
            return app.screen.query_one(StatusLine).plain_lines[1]
    line = asyncio.run(status_line())
    alert = line.split(" · ")[0]
    assert alert.startswith("CRIT crash hub_access: ") and len(alert) <= 80, line
    assert "meta-llama/Llama-3.1-8B" in alert, line


# transformers' tokenizer loading when the Hub gave none of the files (tokenization_utils_base.py,
# PreTrainedTokenizerBase.from_pretrained: ``raise EnvironmentError(f"Can't load tokenizer for ...")``
# after cached_file(..., _raise_exceptions_for_missing_entries=False,
# _raise_exceptions_for_connection_errors=False) resolved every vocab file to None), as ms-swift's
# model loading prints it.
TOKENIZER_FAILURE = """
import sys
sys.stderr.write('''Traceback (most recent call last):
  File "/opt/swift/swift/llm/model/register.py", line 212, in get_model_tokenizer_from_local
    tokenizer = AutoTokenizer.from_pretrained(model_dir, trust_remote_code=True)
  File "/opt/conda/lib/python3.10/site-packages/transformers/models/auto/tokenization_auto.py", line 1010, in from_pretrained
    return tokenizer_class.from_pretrained(pretrained_model_name_or_path, *inputs, **kwargs)
  File "/opt/conda/lib/python3.10/site-packages/transformers/tokenization_utils_base.py", line 2013, in from_pretrained
    raise EnvironmentError(
OSError: Can't load tokenizer for 'Qwen/Qwen3-30B-A3B'. If you were trying to load it from 'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, make sure 'Qwen/Qwen3-30B-A3B' is the correct path to a directory containing all relevant files for a Qwen2TokenizerFast tokenizer.
''')
sys.exit(1)
"""


def test_a_tokenizer_the_hub_did_not_give_is_hub_access_and_fails_once(harness):
    script = harness.tmp / "load_tokenizer.py"
    script.write_text(TOKENIZER_FAILURE)
    run = harness.start(harness.recipe(command=["{python}", str(script)], checkpoints={"dir": None},
                                       resume={"arg": None}))
    st = run.wait_status("failed", timeout=90)
    assert st["attempt"] == 1 and st.get("restarts", 0) == 0, st
    crash = run.crash(1)
    assert (crash["class"], crash["recovery"], crash["retryable"]) == ("hub_access", "fail", False), crash
    assert crash["summary"].startswith("the tokenizer could not be loaded") and "Qwen/Qwen3-30B-A3B" in crash["summary"]
    assert "huggingface-cli download" in crash["hint"] and "HF_TOKEN" in crash["hint"], crash["hint"]
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    # the alert's title (runs show, the console's bar and status line) names the repo
    titles = [line for line in shown.splitlines() if line.strip().startswith("CRIT crash hub_access: ")]
    assert titles and all("Qwen/Qwen3-30B-A3B" in t for t in titles), shown


def test_the_hubs_rate_limit_waits_a_window_and_the_next_attempt_trains(harness):
    """huggingface_hub's 429 at start-up (the demo's hub_rate_limit fault, attempt 1 only): the runner waits
    restart.hub_wait_s and starts attempt 2, which trains to the end. As `unknown` the same crash was failed at
    once here by the no-progress rule (no_progress_attempts 1: one attempt without a step); the wait counts
    neither as a restart nor against progress."""
    run = harness.start(harness.recipe(
        command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                 "--max_steps", "4", "--save_steps", "2", "--step_delay", "0.0", "--fault", "hub_rate_limit#1"],
        restart={"no_progress_attempts": 1, "max_restarts": 0, "hub_wait_s": 1.0, "hub_wait_max_s": 5.0}))
    st = run.wait_status("succeeded", timeout=180)
    assert st["attempt"] == 2, st
    crash = run.crash(1)
    assert crash["class"] == "hub_rate_limited" and crash["recovery"] == "wait_hub", crash
    assert "Qwen/Qwen3-30B-A3B" in crash["summary"] and "retry after 55 s" in crash["summary"], crash
    assert "HF_HUB_OFFLINE=1" in crash["hint"]
    [ev] = run.events("crash")
    assert ev["decision"] == "restart" and "rate limit to reset" in ev["reason"], ev
