"""GRPO with the real ms-swift 4.6 on CPU, run by the real CLI and runner (round 5).

- A GRPO run whose every group scores alike (ms-swift's built-in ``format`` reward: the random model
  never writes its tags) learns nothing: ``frac_reward_zero_std`` 1, loss and grad norm 0 at every step.
  It is one ``reward_no_signal`` warning with the fix (events, ``runs show``, ``--json``), and the run
  still succeeds; a run whose groups vary (a reward of the completion's length) never warns.
- ms-swift 4.6.0's GRPO trainer imports ``msgspec``, which ms-swift does not require: ``lint`` says so
  before anything starts (before: only the run, failing at start-up after loading the model; ``run``'s
  pre-flight asks the same probe since round 6: tests/swift/test_swift_round6.py).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.swift.swift_helpers import REPO, RECIPE, SWIFT_PYTHON, Run, cli, require_swift

GRPO = ["args.rlhf_type=grpo", "args.use_vllm=false", "args.num_generations=2", "args.max_completion_length=16",
        "args.per_device_train_batch_size=2", "args.gradient_accumulation_steps=2", "args.max_steps=6",
        "args.save_steps=3"]

PLUGIN = '''from swift.rewards import ORM, orms


class TinyChars(ORM):
    """The completion's length in characters: random completions differ, so every group varies."""

    def __init__(self, args=None, **kwargs):
        super().__init__(args)

    def __call__(self, completions, **kwargs):
        return [float(len(c)) for c in completions]


