"""Line shapes of held-out batch 41 (LLM / MoE trainers) that were misread: each written from the
code that prints it, fed as bytes, checked on the records and evaluations a user gets, with lines
of another program that only resemble it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals
from tests.ingest.test_ingest_resume_context import _cut_and_resumed


def html_table(names: list[str], rows: list[list[str]], *, indent: str = "    ",
               opening: str = '<table border="1" class="dataframe">') -> list[str]:
    """transformers utils/notebook.py ``text_to_html_table`` as a notebook exported to text keeps
    it: one tag a line, the header row ``<tr style="text-align: left;">``, ``</table><p>`` last."""
    out = [indent + opening, "  <thead>", ' <tr style="text-align: left;">']
    out += [f"      <th>{n}</th>" for n in names]
    out += ["    </tr>", "  </thead>", "  <tbody>"]
    for row in rows:
        out += ["    <tr>", *[f"      <td>{c}</td>" for c in row], "    </tr>"]
    return out + ["  </tbody>", "</table><p>"]


def test_the_notebook_results_table_as_html_is_read_as_the_text_table():
    """A row per evaluation: the training loss a record at its Step, the validation loss and the
    metrics an evaluation there; the progress line above it and TrainOutput after it no record."""
    lines = ["    <div>", "      <progress value='300' max='300' style='width:300px;'></progress>",
             "      [300/300 09:12, Epoch 3/3]", "    </div>"]
    lines += html_table(["Step", "Training Loss", "Validation Loss", "Accuracy"],
                        [["100", "1.245400", "1.128538", "0.531600"], ["200", "1.093900", "1.104158", "0.515000"],
                         ["300", "1.078600", "1.058309", "0.546400"]])
    lines += ["", "    TrainOutput(global_step=300, training_loss=1.13, metrics={'train_runtime': 552.0, 'epoch': 3.0})"]
    recs, p = parse(*lines)
    assert steps(recs) == [(100, 1.2454), (200, 1.0939), (300, 1.0786)]
    assert evals(p) == [(100, 1.128538), (200, 1.104158), (300, 1.058309)]
    assert [m["values"]["Accuracy"] for m in p.marks if m["kind"] == "eval"] == [0.5316, 0.515, 0.5464]


def test_an_epoch_keyed_html_table_without_border_and_no_log_cells():
    """Evaluating per epoch the first column is ``Epoch``; transformers before 4.x wrote
    ``<table class="dataframe">``; ``No log`` is a loss not logged yet (on_evaluate)."""
    recs, p = parse(*html_table(["Epoch", "Training Loss", "Validation Loss"],
                                [["1", "No log", "0.912000"], ["2", "0.705600", "0.850100"]],
                                opening='<table class="dataframe">'))
    assert steps(recs) == [(2, 0.7056)]
    assert evals(p) == [(1, 0.912), (2, 0.8501)]


def test_a_grpo_notebook_table_with_no_log_cells_in_its_metric_columns():
    """Unsloth's patched callback adds a column per logged metric (``reward``, ``kl``, ...) and
    ``No Log`` where a row lacks one (``NotebookTrainingTracker.write_line``)."""
    recs, p = parse(*html_table(["Step", "Training Loss", "reward", "completions / mean_length", "kl"],
                                [["1", "0.000000", "-2.750000", "705.000000", "0"],
                                 ["50", "0.000300", "1.954082", "686.714286", "No Log"]]))
    assert steps(recs) == [(1, 0.0), (50, 0.0003)]


def test_a_row_cut_by_the_end_of_the_log_gives_nothing_and_the_table_ends_at_another_line():
    lines = html_table(["Step", "Training Loss"], [["1", "1.547100"], ["2", "1.865300"]])
    recs, p = parse(*lines[:-6], "    <tr>", "      <td>3</td>")
    assert steps(recs) == [(1, 1.5471)]
    recs, p = parse(*lines[:-2], "step 7 loss 9.5", "      <td>8</td>")
    assert steps(recs) == [(1, 1.5471), (2, 1.8653), (7, 9.5)]


def test_html_tables_of_other_programs_give_no_record():
    """pandas' ``DataFrame.to_html`` also writes ``class="dataframe"``; a table without a Step or
    Epoch column and a loss column is no results table; cells outside a table are no rows."""
    recs, p = parse(*html_table(["model", "accuracy", "loss"], [["bert", "0.91", "0.25"]]))
    assert recs == [] and evals(p) == []
    recs, p = parse("<tr>", "<td>12</td>", "<td>0.5</td>", "</tr>", "<table>", "<th>Step</th>", "<th>Training Loss</th>",
                    "</tr>", "<tr>", "<td>1</td>", "<td>0.5</td>", "</tr>")
    assert recs == [] and evals(p) == []


def test_a_reader_restarted_inside_an_html_table_reads_each_row_once():
    """The header's names are in the reading context (its separator the HTML table's); a row cut
    by the restart is read again from its ``<tr>``."""
    text = "\n".join(html_table(["Step", "Training Loss", "Validation Loss"],
                                [[str(s), f"{1 / s:.6f}", f"{2 / s:.6f}"] for s in (10, 20, 30, 40)])).encode() + b"\n"
    for marker in (b"<td>20</td>", b"<td>0.066667</td>", b"</tbody>", b"<th>Validation Loss</th>"):
        whole, got = _cut_and_resumed(text, text.index(marker))
        assert sorted((e[0], e[1]) for e in whole) == sorted((k, s) for s in (10, 20, 30, 40) for k in ("eval", "record"))
        assert got == whole, marker


def test_the_trainer_log_metrics_eval_block_is_one_evaluation_at_the_last_step():
    """trainer_pt_utils.py ``log_metrics``: ``***** eval metrics *****`` then
    ``f"  {key: <{k_width}} = {value:>{v_width}}"`` for each key, sorted, runtimes as h:mm:ss.ss.
    The ``train`` block is the run's summary: no evaluation. Each line was an evaluation before."""
    recs, p = parse("step 100 loss 2.3369",
                    "***** train metrics *****",
                    "  epoch                    =        1.0",
                    "  train_loss               =     2.4897",
                    "  train_runtime            = 0:07:05.42",
                    "***** eval metrics *****",
                    "  epoch                   =        1.0",
                    "  eval_accuracy           =     0.5153",
                    "  eval_loss               =     2.1941",
                    "  eval_runtime            = 0:00:14.81",
                    "  eval_samples            =        100",
                    "  perplexity              =     8.9716",
                    "[2025-12-31 13:19:48,219557][I][examples/hf_trainer:942:<module>] Took 500.42 seconds")
    (ev,) = [m for m in p.marks if m["kind"] == "eval"]
    assert (ev["step"], ev["loss"], ev["split"]) == (100, 2.1941, "eval")
    assert ev["values"]["eval_accuracy"] == 0.5153 and ev["values"]["perplexity"] == 8.9716
    assert "eval_runtime" not in ev["values"]
    # a block the log ends in is given all the same; a predict block is its split's evaluation
    recs, p = parse("step 5 loss 1.5", "***** predict metrics *****", "  predict_loss = 1.25")
    assert evals(p) == [(5, 1.25)] and [m["split"] for m in p.marks if m["kind"] == "eval"] == ["predict"]


