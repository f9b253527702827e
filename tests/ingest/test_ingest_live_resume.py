"""Where a restarted runner reads on: ``LiveReader.resume_offset`` (state.json's ``log_offset``).

A runner is SIGKILLed after reading the log to any byte; the next one reads from the offset its
predecessor saved. Between them they must give every record one runner reading the whole log
gives: an offset inside an unfinished line read its second half as a line of its own, and an
offset past a line whose record waited for a later one (a bar's last count, a dict held for the
next line, a step block, a DeepSpeed report, a wrapped line, a dict cut by a newline) never gave
that record. Steps given twice are the runner's to drop (``rows_to_write``), not this reader's.
The new reader starts with the reading context the first one saved with the offset
(``LiveReader.context``: the Trainer banner's max_steps, a table's columns, ...).

The logs are the corpus's (``tests/ingest/corpus``), one per family whose records wait: each cut
in the middle of each of its lines. Logs whose reading needs context from before the offset (a
table's header, a Keras epoch line before its batch bars) are measured on the whole corpus by
``tests/ingest/test_ingest_resume_context.py``."""
from __future__ import annotations

from pathlib import Path

import pytest

from moeconsole.runner.ingest.live import LiveReader, _events_of
from moeconsole.runner.ingest.parser import RECORD

CORPUS = Path(__file__).parent / "corpus"

WAITING_FAMILIES = [
    "swift_dicts_joined_wrapped.log",                       # a dict cut by a newline
    "swift_grpo_dict_then_bar_twice_vllm_glued.log",        # a step-less dict held for the bar after it
    "hf_tftrainer_dict_with_step.log",
    "tqdm_postfix_then_update_bars_without_cr.log",         # a bar's last count
    "deepspeed_zero3_memory_step.log",                      # DeepSpeed's report before the trainer's record
    "lightgbm_cli_iteration_info_lines.log",                # LightGBM's round over several lines
    "megatron_bridge_wrapped_86_columns_nsys.log",          # a Megatron line a terminal wrapped
    "verl_taskrunner_wrapped_line.log",
    "torchtune_step_pipe_colon.log",
    "swift_grpo_json_lines.log",                            # plain JSON lines (a line cut in two)
    "sb3_ppo_table.log",                                    # a stable-baselines table until its closing dashes
    "sb3_rollout_tables.log",
    "stable_baselines2_dqn_table_steps_episodes_no_loss.log",
    "rsl_rl_isaaclab_learning_iteration_blocks.log",        # a step block
]


def _given(batches) -> set[tuple]:
    """The records and evaluations given: (what, step, the names of the values they carry), so a
    record given again without some of its values counts as lost."""
    return {(kind if kind == RECORD else "eval", rec["step"], _names(rec))
            for b in batches for kind, rec in _events_of(b)
            if (kind == RECORD or rec.get("kind") == "eval") and isinstance(rec.get("step"), int)}


# A value read from the line before the record's own that no saved context holds (free text of the
# log): the message DeepSpeed's see_memory_usage prints on the line before its numbers.
CONTEXT = {"extra.mem_report"}


def _names(rec: dict) -> tuple[str, ...]:
    inner = {**rec.get("extra", {}), **rec.get("values", {})}
    names = [k for k, v in rec.items() if v is not None and k not in ("extra", "values")]
    names += [f"extra.{k}" for k, v in inner.items() if v is not None]
    return tuple(sorted(set(names) - CONTEXT))


def _read(data: bytes, start: int = 0, *, over: bool = True, context=None) -> tuple[LiveReader, list]:
    """A runner's reading from ``start``, in 4 KiB slices, with the ``context`` the reader before
    it saved; ``over``: the attempt ends at the log's end."""
    reader = LiveReader(diagnostics=lambda msg: None)
    reader.restore_context(context)
    batches = []
    for at in range(start, len(data), 4096):
        batches += reader.feed_batches(data[at:at + 4096], at)
    if over:
        batches += reader.attempt_over()
    return reader, batches


def _lost_at_cuts(data: bytes) -> dict:
    """The cuts (one in the middle of each line) after which a killed runner and the next one
    together miss a record the whole log gives: {cut: missing}."""
    whole = _given(_read(data)[1])
    assert whole, "the log gives records"
    lost = {}
    start = 0
    for line in data.splitlines(keepends=True):
        cut = start + len(line) // 2
        start += len(line)
        first, before = _read(data[:cut], over=False)        # killed here
        resume = first.resume_offset(cut)
        assert 0 <= resume <= cut
        after = _read(data, resume, context=first.context())[1]
        missing = whole - _given(before) - _given(after)
        if missing:
            lost[cut] = sorted(missing)
    return lost


@pytest.mark.parametrize("name", WAITING_FAMILIES)
def test_a_runner_killed_at_any_byte_and_the_next_one_give_every_record_together(name):
    lost = _lost_at_cuts((CORPUS / name).read_bytes())
    assert not lost, lost


def test_a_runner_killed_inside_a_nemo_rl_section_leaves_its_evaluation_to_the_next_one():
    """NeMo-RL's validation values are read under the step its ``Starting validation at step N``
    line named and given when the section ends (here by the line after it): a runner killed
    inside the section leaves the next one to start at that line, not after the values read."""
    data = (CORPUS / "nemo_rl_dpo_step_banner_validation_block.log").read_bytes() + b"done\n"
    lost = _lost_at_cuts(data)
    assert not lost, lost


def test_nothing_waiting_resumes_at_the_end_of_what_was_read():
    """No unfinished line and no record waiting: the offset is the end of what was read (the
    next runner reads nothing twice)."""
    data = b"".join(b'{"step": %d, "loss": 0.5}\n' % i for i in range(1, 6))
    reader, _ = _read(data, over=False)
    assert reader.resume_offset(len(data)) == len(data)
    reader.feed_batches(b'{"step": 6, "lo', len(data))
    assert reader.resume_offset(len(data) + 15) == len(data)   # the unfinished line's start