orms["tiny_chars"] = TinyChars
'''


def rlhf_recipe(where: Path) -> Path:
    """recipes/swift-tiny-cpu.yaml with `swift rlhf` in place of `swift sft` (its paths kept on the checkout)."""
    text = RECIPE.read_text().replace("{recipe_dir}/..", str(REPO))
    assert '/bin/swift", sft,' in text
    path = where / "swift-rlhf.yaml"
    path.write_text(text.replace('/bin/swift", sft,', '/bin/swift", rlhf,'))
    return path


def prompts(tiny: Path, where: Path) -> Path:
    """The tiny dataset's user turns only: GRPO generates the answers."""
    out = where / "prompts.jsonl"
    rows = [json.loads(line) for line in (tiny / "data.jsonl").read_text().splitlines()]
    out.write_text("".join(json.dumps({"messages": [m for m in r["messages"] if m["role"] != "assistant"]}) + "\n"
                           for r in rows))
    return out


def msgspec_dir(where: Path) -> Path:
    """A directory holding msgspec for .venv-swift's Python: this environment's own copy (the same CPython)."""
    import msgspec
    ver = json.loads(__import__("subprocess").run([str(SWIFT_PYTHON), "-c", "import sys, json; print(json.dumps("
                                                   "list(sys.version_info[:2])))"], capture_output=True, text=True,
                                                  timeout=120).stdout)
    if ver != list(sys.version_info[:2]):
        pytest.skip(f"msgspec of Python {sys.version_info[:2]} cannot serve .venv-swift's {ver}")
    d = where / "msgspec-path"
    d.mkdir(exist_ok=True)
    link = d / "msgspec"
    if not link.exists():
        link.symlink_to(Path(msgspec.__file__).parent)
    return d


def start_rlhf(runs: Path, recipe: Path, *overrides: str) -> Run:
    proc = cli(runs, "run", str(recipe), "--detach", *(a for o in overrides for a in ("--set", o)))
    assert proc.returncode == 0, f"moeconsole run exited {proc.returncode}: {proc.stderr}"
    return Run(runs / proc.stdout.strip().splitlines()[0])


def alerts(run: Run, rule: str) -> list[dict]:
    return [e for e in run.events("alert") if e.get("rule") == rule]


@pytest.fixture(scope="module")
def grpo_pair(swift_runs, tiny, tmp_path_factory) -> tuple[Run, Run]:
    """Two 6-step GRPO runs side by side: ``format`` (every group alike) and ``tiny_chars`` (groups vary)."""
    require_swift()
    where = tmp_path_factory.mktemp("grpo")
    recipe, data, path = rlhf_recipe(where), prompts(tiny, where), msgspec_dir(where)
    (where / "plugin.py").write_text(PLUGIN)
    common = [f"args.model={tiny / 'model'}", f"args.dataset={data}", f"env.PYTHONPATH={path}", *GRPO]
    flat = start_rlhf(swift_runs, recipe, *common, "args.reward_funcs=format")
    varied = start_rlhf(swift_runs, recipe, *common, "args.reward_funcs=tiny_chars",
                        f"args.external_plugins={where / 'plugin.py'}")
    for run in (flat, varied):
        run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "failed"), "the run ended")
    return flat, varied


def test_a_grpo_run_whose_groups_all_score_alike_is_one_warning_and_still_succeeds(grpo_pair):
    flat, _ = grpo_pair
    assert flat.state()["status"] == "succeeded"
    logged = [r for r in flat.metrics() if "frac_reward_zero_std" in (r.get("extra") or {})]
    assert [r["step"] for r in logged] == [1, 2, 3, 4, 5, 6]
    assert all(r["extra"]["frac_reward_zero_std"] == 1 and r["loss"] == 0 and r["grad_norm"] == 0 for r in logged)
    (a,) = alerts(flat, "reward_no_signal")
    assert (a["level"], a["step"]) == ("warning", 5)
    assert "every group's rewards were equal at steps 1-5" in a["message"] and "--num_generations" in a["message"]
    snap = json.loads(cli(flat.path.parent, "--json", str(flat.path), "--once").stdout)
    assert [x["rule"] for x in snap["alerts"]] == ["reward_no_signal"], snap["alerts"]
    (group,) = snap["alert_groups"]
    assert (group["title"], group["standing"]) == ("GRPO learns nothing", "open")
    shown = cli(flat.path.parent, "runs", "show", str(flat.path)).stdout
    assert "alerts    open 1" in shown, shown


def test_a_grpo_run_whose_groups_vary_never_warns(grpo_pair):
    _, varied = grpo_pair
    assert varied.state()["status"] == "succeeded"
    fracs = [r["extra"]["frac_reward_zero_std"] for r in varied.metrics() if "frac_reward_zero_std" in (r.get("extra") or {})]
    assert len(fracs) == 6 and min(fracs) < 1
    assert alerts(varied, "reward_no_signal") == []


def test_lint_says_grpo_needs_msgspec_before_anything_starts(tiny, tmp_path):
    require_swift()
    probe = __import__("subprocess").run([str(SWIFT_PYTHON), "-c", "import msgspec"], capture_output=True, timeout=120)
    if probe.returncode == 0:
        pytest.skip(".venv-swift has msgspec: nothing is missing")
    recipe = rlhf_recipe(tmp_path)
    sets = [a for o in (f"args.model={tiny / 'model'}", f"args.dataset={prompts(tiny, tmp_path)}", *GRPO,
                        "args.reward_funcs=format") for a in ("--set", o)]
    lint = cli(None, "lint", str(recipe), *sets)
    assert lint.returncode != 0
    said = [ln for ln in lint.stdout.splitlines() if "swift_missing_module" in ln]
    assert len(said) == 1 and "'msgspec'" in said[0] and "GRPOTrainer" in said[0] and "pip install msgspec" in said[0]
    # the recipe's env PYTHONPATH naming a directory with it: the probe imports as the run would
    ok = cli(None, "lint", str(recipe), *sets, "--set", f"env.PYTHONPATH={msgspec_dir(tmp_path)}")
    assert "swift_missing_module" not in ok.stdout, ok.stdout


def test_a_distillation_from_its_own_teacher_is_no_grad_norm_spike_and_its_newest_save_is_the_resume_point(
        swift_runs, tiny, tmp_path):
    """`swift rlhf --rlhf_type gkd` with the student as its own teacher: grad norm 0 at step 1 (measured). Before,
    that 0 seeded the grad-norm EMA, step 6's 0.0028 was a 24x "spike", checkpoint-6 SUSPECT and the resume
    point checkpoint-3. Reviewed (R57): run past the warm-up (14 steps), step 2's near-zero 1.384e-05 then seeded the
    EMA: false spikes at steps 7 and 12, checkpoints 9 and 12 SUSPECT; the warm-up's median seeds it now."""
    require_swift()
    recipe = rlhf_recipe(tmp_path)
    run = start_rlhf(swift_runs, recipe, f"args.model={tiny / 'model'}", f"args.dataset={tiny / 'data.jsonl'}",
                     "args.rlhf_type=gkd", f"args.teacher_model={tiny / 'model'}", "args.max_completion_length=16",
                     "args.per_device_train_batch_size=2", "args.gradient_accumulation_steps=1", "args.max_steps=14",
                     "args.save_steps=3", f"env.PYTHONPATH={msgspec_dir(tmp_path)}")
    st = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "failed"), "the run ended")
    assert st["status"] == "succeeded"
    grads = [r["grad_norm"] for r in run.metrics() if r.get("grad_norm") is not None]
    assert len(grads) == 14 and grads[0] == 0 and max(grads) > 0
    assert [a["rule"] for a in run.events("alert")] == []
    assert Path(st["resume_point"]["path"]).name == "checkpoint-14"   # saves at 3, 6, 9, 12 and the last step


def test_parse_of_each_runs_log_gives_the_runners_reward_warning(grpo_pair):
    """`moeconsole parse` of the run's train.log runs the runner's record watches (round 6; before: "alerts none")."""
    flat, varied = grpo_pair
    out = cli(None, "parse", str(flat.path / "train.log")).stdout
    assert "alerts       1 warning reward_no_signal" in out and "steps 1-5" in out, out
    assert "reward_no_signal" not in cli(None, "parse", str(varied.path / "train.log")).stdout