def test_key_equals_value_lines_without_the_block_header_read_as_before():
    recs, p = parse("step 5 loss 1.5", "***** Running Evaluation *****", "  Num examples = 10",
                    "  Batch size = 2")
    assert steps(recs) == [(5, 1.5)] and evals(p) == []


def test_pretty_printed_log_history_evaluations_without_a_training_loss_are_evaluations():
    """``trainer_state.json`` pretty-prints each ``log_history`` entry one key a line; an
    evaluation's entry has ``eval_loss`` and ``step`` (trainer.py ``log``) and no ``loss``: it was
    taken for an argument dump (a pretty-printed dict without a loss) and dropped."""
    lines = ['"log_history": [', "    {", '      "epoch": 0.09,', '      "eval_loss": 0.2819069027900696,',
             '      "eval_runtime": 204.6538,', '      "step": 500', "    }", "    {", '      "epoch": 0.18,',
             '      "eval_loss": 0.2211304008960724,', '      "step": 1000', "    }"]
    recs, p = parse(*lines)
    assert evals(p) == [(500, 0.2819069027900696), (1000, 0.2211304008960724)] and recs == []


def test_a_pretty_printed_argument_dump_with_a_step_but_no_evaluation_loss_is_still_no_record():
    recs, p = parse("{", '  "learning_rate": 0.0001,', '  "step": 5,', '  "eval_steps": 500', "}")
    assert recs == [] and evals(p) == []
