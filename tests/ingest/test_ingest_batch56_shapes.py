"""Line shapes of held-out batch 56 that were misread: each written from the code that prints it,
fed as bytes, checked on the records a user gets, with lines of other programs that only resemble
it read as before."""
from __future__ import annotations

import pytest

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


def _fields(recs, *names):
    return [tuple(r[n] for n in names) for r in recs]


# ------------------------------------------------- torchtitan's metrics dict, printed by name
# torchtitan/components/metrics.py MetricsProcessor.log: {"loss_metrics/global_avg_loss": ...,
# "throughput(tps)": tps, "time_metrics/end_to_end(s)": time_delta / log_freq,
# "memory/max_reserved(GiB)": ..., ...}; forks print the dict (saforem2's mmm without the prefixes).

def test_mmm_step_line_reads_torchtitans_throughput_and_step_time():
    recs, _ = parse("[2025-02-03 09:22:59][I][mmm/train:458:__main__] step=10 global_avg_loss=11.101408 "
                    "global_max_loss=12.190623 throughput(tps)=112.290594 mfu(%)=1.736573 "
                    "end_to_end(s)=16.414554 data_loading(s)=0.003078 data_loading(%)=0.016878")
    assert _fields(recs, "step", "loss", "tokens_per_s", "step_time_s") == [(10, 11.101408, 112.290594, 16.414554)]
    assert recs[0]["extra"]["mfu(%)"] == 1.736573
    assert "throughput(tps)" not in recs[0]["extra"]


def test_the_whole_dict_with_its_prefixes_and_the_reserved_memory():
    """The dict as torchtitan builds it, its names slashed: the last part names the field, and the
    reserved memory is the console line's "memory:" (the active memory stays an extra)."""
    recs, _ = parse("step=5 loss_metrics/global_avg_loss=8.214795 loss_metrics/global_max_loss=8.25 "
                    "throughput(tps)=112.5 time_metrics/end_to_end(s)=7.28 "
                    "memory/max_reserved(GiB)=42.08 memory/max_active(GiB)=40.1")
    assert _fields(recs, "step", "loss", "tokens_per_s", "step_time_s", "mem_gib") == [
        (5, 8.214795, 112.5, 7.28, 42.08)]
    assert any("max_active" in k for k in recs[0]["extra"])


def test_other_throughputs_and_times_stay_extras():
    recs, _ = parse("step=1 global_avg_loss=8.2 throughput(samples/s)=12.5 end_to_end(ms)=7280 "
                    "max_active(GiB)=40.1")
    assert _fields(recs, "step", "loss", "tokens_per_s", "step_time_s", "mem_gib") == [(1, 8.2, None, None, None)]
    assert recs[0]["extra"] == {"throughput(samples/s)": 12.5, "end_to_end(ms)": 7280.0, "max_active(GiB)": 40.1}


def test_a_validation_throughput_is_not_the_training_steps():
    recs, _ = parse("step=10 global_avg_loss=8.2 throughput(tps)=112.5",
                    "step=10 validation_metrics/loss=7.9 validation_metrics/throughput(tps)=300.0")
    assert _fields(recs, "step", "loss", "tokens_per_s") == [(10, 8.2, 112.5)]


def test_torchtitans_console_line_reads_as_before():
    recs, _ = parse("[rank0]:[titan] 2025-12-17 01:20:13,099 - root - INFO - step: 15  loss: 10.6878  "
                    "grad_norm: 12.7063  memory: 116.51GiB(83.39%)  tps: 6,332  tflops: 319.60  mfu: 32.32%")
    assert steps(recs) == [(15, 10.6878)]
    assert _fields(recs, "grad_norm", "mem_gib", "tokens_per_s") == [(12.7063, 116.51, 6332.0)]


# ------------------------------------------------- wordplay: times in ms, tokens in millions
# saforem2/wordplay src/wordplay/trainer.py (2024-01 to 2024-06): pvars {'dt': dt * 1000, 'dtf': ...
# * 1000, 'dtb': ... * 1000, 'sps': ..., 'mtps': tokens_per_sec / int(1e6), ...}; since 2024-06 "dt"
# in seconds beside "tps".

