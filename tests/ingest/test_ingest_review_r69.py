"""Review R69 of batch 52: LLaMA-Factory's LogCallback copy of the Trainer's log is no record only
beside the dict it copies (every logger name it was written under), and a tqdm bar over the run's
epochs (scvi-tools', the common ``for epoch in pbar`` loop) read from real tqdm's redraws: each
written from the code that prints it, fed as bytes, checked on the records a user gets."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from moeconsole.runner.ingest.parser import LogParser
from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps

ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------ finding 1: a log of copies alone
# LlamaBoard's output box (0.5.x/0.6.x LoggerHandler in the same process) and 0.7.x's
# output_dir/running_log.txt hold the logger's lines only, records joined by "\n\n"
# (extras/logging.py LoggerHandler, "%(asctime)s - %(levelname)s - %(name)s - %(message)s").

COPIES = [("1.8123", "4.9860e-05", "0.16"), ("1.5234", "4.9441e-05", "0.32"), ("1.3012", "4.8746e-05", "0.48")]


def running_log(logger: str = "llmtuner.extras.callbacks", extra: str = "") -> list[str]:
    lines = ["05/20/2024 10:10:02 - INFO - transformers.trainer - ***** Running training *****", ""]
    for i, (loss, lr, ep) in enumerate(COPIES):
        lines += [f"05/20/2024 10:1{i}:31 - INFO - {logger} - "
                  f"{{'loss': {loss}, 'learning_rate': {lr}, 'epoch': {ep}{extra}}}", ""]
    return lines + ["05/20/2024 10:19:00 - INFO - transformers.trainer - Saving model checkpoint to "
                    "saves/LLaMA3-8B/lora/train/checkpoint-100", ""]


def test_a_llamaboard_running_log_of_copies_alone_gives_each_step():
    recs, p = parse(*running_log())
    assert steps(recs) == [(1, 1.8123), (2, 1.5234), (3, 1.3012)]


def test_every_version_s_running_log_gives_each_step():
    """0.8.0-0.8.2, 0.8.3-0.9.0 (their 'throughput', 0.9.0's N/A when none was counted) and 0.9.1+'s
    ``callbacks.py:N >>`` running_log.txt spelling: the copies alone are the records."""
    for logger, extra in (("llamafactory.extras.callbacks", ", 'throughput': 0.00"),
                          ("llamafactory.train.callbacks", ", 'throughput': 1234.57"),
                          ("llamafactory.train.callbacks", ", 'throughput': N/A")):
        recs, p = parse(*running_log(logger, extra))
        assert steps(recs) == [(1, 1.8123), (2, 1.5234), (3, 1.3012)], logger
    recs, p = parse(*[f"[INFO|2025-03-01 10:00:0{i}] callbacks.py:411 >> {{'loss': {loss}, 'learning_rate': "
                      f"{lr}, 'epoch': {ep}, 'throughput': 980.12}}" for i, (loss, lr, ep) in enumerate(COPIES)])
    assert steps(recs) == [(1, 1.8123), (2, 1.5234), (3, 1.3012)]


def test_the_cli_prints_the_running_log_s_steps(tmp_path):
    log = tmp_path / "running_log.txt"
    log.write_text("\n".join(running_log()) + "\n")
    out = subprocess.run([sys.executable, "-m", "moeconsole", "parse", "--json", str(log)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    recs = [json.loads(ln) for ln in out.stdout.splitlines() if ln.startswith("{")]
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 1.8123), (2, 1.5234), (3, 1.3012)]


def test_a_running_log_read_live_gives_each_copy_by_the_next_entry_and_the_last_at_the_end():
    """A tailing reader: each copy is given when the next entry is written (a blank line tells no
    copy alone from one whose dict comes after a paste's spacing), the last when the log ends."""
    p = LogParser()
    got = [[o["loss"] for k, o in p.process_line(ln.encode()) if k == "record"] for ln in running_log()]
    assert got == [[], [], [], [], [1.8123], [], [1.5234], [], [1.3012], []]
    assert [o["loss"] for k, o in p.end_of_input() if k == "record"] == []


def test_a_console_paste_spaced_by_blank_lines_is_one_record_a_step():
    recs, p = parse("07/20/2024 10:00:01 - INFO - llamafactory.train.callbacks - {'loss': 1.2345, "
                    "'learning_rate': 4.9990e-05, 'epoch': 0.10, 'throughput': 99.00}", "",
                    "{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 4.999e-05, 'epoch': 0.1}", "",
                    "07/20/2024 10:00:09 - INFO - llamafactory.train.callbacks - {'loss': 1.1000, "
                    "'learning_rate': 4.9900e-05, 'epoch': 0.20, 'throughput': 99.00}", "",
                    "{'loss': 1.1, 'grad_norm': 0.4, 'learning_rate': 4.99e-05, 'epoch': 0.2}", "")
    assert steps(recs) == [(1, 1.2345), (2, 1.1)]


def test_ppo_s_dict_then_its_copy_is_one_record_a_step():
    """0.5.x src/llmtuner/train/ppo/trainer.py:184-187: tqdm.write(str(logs)) prints the dict,
    then log_callback.on_log the copy: the copy after its dict is no record."""
    recs, p = parse("{'loss': 0.4321, 'reward': 0.7, 'learning_rate': 1e-05, 'epoch': 0.05}",
                    "03/12/2024 11:24:33 - INFO - llmtuner.extras.callbacks - "
                    "{'loss': 0.4321, 'learning_rate': 1.0000e-05, 'epoch': 0.05}",
                    "{'loss': 0.3999, 'reward': 0.8, 'learning_rate': 9e-06, 'epoch': 0.1}",
                    "03/12/2024 11:25:33 - INFO - llmtuner.extras.callbacks - "
                    "{'loss': 0.3999, 'learning_rate': 9.0000e-06, 'epoch': 0.10}")
    assert steps(recs) == [(1, 0.4321), (2, 0.3999)]


def test_a_copy_next_to_another_step_s_dict_is_kept():
    """A copy whose dict is not beside it (the dict of other values: another step) is its step."""
    recs, p = parse("03/12/2024 11:24:33 - INFO - llmtuner.extras.callbacks - "
                    "{'loss': 0.9000, 'learning_rate': 1.0000e-05, 'epoch': 0.05}",
                    "{'loss': 0.8, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}")
    assert steps(recs) == [(1, 0.9), (2, 0.8)]


# ------------------------------------------- finding 2: the 0.8.0-0.9.0 console copy
def test_the_08_to_090_console_copy_is_no_record():
    for mod, tp in (("llamafactory.extras.callbacks", "0.00"), ("llamafactory.train.callbacks", "1234.57"),
                    ("llamafactory.train.callbacks", "N/A")):
        recs, p = parse(f"07/20/2024 10:00:01 - INFO - {mod} - {{'loss': 1.2345, 'learning_rate': 4.9990e-05, "
                        f"'epoch': 0.10, 'throughput': {tp}}}",
                        "{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 4.999e-05, 'epoch': 0.1}",
                        f"07/20/2024 10:00:09 - INFO - {mod} - {{'loss': 1.1000, 'learning_rate': 4.9900e-05, "
                        f"'epoch': 0.20, 'throughput': {tp}}}",
                        "{'loss': 1.1, 'grad_norm': 0.4, 'learning_rate': 4.99e-05, 'epoch': 0.2}")
        assert steps(recs) == [(1, 1.2345), (2, 1.1)], mod


def test_a_console_copy_with_the_trainer_s_bar_between_is_no_record():
    """The Trainer's tqdm bar (stderr) drawn between the copy and the dict (ProgressCallback's
    tqdm.write clears it, prints the dict, draws it again): still one record a step."""
    bar = "\r  1%|          | {n}/300 [00:0{n}<05:00,  1.00s/it]"
    recs, p = parse(f"07/20/2024 10:00:01 - INFO - llamafactory.train.callbacks - {{'loss': 1.2345, "
                    f"'learning_rate': 4.9990e-05, 'epoch': 0.10, 'throughput': 99.00}}",
                    bar.format(n=10),
                    "{'loss': 1.2345, 'grad_norm': 0.5, 'learning_rate': 4.999e-05, 'epoch': 0.1}",
                    bar.format(n=10))
    assert steps(recs) == [(10, 1.2345)]
    assert eval_losses(p) == []


# --------------------------------------- findings 3-5: a bar over the run's epochs, as tqdm draws it
# real tqdm 4.70.1 output driven like scvi/train/_progress.py ProgressBar (on_train_epoch_start
# set_description(f"Epoch {epoch}/{max_epochs}"), on_train_epoch_end update() then set_postfix):
# set_description redraws (tqdm std.py:1389-1401), so each epoch first shows the old count
SCVI = ("\rTraining:   0%|          | 0/4 [00:00<?, ?it/s]"
        "\rEpoch 1/4:   0%|          | 0/4 [00:00<?, ?it/s]"
        "\rEpoch 1/4:  25%|##5       | 1/4 [00:00<00:00, 98.48it/s]"
        "\rEpoch 1/4:  25%|##5       | 1/4 [00:00<00:00, 98.48it/s, v_num=1, train_loss_step=900, train_loss_epoch=950]"
        "\rEpoch 2/4:  25%|##5       | 1/4 [00:00<00:00, 98.48it/s, v_num=1, train_loss_step=900, train_loss_epoch=950]"
        "\rEpoch 2/4:  50%|#####     | 2/4 [00:00<00:00, 83.56it/s, v_num=1, train_loss_step=900, train_loss_epoch=950]"
        "\rEpoch 2/4:  50%|#####     | 2/4 [00:00<00:00, 83.56it/s, v_num=1, train_loss_step=850, train_loss_epoch=900]"
        "\rEpoch 3/4:  50%|#####     | 2/4 [00:00<00:00, 83.56it/s, v_num=1, train_loss_step=850, train_loss_epoch=900]"
        "\rEpoch 3/4:  75%|#######5  | 3/4 [00:00<00:00, 88.23it/s, v_num=1, train_loss_step=850, train_loss_epoch=900]"
        "\rEpoch 3/4:  75%|#######5  | 3/4 [00:00<00:00, 88.23it/s, v_num=1, train_loss_step=827, train_loss_epoch=877]"
        "\rEpoch 4/4:  75%|#######5  | 3/4 [00:00<00:00, 88.23it/s, v_num=1, train_loss_step=827, train_loss_epoch=877]"
        "\rEpoch 4/4: 100%|##########| 4/4 [00:00<00:00, 82.23it/s, v_num=1, train_loss_step=827, train_loss_epoch=877]"
        "\rEpoch 4/4: 100%|##########| 4/4 [00:00<00:00, 82.23it/s, v_num=1, train_loss_step=800, train_loss_epoch=850]"
        "\rEpoch 4/4: 100%|##########| 4/4 [00:00<00:00, 83.70it/s, v_num=1, train_loss_step=800, train_loss_epoch=850]")

# real tqdm 4.70.1 output of the common loop: pbar = tqdm(range(1, E + 1)); for epoch in pbar:
# pbar.set_description(f"Epoch {epoch}/{E}"); ...; pbar.set_postfix(loss=1.0 / epoch) (the count
# moves when the next epoch starts, std.py:1166-1200 __iter__)
LOOP = ("\r  0%|          | 0/4 [00:00<?, ?it/s]"
        "\rEpoch 1/4:   0%|          | 0/4 [00:00<?, ?it/s]"
        "\rEpoch 1/4:   0%|          | 0/4 [00:00<?, ?it/s, loss=1]"
        "\rEpoch 1/4:  25%|##5       | 1/4 [00:00<00:00, 96.16it/s, loss=1]"
        "\rEpoch 2/4:  25%|##5       | 1/4 [00:00<00:00, 96.16it/s, loss=1]"
        "\rEpoch 2/4:  25%|##5       | 1/4 [00:00<00:00, 96.16it/s, loss=0.5]"
        "\rEpoch 2/4:  50%|#####     | 2/4 [00:00<00:00, 81.90it/s, loss=0.5]"
        "\rEpoch 3/4:  50%|#####     | 2/4 [00:00<00:00, 81.90it/s, loss=0.5]"
        "\rEpoch 3/4:  50%|#####     | 2/4 [00:00<00:00, 81.90it/s, loss=0.333]"
        "\rEpoch 3/4:  75%|#######5  | 3/4 [00:00<00:00, 82.77it/s, loss=0.333]"
        "\rEpoch 4/4:  75%|#######5  | 3/4 [00:00<00:00, 82.77it/s, loss=0.333]"
        "\rEpoch 4/4:  75%|#######5  | 3/4 [00:00<00:00, 82.77it/s, loss=0.25] "
        "\rEpoch 4/4: 100%|##########| 4/4 [00:00<00:00, 80.75it/s, loss=0.25]"
        "\rEpoch 4/4: 100%|##########| 4/4 [00:00<00:00, 81.82it/s, loss=0.25]")


def test_scvi_tools_bar_as_tqdm_draws_it_is_read_at_its_epochs():
    recs, p = parse(SCVI)
    assert steps(recs) == [(1, 900.0), (2, 850.0), (3, 827.0), (4, 800.0)]
    assert {r["max_steps"] for r in recs} == {4}


def test_the_common_epoch_loop_s_bar_is_read_at_its_epochs():
    recs, p = parse(LOOP)
    assert steps(recs) == [(1, 1.0), (2, 0.5), (3, 0.333), (4, 0.25)]
    assert {r["max_steps"] for r in recs} == {4}


def test_a_bar_counting_epochs_gives_its_total_as_the_runs_length():
    recs, p = parse("Epoch 400/400: 100%|██████████| 400/400 [07:02<00:00, 1.06s/it, v_num=1, "
                    "train_loss_step=827, train_loss_epoch=888]")
    assert [(r["step"], r["max_steps"]) for r in recs] == [(400, 400)]


def test_a_bar_per_epoch_over_as_many_batches_still_counts_across_epochs():
    """Epoch e/E over E batches: a bar that drew a count no epoch bar draws is a bar over batches,
    its run E x E steps (the steps counted across the epochs, as before)."""
    def bar(e: int, n: int, loss: float) -> str:
        return f"Epoch {e}/3: {n * 33}%|###       | {n}/3 [00:0{n}<00:03, 1.00it/s, loss={loss}]"
    recs, p = parse(bar(1, 1, 0.9), bar(1, 2, 0.8), bar(1, 3, 0.7), bar(2, 1, 0.6), bar(2, 2, 0.5), bar(2, 3, 0.4))
    assert [r["step"] for r in recs][-3:] == [4, 5, 6]
    assert recs[-1]["max_steps"] == 9


def test_zero_padded_epochs_compare_as_numbers():
    """Two models' final bars "Epoch 010/10 ... 10/10" then "Epoch 005/10 ... 5/10": 10 and 5,
    as without the padding."""
    def bar(e: int, pad: int, loss: str) -> str:
        return (f"Epoch {e:0{pad}d}/10: {10 * e}%|#####     | {e}/10 [00:10<00:10, 1.06s/it, v_num=1, "
                f"train_loss_step={loss}]")
    for pad in (1, 3):
        recs, p = parse(bar(10, pad, "0.5"), "Trainer.fit stopped: max_epochs=10 reached.", bar(5, pad, "0.4"))
        assert steps(recs) == [(10, 0.5), (5, 0.4)], pad
