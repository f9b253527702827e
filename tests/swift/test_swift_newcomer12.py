"""Newcomer round 12 with the real ms-swift 4.6: a recipe with a mistyped flag (`--learning_rte`), which `run`'s
pre-launch lint cannot refuse (its flag table lacks transformers' TrainingArguments), fails on ms-swift's own
`ValueError: remaining_argv: ['--learning_rte', '5e-3']` as config_error. The newcomer then typed the
`moeconsole restart` the run had named: attempt 2 ran the same command, was judged `unknown` (a usage text
"on a later attempt" was taken for a command that had run before) and restarted, attempt 3 likewise, and the
run's LAST CRASH read `unknown`. Now the restart says it repeats the refused command, and the same refusal is
config_error again: the run fails at attempt 2."""
from __future__ import annotations

from tests.swift.swift_helpers import TIMEOUT, cli, require_swift, start
from tests.waiting import until


def test_a_restart_of_a_run_whose_command_was_refused_fails_at_once_as_config_error(swift_runs, tiny):
    require_swift()
    run = start(swift_runs, tiny, "args.learning_rte=5e-3")
    until(lambda: run.state().get("status") == "failed", TIMEOUT, what="attempt 1 refused")
    assert (run.state().get("last_crash") or {}).get("class") == "config_error", run.state()
    restart = cli(swift_runs, "restart", run.id)
    assert "its command was refused (config_error), and the restart runs the same command" in restart.stderr, \
        restart.stderr
    until(lambda: run.state().get("attempt") == 2 and run.state().get("status") == "failed", TIMEOUT,
          what="attempt 2 judged")
    state = run.state()
    assert (state.get("last_crash") or {}).get("class") == "config_error", state
    assert "remaining_argv: ['--learning_rte', '5e-3']" in state["last_crash"]["summary"]
    assert [c["class"] for c in run.events("crash")] == ["config_error", "config_error"]


def test_runs_refusal_names_the_lint_that_asks_ms_swifts_own_parser(swift_runs, tiny):
    """`run`'s pre-flight reads only the flag table, which lacks transformers' TrainingArguments: it refused the
    mistaken recipe with 1 lint error where `lint` said 2 (`--learning_rte`, by ms-swift's own parser). Its
    refusal now names that lint, --set items and all; without a training Python to ask, it does not."""
    require_swift()
    from tests.swift.swift_helpers import RECIPE
    sets = ["checkpoints.dir={run_dir}/out", "args.learning_rte=5e-3"]
    refused = cli(swift_runs, "run", str(RECIPE), *(a for s in sets for a in ("--set", s)))
    assert refused.returncode == 1, refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert last.endswith("1 lint error(s); nothing launched; `moeconsole lint " + str(RECIPE)
                         + " --set 'checkpoints.dir={run_dir}/out' --set args.learning_rte=5e-3` also asks "
                         "ms-swift's own parser, for the flags its table lacks"), last
    no_python = cli(swift_runs, "run", str(RECIPE), *(a for s in sets + ["swift.python=/nonexistent/python"]
                                                      for a in ("--set", s)))
    assert no_python.stderr.strip().splitlines()[-1].endswith("lint error(s); nothing launched"), no_python.stderr
