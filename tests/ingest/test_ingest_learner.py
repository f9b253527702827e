"""The shape learner, the declared line format (``log_format`` / ``parse --log-format``),
``parse --explain`` and hostile input, as a user meets them: real files, the real CLI in a
subprocess, the recipe loader. The families themselves are checked on real public logs
(test_ingest_corpus.py); these are the behaviours around them."""
from __future__ import annotations

import json
import os

import pytest

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.ingest import LogParser
from tests.ingest.ingest_samples import parsed
from moeconsole.runner.ingest.userformat import LineFormatError, parse_line_format
from moeconsole.runner.recipes import recipe as recipes
from tests.ingest.test_ingest_cli import parse_cli

# a log no named reader and no learned shape can read: the loss is "ce", the step a bare "it"
ODD = "\n".join(f"#{i * 10:05d}# ce~{3.0 - i / 10:.2f} ~ rate~1e-4" for i in range(1, 6)) + "\n"


def test_a_declared_regex_reads_a_log_nothing_else_reads(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(ODD)
    plain = parse_cli(str(log), "--json")
    assert plain.returncode == 0 and plain.stdout == ""          # not read without the declaration
    res = parse_cli(str(log), "--json", "--log-format", r"^#(?P<step>\d+)# ce~(?P<loss>\S+) ~ rate~(?P<lr>\S+)")
    assert res.returncode == 0, res.stderr
    recs = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert [(r["step"], r["loss"], r["lr"], r["src"]) for r in recs] == [
        (10, 2.9, 1e-4, "user"), (20, 2.8, 1e-4, "user"), (30, 2.7, 1e-4, "user"), (40, 2.6, 1e-4, "user"),
        (50, 2.5, 1e-4, "user")]
    summary = parse_cli(str(log), "--log-format", r"^#(?P<step>\d+)# ce~(?P<loss>\S+)")
    assert "steps        10 -> 50" in summary.stdout and "last 2.5 (step 50)" in summary.stdout


def test_a_declared_key_value_spec(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("it;10 ce;2.5 gn;0.75\nit;20 ce;2.25 gn;nan\n")
    res = parse_cli(str(log), "--json", "--log-format", "kv ; it")
    recs = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert [(r["step"], r["extra"]["ce"], r["extra"]["gn"]) for r in recs] == [(10, 2.5, 0.75), (20, 2.25, "nan")]


@pytest.mark.parametrize("spec, words", [
    (r"^it (?P<step>\d+", "not a valid regular expression"),
    (r"^it (?P<loss>\d+)", "needs a (?P<step>...) group"),
    ("kv", "write 'kv SEP'"),
    ("   ", "empty"),
])
def test_a_bad_declared_format_is_one_line_and_exit_2(tmp_path, spec, words):
    log = tmp_path / "train.log"
    log.write_text(ODD)
    for extra in ([], ["--json"], ["--explain"]):
        res = parse_cli(str(log), *extra, "--log-format", spec)
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr.startswith("moeconsole: log format: ") and words in res.stderr
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def test_the_recipe_key_is_checked_when_the_recipe_is_loaded(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("name: t\ncommand: [python, train.py]\nlog_format: '^it (?P<step>\\d+) ce=(?P<loss>\\S+)'\n")
    assert recipes.load(good).log_format == r"^it (?P<step>\d+) ce=(?P<loss>\S+)"
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: t\ncommand: [python, train.py]\nlog_format: '^it (\\d+'\n")
    with pytest.raises(InputError) as exc:
        recipes.load(bad)
    assert "log format: not a valid regular expression" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(LineFormatError):
        parse_line_format("kv = it extra")


def test_the_runner_reader_uses_the_recipe_format():
    """The runner's live reader is built from the recipe (``line_format_of``) and reads the
    declared lines however the slices are cut."""
    from moeconsole.runner.ingest.live import LiveReader
    from moeconsole.runner.ingest.userformat import line_format_of
    fmt = line_format_of(r"^#(?P<step>\d+)# ce~(?P<loss>\S+)")
    reader = LiveReader(line_format=fmt)
    data = ODD.encode()
    events = []
    for i in range(0, len(data), 7):
        events += reader.feed(data[i:i + 7])
    recs = [obj for kind, obj in events if kind == "record"]
    assert [(r["step"], r["loss"]) for r in recs] == [(10, 2.9), (20, 2.8), (30, 2.7), (40, 2.6), (50, 2.5)]
    assert line_format_of(None) is None


def test_explain_names_the_reader_the_step_and_the_skipped_lines(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("Namespace(lr=0.1, epochs=3)\n"
                   "Epoch: [0][  10/5005]\tTime  0.257 ( 0.593)\tLoss 6.9107e+00 (6.9217e+00)\n"
                   "Epoch: [0][  20/5005]\tTime  0.250 ( 0.590)\tLoss 6.8000e+00 (6.9000e+00)\n"
                   "[INFO:swift] Saving model checkpoint to /o/checkpoint-20\n"
                   "step 5: the loss went up\n")
    res = parse_cli(str(log), "--explain")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "5 lines, 2 training records, 0 evaluations, 2 lines skipped" in out
    assert "2 line(s) -> records by learned (2)" in out and "fields: epoch, loss, step_time_s" in out
    assert "step: an unnamed n/N counter" in out
    assert "marks: checkpoint_saved (1)" in out
    assert "skipped: looked like metrics, no reader or shape fits (1)" in out
    assert "e.g. line 5: step 5: the loss went up" in out


def test_explain_shows_the_last_redraw_of_bars_stored_without_carriage_returns(tmp_path):
    """A bar's redraws glued on one line (their ``\\r`` dropped) are read as tqdm wrote them
    (``lines.unglue_redraws``): ``--explain`` shows the redraw the parser read last as the
    line's example, not the whole run of redraws."""
    log = tmp_path / "train.log"
    log.write_text("Epoch 1/5:   0%|          | 0/1197 [00:00<?, ?it/s, loss=5.14, lr=0]"
                   "Epoch 1/5:   0%|          | 1/1197 [00:00<18:10,  1.10it/s, loss=5.14, lr=0]"
                   "Epoch 1/5:   0%|          | 1/1197 [00:01<18:10,  1.10it/s, loss=4.16, lr=0]"
                   "Epoch 1/5:   0%|          | 2/1197 [00:01<16:55,  1.18it/s, loss=4.16, lr=0]\n")
    res = parse_cli(str(log), "--explain")
    assert res.returncode == 0, res.stderr
    assert "1 lines, 2 training records" in res.stdout
    assert "e.g. line 1: Epoch 1/5:   0%|          | 2/1197 [00:01<16:55,  1.18it/s, loss=4.16, lr=0]\n" in res.stdout


def test_bad_input_is_skipped_and_counted_never_a_traceback(tmp_path):
    log = tmp_path / "train.log"
    good = "step: 1  loss: 2.0  grad_norm: 0.5\n"
    with open(log, "wb") as f:
        f.write(good.encode())
        f.write(b"x" * (10 << 20) + b"\n")                      # a 10 MB line
        f.write(os.urandom(1 << 16).replace(b"\n", b"") + b"\n")  # binary data
        f.write(b"loss \xff\xfe\xfa step 7 \xc3\x28 = 9\n")     # invalid UTF-8
        f.write(b"step: 2  loss: 1.5  grad_norm: 0.4\n")
    for extra in ([], ["--json"], ["--explain"]):
        res = parse_cli(str(log), *extra, timeout=120)
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    res = parse_cli(str(log), "--json")
    assert [json.loads(ln)["step"] for ln in res.stdout.splitlines()] == [1, 2]
    summary = parse_cli(str(log)).stdout
    assert "not understood" in summary
    p = LogParser()
    parsed(p, log.read_bytes())
    assert p.stats.overlong_lines == 1 and p.stats.unparsed_lines >= 3


def test_bar_postfix_with_other_keys_and_nan_and_validation_bars_between():
    """A tqdm bar whose postfix holds metrics under any name (nan included) gives a record per
    count; a validation bar with its own postfix between two training redraws is never a step."""
    bar = "Epoch 1: {pct}%|###       | {n}/10 [00:0{n}<00:05,  1.50it/s, acc={acc}, reward={rew}]"
    val = "Validation DataLoader 0:  50%|#####     | 5/10 [00:00<00:00, 20.1it/s, val_acc=0.7]"
    lines = [bar.format(pct=10 * n, n=n, acc=0.1 * n, rew="nan" if n == 2 else 0.5) for n in (1, 2)] + [val] + \
        [bar.format(pct=30, n=3, acc=0.3, rew=0.5)]
    p = LogParser()
    recs, _ = parsed(p, ("\n".join(lines) + "\n").encode())
    assert [r["step"] for r in recs] == [1, 2, 3]
    assert recs[1]["extra"]["acc"] == 0.2 and recs[1]["extra"]["reward"] != recs[1]["extra"]["reward"]  # nan


@pytest.mark.parametrize("prefix", ["2024-05-01 10:00:00 | ", "[2024-05-01 10:00:00,123] ", "node-7:3: ",
                                    "2024-05-01T10:00:00.123Z ", "I0912 11:40:27.956218 139735 training.py:652] "])
def test_a_constant_prefix_is_stripped_on_any_line_even_megatrons_memory_report(prefix):
    """A log viewer's date column, a timestamp, host:rank, glog's columns: the named readers
    still read what stands behind them (the iteration line and the memory report)."""
    meg = (" [2026-01-02 03:04:05] iteration       10/     200 | consumed samples:          160 | "
           "elapsed time per iteration (ms): 6200.3 | learning rate: 2.000000E-05 | global batch size:    16 | "
           "lm loss: 1.234568E+00 | loss scale: 1.0 | grad norm: 0.877 |")
    mem = ("[Rank 3] (after 10 iterations) memory (MB) | allocated: 20480.00 | max allocated: 57344.00 | "
           "reserved: 61440.00 | max reserved: 62464.00")
    p = LogParser()
    recs, _ = parsed(p, f"{prefix}{meg}\n{prefix}{mem}\n".encode())
    assert [(r["src"], r["step"], r["loss"], r["mem_gib"]) for r in recs] == [
        ("megatron", 10, 1.234568, None), ("megatron_mem", 10, None, 61.0)]
    assert recs[1]["extra"]["rank"] == 3 and p.stats.unparsed_lines == 0


def test_deepspeed_step_reports_do_not_become_steps_beside_the_trainers_dicts():
    """DeepSpeed's engine prints f"step={global_steps}, skipped={skipped_steps}, lr={lr}, mom={mom}"
    through log_dist (deepspeed/runtime/engine.py) beside the Hugging Face trainer's dicts: the
    learner must not make steps of them (the dicts' numbering stays 1, 2)."""
    ds = "[2023-06-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={}, skipped=0, lr=[{}], mom=[(0.9, 0.999)]"
    lines = [ds.format(10, "9.5e-06"), "{'loss': 1.2, 'learning_rate': 9.5e-06, 'epoch': 0.1}",
             ds.format(20, "9.0e-06"), "{'loss': 1.1, 'learning_rate': 9.0e-06, 'epoch': 0.2}"]
    p = LogParser()
    recs, _ = parsed(p, ("\n".join(lines) + "\n").encode())
    assert [(r["step"], r["loss"], r["src"]) for r in recs] == [(1, 1.2, "hf_dict"), (2, 1.1, "hf_dict")]
    assert p.stats.ignored_lines == 2


# torch.distributed.elastic's failure summary (torch/distributed/elastic/multiprocessing/errors/
# error_handler.py and __init__.py `ChildFailedError.format_msg`): a "[rank]:" header and a
# "time : YYYY-MM-DD_HH:MM:SS" line, printed after the workers died.
TORCHRUN_SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-28_22:32:50
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 31066)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-28_22:32:50
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 31065)
============================================================
"""


@pytest.mark.parametrize("date", ["2026-11-28_22:32:50", "2026/11/28 22:32:50", "28.11.2026 22:32:50"])
def test_a_date_is_never_a_metric_and_torchruns_failure_summary_is_no_step(tmp_path, date):
    log = tmp_path / "train.log"
    log.write_text(TORCHRUN_SUMMARY.replace("2026-11-28_22:32:50", date))
    res = parse_cli(str(log), "--json")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "", f"a failure summary was read as training steps: {res.stdout}"


def test_a_cpp_programs_warning_with_an_address_and_port_is_never_a_step():
    """torch's c10 logging of a store connection dropped at the end of a 2-node job (seen on the
    local Slurm cluster): its IPv6 address groups are no metric names ("f155" holds no F1) and
    its port no step; glog's W/E/F lines of a C++ program are diagnostics. A Caffe solver's own
    glog I line, and an F1 score, still read."""
    warn = (b"[rank0]:[W1129 03:20:48.478765939 TCPStore.cpp:115] [c10d] recvVector failed on SocketImpl(fd=3, "
            b"addr=[4010:8a29:fc7f:0:437f:6cb0:f155:0]:10634, remote=[c074:6bb0:f155:0:ca2:6bb0:f155:0]:45159): "
            b"Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?\n")
    steps = b"".join(b"[rank0]:step %d loss %.3f\n" % (i, 2 - i / 100) for i in range(1, 61))
    records, _ = parsed(LogParser(), steps + warn * 2)
    assert [r["step"] for r in records] == list(range(1, 61))
    glog_warn = b"W0717 23:06:05.978394 23375 net.cpp:115] memory: 0 f155: 1 time: 3\n" * 3
    assert parsed(LogParser(), glog_warn)[0] == []
    f1 = b"".join(b"Iteration %d: train_f1 0.%d\n" % (i, 50 + i) for i in range(1, 4))
    assert [r["extra"].get("train_f1") for r in parsed(LogParser(), f1)[0]] == [0.51, 0.52, 0.53]


def _keras(epochs: list[int | None], total: int, losses: list[float], evaluate: float | None = None,
           eta_first: bool = False) -> bytes:
    """Keras' fit output: ProgbarLogger's f"Epoch {epoch + 1}/{self.epochs}" before each epoch's
    Progbar (Keras 3's `━` bar, f"{seconds}s {ms}ms/step - loss: {v:.4f}"), the epoch a paste
    starts at (None: the paste cut its header), TF 2.x's "ETA: 0s" line at the last batch
    before the final one, and model.evaluate()'s bar after the last epoch (no header)."""
    lines = []
    for ep, loss in zip(epochs, losses):
        if ep is not None:
            lines.append(f"Epoch {ep}/10")
        if eta_first:
            lines.append(f"{total}/{total} ━━━━━━━━━━━━━━━━━━━━ ETA: 0s - loss: {loss:.4f}")
        lines.append(f"{total}/{total} ━━━━━━━━━━━━━━━━━━━━ 2s 10ms/step - loss: {loss:.4f} - val_loss: {loss + 1:.4f}")
    if evaluate is not None:
        lines.append(f"{total}/{total} ━━━━━━━━━━━━━━━━━━━━ 1s 5ms/step - loss: {evaluate:.4f}")
    return ("\n".join(lines) + "\n").encode()


def test_keras_epochs_count_from_the_printed_epoch_and_evaluate_is_an_evaluation():
    """Keras numbers its epochs from 1, so a paste that starts at `Epoch 3/10` (or whose first
    header was cut) is counted from the epochs before it, not from 0 (the second epoch once got the
    first one's step); model.evaluate()'s bar after the last epoch is an evaluation at the last
    step, not a training record; TF 2.x's `ETA: 0s` line of a finished count gives no record of
    its own (its final line does, with the validation beside it)."""
    recs, marks = parsed(LogParser(), _keras([3, 4], 8, [1.5, 1.25], evaluate=0.75))
    assert [(r["step"], r["loss"]) for r in recs] == [(24, 1.5), (32, 1.25)]
    evs = [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"]
    assert evs == [(24, 2.5), (32, 2.25), (32, 0.75)]
    recs, _ = parsed(LogParser(), _keras([None, 2, 3], 8, [1.5, 1.25, 1.0]))
    assert [(r["step"], r["loss"]) for r in recs] == [(8, 1.5), (16, 1.25), (24, 1.0)]
    recs, marks = parsed(LogParser(), _keras([2], 2, [105.5], eta_first=True))
    assert [(r["step"], r["loss"]) for r in recs] == [(4, 105.5)]
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(4, 106.5)]


def _lines(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def test_pytorch_mnist_example_test_set_loss_is_the_evaluation_loss_behind_a_pid_prefix():
    """pytorch/examples mnist: 'Train Epoch: {} [{}/{} ({:.0f}%)]\\tLoss: {:.6f}' and
    '\\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\\n'; here behind a logging
    format '%(asctime)s %(filename)s:%(lineno)d[%(process)d] %(levelname)s' whose datefmt has a
    '%f' time.strftime leaves as is. The test loss was lost (and the pid read as a step)."""
    head = " 2020-10-26 13:24:36.%f train.py:215[27649] INFO "
    recs, marks = parsed(LogParser(), _lines(
        head + "Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.282550",
        head + "Train Epoch: 1 [640/60000 (1%)]\tLoss: 1.384441",
        "", head + "Test set: Average loss: 0.0468, Accuracy: 9842/10000 (98%)", "",
        head + "Train Epoch: 2 [0/60000 (0%)]\tLoss: 0.098867"))
    assert [(r["step"], r["loss"]) for r in recs] == [(0, 2.28255), (640, 1.384441), (60000, 0.098867)]
    assert [(m["step"], m["split"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(640, "test", 0.0468)]


def test_flair_test_line_loss_and_a_validating_bar_are_evaluations():
    """flair's ModelTrainer prints 'DEV  : loss {}' and 'TEST : loss {}' (one space): both are
    the evaluation's loss; a tqdm bar whose description names an evaluation ('Epoch 1/50
    [Validating]: 100%|...| 18/18') is the evaluation's progress, never a training step."""
    recs, marks = parsed(LogParser(), _lines(
        "2019-02-19 18:37:11,947 epoch 1 - iter 240/249 - loss 0.03491753",
        "2019-02-19 18:37:12,571 DEV  : loss 0.03877527 - f-score 0.5586 - acc 0.5586",
        "2019-02-19 18:37:13,162 TEST : loss 0.04066545 - f-score 0.5521 - acc 0.5521"))
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(240, 0.03877527), (240, 0.04066545)]
    recs, marks = parsed(LogParser(), _lines(*[
        line for e in (1, 2) for line in (
            f"Epoch {e}/50 [FT]: 100%|##########| 157/157 [02:45<00:00,  1.06s/it, loss=0.{9 - e}]",
            f"Epoch {e}/50 [Validating]: 100%|##########| 18/18 [00:10<00:00,  1.69it/s]",
            f"Epoch {e}/50 - Train Loss: 0.{9 - e}, Validation Loss: 1.{e}")]))
    assert [(r["step"], r["loss"]) for r in recs] == [(157, 0.8), (314, 0.7)]
    assert [(m["step"], m["loss"]) for m in marks if m["kind"] == "eval"] == [(157, 1.1), (314, 1.2)]


def test_epoch_lines_with_fields_added_on_some_epochs_and_their_total():
    """An epoch-only log whose every tenth line adds a test accuracy ('Epoch 10 loss 12.3880 |
    train 2.1s | Acc 9.32% | infer 4.4s') keeps that epoch (it was a summary mark, its record
    lost); 'Training Epoch:[844/1500]' gives the run's total epochs as max_steps."""
    recs, _ = parsed(LogParser(), _lines(
        "Epoch 09 loss 16.0487 | train 2.1s", "Epoch 10 loss 12.3880 | train 2.1s | Acc 9.32% | infer 4.4s",
        "Epoch 11 loss 10.1725 | train 2.1s"))
    assert [(r["step"], r["loss"]) for r in recs] == [(9, 16.0487), (10, 12.388), (11, 10.1725)]
    recs, _ = parsed(LogParser(), _lines(
        "2023-06-24 05:36:13,516 - CLTR - INFO - Training Epoch:[844/1500]\t loss=10.32482\t lr=0.000100"))
    assert [(r["step"], r["max_steps"], r["lr"]) for r in recs] == [(844, 1500, 1e-4)]


def test_a_train_prefixed_field_name_is_that_field():
    """flax examples write f"train_{k}" metrics through clu's writer ('[1000] steps_per_second=1.76,
    train_accuracy=0.0067, train_learning_rate=0.97, train_loss=6.53'): the learning rate is the lr."""
    recs, _ = parsed(LogParser(), _lines(
        "I1002 21:43:51.424899 140400640460352 logging_writer.py:35] [1000] steps_per_second=1.760847, "
        "train_accuracy=0.006696777418255806, train_learning_rate=0.9738461971282959, train_loss=6.525280952453613"))
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(1000, 6.525280952453613, 0.9738461971282959)]


def test_a_tab_aligned_iteration_report_is_one_record():
    """deeprm (pg_re.py) prints each iteration's report as tab-aligned lines: 'Iteration: \\t 0',
    'NumTrajs: \\t 200', 'Loss:     \\t 0.1269', 'MeanRew: \\t -257.4 +- 63.2', then dashes. The
    lines after the step header join its record though they are not indented (they were lost)."""
    report = lambda i, loss: [f"Iteration: \t {i}", "NumTrajs: \t 200", f"Loss:     \t {loss}",  # noqa: E731
                              "MeanRew: \t -257.43755677655673 +- 63.18571158682983", "MeanEntropy \t 2.397886",
                              "Elapsed time\t 106.06723022460938 seconds", "-----------------"]
    recs, _ = parsed(LogParser(), _lines(*report(0, 0.125), *report(1, 0.25)))
    assert [(r["step"], r["loss"]) for r in recs] == [(0, 0.125), (1, 0.25)]
    assert recs[0]["extra"]["NumTrajs"] == 200
    # an unindented line after a header without tabs still ends the block
    recs, _ = parsed(LogParser(), _lines("Step 300:", "loss 0.5", "Step 301:", "  loss 0.25"))
    assert [(r["step"], r["loss"]) for r in recs] == [(301, 0.25)]


def test_ms_swifts_argument_dump_and_command_line_are_no_evaluations(tmp_path):
    """Lines of a real `swift sft --eval_steps 4 --split_dataset_ratio 0.1` log (ms-swift 4.6.0,
    `moeconsole run recipes/swift-tiny-cpu.yaml --set args.eval_steps=4 --set
    args.split_dataset_ratio=0.1`): its `run sh:` command line and the `eval_delay=0,`,
    `eval_steps=4.0,` fields of its argument dump were three evaluations without a step before
    the real ones; only the `eval_loss` dicts are."""
    log = tmp_path / "train.log"
    log.write_text(
        "run sh: `/v/bin/python /v/lib/python3.11/site-packages/swift/cli/sft.py --model /m --dataset /d.jsonl "
        "--template qwen3_nothinking --check_model false --torch_dtype float32 --tuner_type lora --lora_rank 8 "
        "--lora_alpha 32 --learning_rate 5e-3 --max_steps 12 --save_steps 6 --logging_steps 1 --eval_steps 4 "
        "--split_dataset_ratio 0.1 --output_dir /r/output`\n"
        "[INFO:swift] args: SftArguments(\n"
        "eval_delay=0,\neval_steps=4.0,\neval_strategy=steps,\nlearning_rate=0.005,\nmax_steps=12,\n"
        "split_dataset_ratio=0.1,\n)\n"
        "{'loss': '6.955', 'grad_norm': '0.4', 'learning_rate': '0.005', 'token_acc': '0.01', 'epoch': '0.04124', "
        "'global_step/max_steps': '1/12', 'elapsed_time': '7s', 'remaining_time': '1m 17s', 'train_speed(s/it)': '7.0'}\n"
        "{'eval_loss': '6.83', 'eval_runtime': '0.3054', 'eval_samples_per_second': '68.77', "
        "'eval_steps_per_second': '68.77', 'eval_token_acc': '0.02357', 'epoch': '0.1649', "
        "'global_step/max_steps': '4/12', 'elapsed_time': '8s', 'remaining_time': '16s', 'train_speed(s/it)': '2.031'}\n")
    res = parse_cli(str(log), "--json", "--eval")
    assert res.returncode == 0, res.stderr
    evals = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert [(e["step"], e["loss"]) for e in evals] == [(4, 6.83)], evals
    steps = [json.loads(ln) for ln in parse_cli(str(log), "--json").stdout.splitlines()]
    assert [s["step"] for s in steps] == [1]
