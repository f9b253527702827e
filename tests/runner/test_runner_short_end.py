"""A training that exits 0 short of its known total after a SIGTERM it handled (transformers'
``--enable_jit_checkpoint``: save, stop, exit 0) is never called a plain success: through the real
runner, a real trainer script and a real signal the runner did not send (runner/core/ending.py)."""
from __future__ import annotations

import json
import os
import signal

from moeconsole.runner.rundir import rundir
from tests.waiting import until

# A trainer shaped like transformers' with --enable_jit_checkpoint (trainer_jit_checkpoint.py): steps
# logged as ms-swift's dicts with 'global_step/max_steps', a LoRA save every 4 steps; on SIGTERM it
# saves checkpoint-<step> at the next step boundary, stops and exits 0 (printing transformers' own
# handler lines only when argv[2] is "loud": ms-swift's level hides them; saves under argv[3]). The first attempt waits
# at step 6 (its pid in argv[1]) for the signal; a resumed one runs to the end.
TRAINER = r'''
import json, os, signal, sys, time
import numpy as np
from safetensors.numpy import save_file
pidfile, loud, out, total = sys.argv[1], sys.argv[2] == "loud", sys.argv[3], 12
start = 0
if "--resume_from_checkpoint" in sys.argv:
    ck = sys.argv[sys.argv.index("--resume_from_checkpoint") + 1]
    start = json.load(open(os.path.join(ck, "trainer_state.json")))["global_step"]
stop = []
def on_term(signum, frame):
    if loud:
        print("[INFO:transformers.trainer_jit_checkpoint] SIGTERM received, will request JIT checkpoint after 3s", flush=True)
    stop.append(1)
signal.signal(signal.SIGTERM, on_term)
def save(step):
    d = os.path.join(out, f"checkpoint-{step}")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(step)
    t = {f"base_model.model.model.layers.0.self_attn.{m}.lora_{ab}.weight":
         rng.standard_normal((8, 32) if ab == "A" else (32, 8)).astype(np.float32)
         for m in ("q_proj", "k_proj") for ab in "AB"}
    save_file(t, os.path.join(d, "adapter_model.safetensors"), metadata={"format": "pt"})
    json.dump({"peft_type": "LORA", "r": 8, "lora_alpha": 32, "target_modules": ["q_proj", "k_proj"]},
              open(os.path.join(d, "adapter_config.json"), "w"))
    json.dump({"global_step": step}, open(os.path.join(d, "trainer_state.json"), "w"))
for step in range(start + 1, total + 1):
    print("{'loss': %r, 'global_step/max_steps': '%d/%d'}" % (1.0 / step, step, total), flush=True)
    if step % 4 == 0:
        save(step)
    if step == 6 and start == 0:
        open(pidfile, "w").write(str(os.getpid()))
        while not stop:
            time.sleep(0.05)
    if stop:
        if loud:
            print(f"[INFO:transformers.trainer_jit_checkpoint] Saving JIT checkpoint at step {step}", flush=True)
        save(step)
        sys.exit(0)
'''


def _start(harness, tmp_path, loud: bool):
    script = tmp_path / "jit_trainer.py"
    script.write_text(TRAINER)
    pidfile = tmp_path / "trainer.pid"
    run = harness.start(harness.recipe(command=["{python}", str(script), str(pidfile), "loud" if loud else "quiet",
                                                "{run_dir}/output"]))
    pid = int(until(lambda: pidfile.exists() and pidfile.read_text(), timeout=120, what="the trainer at step 6"))
    run.wait(lambda s: s.get("step") == 6, timeout=60, what="step 6 logged")
    os.kill(pid, signal.SIGTERM)     # from outside: not the runner's
    return run


def test_a_sigterm_the_training_says_it_handled_is_a_preemption_resumed_from_its_save(harness, tmp_path):
    run = _start(harness, tmp_path, loud=True)
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=180)
    crash = run.crash(1)
    assert crash["class"] == "preempted" and "step 6 of 12" in crash["summary"], crash
    assert "Saving JIT checkpoint at step 6" in " ".join(crash["evidence"])
    assert [e for e in run.events("success") if e["attempt"] == 1] == [], "attempt 1 is no success"
    assert os.path.basename(run.events("attempt_start")[-1]["resumed_from"]) == "checkpoint-6"
    assert st["status"] == "succeeded" and st["attempt"] == 2 and st["step"] == 12, st


