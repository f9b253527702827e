"""Line shapes of held-out batch 47 (LLM and MoE trainers) that were misread: each written from
the code that prints it, fed as bytes, checked on the records a user gets, with lines of other
programs that only resemble it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps


# --------------------------------------------------------------------------- nanotron's logger columns

NANO = ("iteration: {n} / 15 | consumed_tokens: 512 | elapsed_time_per_iteration_ms: 4.71K | tokens_per_sec: 109"
        " | global_batch_size: 2 | lm_loss: {loss} | lr: 0.00015 | grad_norm: 2.96")


def test_nanotron_rank_columns_are_no_step_of_its_memory_lines():
    """nanotron/logging/base.py set_logger_verbosity_format: "[%(levelname)s%(category)s{ranks}]: ",
    the ranks "DP=", "PP=", "TP=" (and "EP=", "CP=" when larger than one), $SLURMD_NODENAME after
    them. Its memory line between iterations made a record at step 0 from "DP=0"."""
    recs, p = parse("08/31/2024 14:37:31 [INFO|DP=0|PP=0|TP=0]:  Memory usage: 64.15MiB. Peak allocated 309.29MiB. Peak reserved: 496.00MiB",
                    "08/31/2024 14:37:31 [INFO|DP=0|PP=0|TP=0]: " + NANO.format(n=1, loss=5.32),
                    "08/31/2024 14:37:31 [INFO|DP=0|PP=0|TP=0]:  Memory usage: 64.26MiB. Peak allocated 64.26MiB. Peak reserved: 496.00MiB",
                    "08/31/2024 14:37:31 [INFO|DP=0|PP=0|TP=0]: " + NANO.format(n=2, loss=5.29))
    assert steps(recs) == [(1, 5.32), (2, 5.29)]
    assert recs[0]["max_steps"] == 15 and recs[0]["step_time_s"] == 4.71
    assert "PP" not in recs[0]["extra"] and "TP" not in recs[0]["extra"]


def test_nanotron_columns_with_a_node_name_expert_ranks_and_another_level():
    recs, p = parse("12/21 01:39:51 [INFO|DP=0|TP=0|lrdn0007]: " + NANO.format(n=7, loss=2.04),
                    "12/21 01:39:52 [WARNING|EP=1|DP=0|PP=1|TP=0|nid001]: Memory usage: 1.5GiB. Peak reserved: 2.0GiB",
                    "12/21 01:40:00 [INFO|CP=0|DP=3]: " + NANO.format(n=8, loss=2.06))
    assert steps(recs) == [(7, 2.04), (8, 2.06)]


def test_a_bracketed_rank_without_a_logging_level_is_not_nanotrons_column():
    """Only nanotron's own column (a level first) is a prefix: a bracket of the line's own
    ("[step=3] loss: 0.5") keeps its number as the line's."""
    recs, p = parse("[step=3] loss: 0.5", "[step=4] loss: 0.4")
    assert steps(recs) == [(3, 0.5), (4, 0.4)]


# --------------------------------------------------------------------------- OLMo's rich location column

def test_olmo_location_column_with_its_rank_is_no_step():
    """olmo/util.py RichHandler: "[%Y-%m-%d %X]", the level padded to 8, then
    f"[{record.name}:{record.lineno}, rank={local_rank}]"; every block was lost."""
    recs, p = parse("    System/Peak GPU Memory (MB)=9,720",
                    "[2024-04-18 14:24:11] INFO     [olmo.train:729, rank=0] [step=1/739328]",
                    "    train/CrossEntropyLoss=11.31",
                    "    train/Perplexity=81,422",
                    "    System/Peak GPU Memory (MB)=56,556",
                    "[2024-04-18 14:24:46] INFO     [olmo.train:729, rank=0] [step=2/739328]",
                    "    train/CrossEntropyLoss=10.88",
                    "    throughput/device/tokens_per_second=7,456",
                    "[2024-04-18 14:25:22] INFO     [root, rank=0] [step=3/739328]",
                    "    train/CrossEntropyLoss=10.84")
    assert steps(recs) == [(1, 11.31), (2, 10.88), (3, 10.84)]
    assert recs[0]["max_steps"] == 739328 and recs[0]["mem_gib"] == 56556 / 1024


def test_a_bracket_of_another_name_with_a_rank_stays_the_lines():
    """A logger's name is a module's (dotted, or __main__): "[epoch:3, rank=0]" is the line's own."""
    recs, p = parse("[epoch:3, rank=0] loss: 0.5", "[epoch:4, rank=0] loss: 0.4")
    assert steps(recs) == [(3, 0.5), (4, 0.4)]


# --------------------------------------------------------------------------- tensor shapes

