"""Mends of the parser's rules a review found wrong: a line that stalled the parser, values
read as the wrong field, a form a reader missed. Each as a user sees it: the records and
evaluations a log gives."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.history import read_events

REPO = Path(__file__).resolve().parents[2]
VENV_PY = REPO / ".venv" / "bin" / "python"
PY = str(VENV_PY if VENV_PY.exists() else Path(sys.executable))


def parse(*lines: str) -> tuple[list[dict], list[dict]]:
    p = LogParser()
    events = read_events(p, ["".join(ln + "\n" for ln in lines).encode()])
    return [o for k, o in events if k == "record"], [o for k, o in events if k == "mark"]


def test_basicsr_line_cut_in_its_lr_list_does_not_stall_the_parser(tmp_path):
    """A BasicSR line cut inside its lr list (a live run's partial line, a truncated paste) is
    read at once, not after trying every way its digits and commas split (before: 12.8 s for
    five values, doubling or more per value). ``moeconsole parse`` ends with the next line's record;
    the guard is a hang guard (a line of ten values took hours before), not a timing threshold."""
    five = ",".join(["2.000e-04"] * 5)
    ten = ",".join(["2.000e-04"] * 10)
    log = tmp_path / "train.log"
    log.write_text(
        f"2022-12-29 10:43:28,986 INFO: [SAFMN..][epoch:  0, iter:   1,400, lr:({five},\n"
        f"19-08-09 08:25:25.996 - INFO: <epoch:  0, iter:   1,500, lr:{ten},\n"
        f"2022-12-29 10:43:29,000 INFO: [SAFMN..][epoch:  0, iter:   1,600, lr:({'1' * 40}\n"
        f"2022-12-29 10:43:30,000 INFO: [SAFMN..][epoch:  0, iter:   1,700, lr:({ten},)] "
        "[eta: 6:29:14, time (data): 0.141 (0.001)] l_pix: 1.0436e-01 \n")
    res = subprocess.run([PY, "-m", "moeconsole.console.cli", "parse", "--json", str(log)], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    recs = [json.loads(ln) for ln in res.stdout.splitlines() if ln.strip()]
    assert [r["step"] for r in recs] == [1400, 1500, 1600, 1700]   # the cut lines' steps as any line's
    assert (recs[-1]["src"], recs[-1]["loss"], recs[-1]["lr"]) == ("basicsr", 0.10436, 0.0002)


def test_basicsr_form_without_an_experiment_name_is_read():
    """mmsr's, EDVR's and BasicSR 0.x's codes/train.py: '[epoch:{:3d}, iter:{:8,d}, lr:(' +
    '{:.3e},' per group + ')] ' + '{:s}: {:.4e} ' per log, no experiment name before it."""
    recs, _ = parse("19-08-01 10:00:00.000 - INFO: [epoch:  1, iter:     100, lr:(1.000e-04,)] l_pix: 1.2345e-02 ",
                    "19-08-01 10:01:00.000 - INFO: [epoch:  1, iter:   1,200, lr:(5.000e-05,1.000e-04,)] "
                    "l_pix: 1.1e-02 ")
    assert [(r["step"], r["loss"], r["lr"], r["src"]) for r in recs] == [
        (100, 0.012345, 0.0001, "basicsr"), (1200, 0.011, 5e-05, "basicsr")]


def test_torch_xla_rate_is_a_throughput_not_the_learning_rate():
    """torch_xla's test_train_mp scripts: '[xla:{}]({}) Loss={:.5f} Rate={:.2f} GlobalRate={:.2f}
    Time={}' (examples a second): no lr; speech_commands' 'Step #%d: rate %f, ...' keeps its lr."""
    recs, _ = parse("[xla:0](20) Loss=2.26094 Rate=413.55 GlobalRate=181.90 Time=Mon Nov 30 13:00:00 2026",
                    "[xla:0](40) Loss=2.10000 Rate=420.10 GlobalRate=190.00 Time=Mon Nov 30 13:00:05 2026")
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(20, 2.26094, None), (40, 2.1, None)]
    recs, _ = parse("INFO:tensorflow:Step #2: rate 0.000500, accuracy 12.5%, recall 10.00%, precision 20.00%, "
                    "loss 2.628293")
    assert [(r["step"], r["loss"], r["lr"], r["extra"]["recall"]) for r in recs] == [(2, 2.628293, 0.0005, 10.0)]


def test_an_evaluation_bars_loss_synonym_between_training_bars_is_no_training_record():
    """An evaluation or inference loop's bar shows its running mean as ``avg_loss``: between a
    diffusers script's ``Steps`` bars it is no training record at its own counter; the step
    bars' ``step_loss`` stays the step's loss, and a bar described by its steps keeps a synonym."""
    recs, _ = parse("Steps:  10%|█         | 100/1000 [01:00<09:00,  1.67it/s, lr=1e-4, step_loss=0.41]",
                    "Running evaluation: 100%|██████████| 40/40 [00:10<00:00,  4.00it/s, avg_loss=1.873]",
                    "Steps:  20%|██        | 200/1000 [02:00<08:00,  1.67it/s, lr=1e-4, step_loss=0.39]",
                    "dev: 100%|██████████| 40/40 [00:10<00:00,  4.00it/s, mean_loss=1.5]",
                    "Inference: 100%|██████████| 20/20 [00:10<00:00,  2.00it/s, avg_loss=1.4]",
                    "Steps:  30%|███       | 300/1000 [03:00<07:00,  1.67it/s, lr=1e-4, step_loss=0.37]")
    assert [(r["step"], r["loss"]) for r in recs] == [(100, 0.41), (200, 0.39), (300, 0.37)]
    recs, _ = parse("Training steps:  50%|█████     | 50/100 [00:50<00:50,  1.00it/s, avg_loss=0.9]")
    assert [(r["step"], r["loss"]) for r in recs] == [(50, 0.9)]


def test_training_before_a_bracketed_count_is_a_loop_header_only_with_metric_loggers_eta():
    """DINOv2's MetricLogger prints 'Training  [     40/5000000]  eta: ...' (the header, the
    count, then always eta): the count is the step. 'Training [2/20] loss: ... acc: ...' is an
    epoch's summary of a loop of 20 epochs: no step 2 of 20."""
    recs, _ = parse("Training [1/20] loss: 0.7131 acc: 0.5100", "Training [2/20] loss: 0.6131 acc: 0.6100")
    assert [(r["step"], r["max_steps"]) for r in recs] == []
    recs, _ = parse("Training  [     40/5000000]  eta: 221 days, 1:02:03  lr: 0.0001 (0.0000)  "
                    "total_loss: 12.5 (12.5)  time: 1.576891  data: 0.000217  max mem: 67339")
    assert [(r["step"], r["max_steps"], r["loss"]) for r in recs] == [(40, 5000000, 12.5)]


def test_a_bars_redraws_look_their_postfix_names_up_once():
    """Every redraw of a bar asks the synonym table for each postfix name (``formats.
    _sole_synonym_loss``); the table's answer for a name never changes, so a long run of redraws
    costs one lookup per name, not one per name per redraw."""
    from moeconsole.runner.ingest.records import field_of
    lines = [f"Steps: {n // 4:3d}%|#         | {n}/400 [00:{n % 60:02d}<01:00,  1.67it/s, lr=1e-4, "
             f"step_loss=0.{n:03d}, grad_norm=0.5, global_max_loss=0.6, m8_probe_name=1.0]" for n in range(1, 201)]
    before = field_of.cache_info()
    recs, _ = parse(*lines)
    after = field_of.cache_info()
    assert len(recs) == 200 and recs[-1]["loss"] == 0.2
    assert after.misses - before.misses < 20            # the few names once each, not 200 redraws' worth
    assert after.hits - before.hits >= 200


def test_lines_that_split_a_run_many_ways_do_not_stall_the_parser(tmp_path):
    """The same backtracking shape elsewhere: a slash-grouped value list followed by a letter
    (``shape._GROUPED_RE``: eight values of eight digits took minutes), torchtune's
    ``Step N | name:value ...`` with glued ``a:a:a:`` pieces (``formats._TORCHTUNE_STEP_RE``), a
    ``|`` column of a number and a long word (``shape._NAME_AFTER_RE``: 300 letters, 16 s), a
    table rule of dashes followed by a letter (``formats.is_hf_table_rule``: 50 dashes, 8 s). Each is
    read at once and the log's next line gives its record (hang guards, not timing thresholds)."""
    log = tmp_path / "train.log"
    log.write_text("loss a/b/c/d/e/f/g/h=" + "/".join(["12345678"] * 8) + "/x\n"
                   "Step 1 | " + "a:" * 40 + " !\n"
                   "loss 1.0 | 2.0 " + "a" * 300 + "!\n"
                   "|" + "-" * 60 + "x\n"
                   "step 7, loss 0.25\n")
    res = subprocess.run([PY, "-m", "moeconsole.console.cli", "parse", "--json", str(log)], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    recs = [json.loads(ln) for ln in res.stdout.splitlines() if ln.strip()]
    assert (recs[-1]["step"], recs[-1]["loss"]) == (7, 0.25)
    res = subprocess.run([PY, "-c", "from moeconsole.runner.ingest import formats; "
                          "print(formats.is_hf_table_rule('|' + '-' * 60 + 'x'), formats.is_hf_table_rule('|:---:|---|'))"],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.stdout.split() == ["False", "True"], res.stderr