def test_a_silent_exit_0_short_of_the_total_says_so_and_offers_the_restart(harness, tmp_path):
    run = _start(harness, tmp_path, loud=False)
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=180)
    assert st["step"] == 6 and st["attempt"] == 1
    assert "at step 6 of 12, short of its total" in st["pause_reason"], st
    assert f"moeconsole restart {run.id} --force" in st["pause_reason"]
    (success,) = run.events("success")
    assert success["short"] is True and success["max_steps"] == 12
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert "SUCCEEDED" not in shown and "ENDED SHORT (step 6 of 12)" in shown.splitlines()[0], shown
    typed = rundir.command_ref(harness.runs_dir, run.id)[1]   # the run as a shell types it: --runs-dir
    assert f"next      moeconsole restart --force {typed}" in shown
    js = json.loads(harness.cli("runs", "show", run.id, "--json", check=True).stdout)["run"]
    assert (js["status_word"], js["next_command"]) == ("ENDED SHORT (step 6 of 12)", f"moeconsole restart --force {run.id}")
    assert "short of its total" in js["pause_reason"]
    listed = next(l for l in harness.cli("runs", "ls", check=True).stdout.splitlines() if run.id in l)
    assert "ENDED SHORT" in listed and "SUCCEEDED" not in listed, listed
    # the offered restart resumes from the save it made when it stopped
    harness.cli("restart", run.id, "--force", "--now", check=True)
    st = run.wait(lambda s: s.get("attempt") == 2 and s.get("status") == "succeeded", timeout=180, what="attempt 2 done")
    assert st["step"] == 12 and st.get("ended_short") is None
    assert os.path.basename(run.events("attempt_start")[-1]["resumed_from"]) == "checkpoint-6"


# transformers' Trainer without ms-swift: a dict every ``logging_steps`` (5) and nothing at the
# last step (DefaultFlowCallback logs at ``global_step % logging_steps == 0`` and stops at
# ``max_steps``), the bar's total the run's 12 steps, the final save and summary dict.
HF_TRAINER = r'''
import json, os, sys
import numpy as np
from safetensors.numpy import save_file
out, total = sys.argv[1], 12
for step in range(1, total + 1):
    sys.stderr.write("\r%3d%%|#####     | %d/%d [00:01<00:01,  9.00it/s]" % (100 * step // total, step, total))
    sys.stderr.flush()
    if step % 5 == 0:
        print("{'loss': %r, 'grad_norm': 1.0, 'learning_rate': 0.0001, 'epoch': %.2f}" % (1.0 / step, step / total), flush=True)
d = os.path.join(out, f"checkpoint-{total}")
os.makedirs(d, exist_ok=True)
save_file({"w": np.ones((4, 4), np.float32)}, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
json.dump({"model_type": "tiny"}, open(os.path.join(d, "config.json"), "w"))
json.dump({"global_step": total}, open(os.path.join(d, "trainer_state.json"), "w"))
print("{'train_runtime': 1.2, 'train_samples_per_second': 9.0, 'train_steps_per_second': 9.0, 'train_loss': 0.2, 'epoch': 1.0}", flush=True)
sys.stderr.write("\n")
'''


def test_a_run_that_reached_its_total_after_its_last_logging_step_is_a_plain_success(harness, tmp_path):
    """Logged at steps 5 and 10 of 12: steps 11 and 12 trained without a dict of their own. The
    run reached its total; it is SUCCEEDED, never "ENDED SHORT (step 10 of 12)" (ending.short_end:
    short only by at least one logging interval)."""
    script = tmp_path / "hf_trainer.py"
    script.write_text(HF_TRAINER)
    run = harness.start(harness.recipe(command=["{python}", str(script), "{run_dir}/output"]))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=180)
    assert st["status"] == "succeeded" and st.get("ended_short") is None, st
    assert "short of its total" not in (st.get("pause_reason") or "")
    (success,) = run.events("success")
    assert not success.get("short"), success
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert "SUCCEEDED" in shown.splitlines()[0] and "ENDED SHORT" not in shown, shown