def _wordplay(step: int, loss: str, dt: str, mtps: str) -> str:
    return (f"[2024-04-02 01:59:46][INFO][trainer:837] - step={step} loss={loss} dt={dt} dtf=4.6110 "
            f"dtb=100.7493 sps=73.9992 mtps={mtps} mfu=4.3692 train_loss=4.2922 val_loss=4.2905")


def test_wordplay_mtps_line_reads_seconds_and_tokens_per_second():
    recs, _ = parse(_wordplay(5, "3.6606", "108.1093", "1.2124"), _wordplay(10, "3.2386", "85.2848", "1.5369"))
    got = _fields(recs, "step", "loss", "step_time_s", "tokens_per_s")
    assert [g[:2] for g in got] == [(5, 3.6606), (10, 3.2386)]
    assert abs(got[0][2] - 0.1081093) < 1e-12 and abs(got[1][2] - 0.0852848) < 1e-12
    assert abs(got[0][3] - 1212400.0) < 1e-6 and abs(got[1][3] - 1536900.0) < 1e-6
    assert "mtps" not in recs[0]["extra"] and recs[0]["extra"]["dtf"] == 4.611


def test_wordplay_after_2024_06_reads_dt_in_seconds_as_before():
    recs, _ = parse("[2024-08-01 10:00:00][INFO][trainer:870] - step=5 loss=3.6606 dt=0.1081 dtf=0.0046 "
                    "dtb=0.1007 sps=73.9992 sps_per_gpu=9.2499 tps=1212400.0 tps_per_gpu=151550.0 mfu=4.3692")
    assert _fields(recs, "step", "loss", "step_time_s", "tokens_per_s") == [(5, 3.6606, 0.1081, 1212400.0)]


def test_a_dt_with_its_unit_beside_mtps_is_not_divided_again():
    recs, _ = parse("step=5 loss=3.6606 dt=108.1ms mtps=1.2124")
    assert _fields(recs, "step", "step_time_s") == [(5, pytest.approx(0.1081))]


def test_a_dt_without_mtps_stays_seconds():
    recs, _ = parse("step=5 loss=3.6606 dt=108.1093 sps=73.9992")
    assert _fields(recs, "step", "step_time_s", "tokens_per_s") == [(5, 108.1093, None)]


# ------------------------------------------------- tqdm's notebook widget copied as text
# tqdm/notebook.py tqdm_notebook.display: the meter split at the bar into the label "{desc}:
# {percentage:3.0f}%" and the text " {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]", spaces
# as figure spaces (U+2007); copied, the two come on two lines.

_COUNT = ("98/98 [00:20<00:00, 4.86it/s, v_num=0, loss/train_step=0.133, acc/train_step=95.50, "
          "loss/val=0.307, acc/val=91.80, loss/train_epoch=0.103, acc/train_epoch=96.40]")


def test_a_lightning_widget_label_and_count_read_as_one_bar_at_its_true_step():
    recs, _ = parse("Epoch 23: 100%", _COUNT, "INFO:pytorch_lightning.utilities.rank_zero:`Trainer.fit` stopped: "
                    "`max_epochs=24` reached.")
    assert steps(recs) == [(2352, 0.133)]


def test_the_widgets_figure_spaces_read_as_spaces():
    recs, _ = parse("Epoch\u20071:\u2007\u200750%", "49/98\u2007[00:10<00:10,\u20074.86it/s,\u2007v_num=0,"
                    "\u2007train_loss_step=0.412]")
    assert steps(recs) == [(147, 0.412)]


def test_a_split_evaluation_bar_gives_no_record():
    recs, _ = parse("Epoch 23: 100%", _COUNT, "Testing DataLoader 0: 100%", "20/20 [00:01<00:00, 13.30it/s]")
    assert steps(recs) == [(2352, 0.133)]


def test_a_count_line_alone_and_a_label_alone_read_as_before():
    recs, _ = parse(_COUNT)
    assert steps(recs) == [(98, 0.133)]
    recs, _ = parse("Epoch 23: 100%", "{'loss': 0.5, 'learning_rate': 1e-05, 'epoch': 1.0, 'step': 10}")
    assert steps(recs) == [(10, 0.5)]


def test_a_percentage_line_before_a_bracketed_counter_is_no_label():
    """A line that ends in a percentage and has more than a label's text stays its own line."""
    recs, _ = parse("Epoch 23: accuracy 95%", _COUNT)
    assert steps(recs) == [(98, 0.133)]