def test_a_printed_tensor_shape_is_no_step():
    """torch/csrc/Size.cpp THPSize_repr: "torch.Size([16, 1024])": a veRL worker's debug print
    made a record at step 1024."""
    recs, p = parse("(WorkerDict pid=490871) entropy_loss, entropy = vocab_parallel_compute_entropy_loss(logits, "
                    "eos_mask=response_mask), entropy_loss shape: torch.Size([]), entropy shape: torch.Size([16, 1024])",
                    "(WorkerDict pid=490871) log_prob shape: torch.Size([16, 1024]), responses shape: TensorShape([16, 1024])")
    assert recs == []


def test_a_line_with_a_shape_beside_its_values_keeps_them():
    recs, p = parse("step: 3 loss: 0.5 logits shape: torch.Size([16, 1024])",
                    "step: 4 loss: 0.4 logits shape: torch.Size([16, 1024])")
    assert steps(recs) == [(3, 0.5), (4, 0.4)]


# --------------------------------------------------------------------------- slime's step lines

def test_slime_step_lines_name_their_update_from_zero():
    """slime's FSDP actor: logger.info(f"step {self.global_step}: {log_dict}") with global_step from
    0, every key "train/..."; its Megatron actor prints the same id as the dict's "train/step".
    The dicts were numbered 1, 2 as a loop index."""
    recs, p = parse("step 0: {'train/loss': -2.1e-07, 'train/grad_norm': 14.53, 'train/lr-pg_0': 1e-06}",
                    "(MegatronTrainRayActor pid=7) model.py:649 - step 1: {'train/loss': 3.0e-07, 'train/grad_norm': 15.14, "
                    "'train/lr-pg_0': 1e-06, 'train/step': 1}")
    assert steps(recs) == [(0, -2.1e-07), (1, 3.0e-07)]
    assert recs[0]["grad_norm"] == 14.53 and recs[0]["lr"] == 1e-06 and recs[0]["src"] == "slime"


def test_a_slime_step_dict_wrapped_over_lines_is_one_record():
    recs, p = parse("step 0: {'train/loss': -2.1420419e-07,",
                    "         'train/pg_loss': -2.1420419e-07,",
                    "         'train/grad_norm': 14.533173561096191,",
                    "         'train/lr-pg_0': 1e-06}",
                    "[FSDP] Saved checkpoint to .../checkpoints/iter_0000001",
                    "step 1: {'train/loss': 3.0547380e-07,",
                    "         'train/grad_norm': 15.142637252807617,",
                    "         'train/lr-pg_0': 1e-06}")
    assert steps(recs) == [(0, -2.1420419e-07), (1, 3.054738e-07)]
    assert recs[1]["grad_norm"] == 15.142637252807617


def test_step_dicts_of_other_keys_or_another_role_are_not_slimes():
    """A dict whose keys are not all "train/..." (a loop's own "step 2: {'loss': ...}") or another
    model's ("critic-step 3:") is read by the dict reader as before (numbered)."""
    recs, p = parse("step 2: {'loss': 1.0, 'lr': 0.1}", "step 3: {'loss': 0.9, 'lr': 0.1}")
    assert all(r["src"] != "slime" for r in recs) and [r["loss"] for r in recs] == [1.0, 0.9]
    recs, p = parse("critic-step 3: {'train/critic-loss': 0.5, 'train/critic-grad_norm': 1.0}")
    assert all(r["src"] != "slime" for r in recs)


# --------------------------------------------------------------------------- Megatron lines cut in a field

MEG = ("[default3]: iteration       {n}/  292968 | consumed samples:        10240 | elapsed time per iteration (s): 35.8651"
       " | learning rate: 4.734E-06 | global batch size:  1024 | lm loss: {loss}")
MEG_END = (" | loss scale: 4096.0 | grad norm: 42.627 | number of skipped iterations:   0 | number of nan iterations:   0"
           " | samples per second: 28.551 | TFLOPs: 199.03 |")


def test_a_megatron_line_cut_inside_its_last_field_gives_no_value_of_it():
    """Megatron's training_log closes every field with " |": "lm loss: 8." at a line's end is a
    cut 8.486469E+00, not 8.0."""
    recs, p = parse(MEG.format(n=40, loss="8.486469E+00") + MEG_END,
                    MEG.format(n=50, loss="8."),
                    "",
                    "```")
    assert steps(recs) == [(40, 8.486469), (50, None)]
    assert recs[1]["lr"] == 4.734e-06 and recs[1]["step_time_s"] == 35.8651


def test_a_whole_megatron_line_keeps_its_last_field():
    recs, p = parse(MEG.format(n=40, loss="8.486469E+00") + MEG_END)
    assert steps(recs) == [(40, 8.486469)] and recs[0]["grad_norm"] == 42.627
    assert eval_losses(p) == []
