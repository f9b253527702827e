"""A run screen's snapshot carries the runner's record of each log tail line (``tail_records``),
found by the offset each record is stamped with (``log_at``), also when ``series.json`` already
covers every record (the reader then reads the end of metrics.jsonl back once)."""
from __future__ import annotations

from moeconsole.runner.rundir import jsonio, rundir, seriesfile
from moeconsole.runner.rundir.snapshot import RunWatcher


def make_run(tmp_path, stamped: bool = True) -> rundir.RunDir:
    run = rundir.RunDir(tmp_path / "20260101-000000-tail-0001")
    run.path.mkdir(parents=True)
    lines = []
    for step in range(1, 301):
        lines.append(f"{{'loss': {2 - step / 1000}, 'global_step/max_steps': '{step}/300'}}")
        if step % 50 == 0:
            lines.append(f"Saving model checkpoint to /o/checkpoint-{step}")
    at = 0
    with open(run.metrics, "w") as mf:
        for line in lines:
            if line.startswith("{"):
                step = int(line.split("'global_step/max_steps': '")[1].split("/")[0])
                rec = {"v": 1, "t": 1.0, "attempt": 1, "step": step, "max_steps": 300, "loss": 2 - step / 1000}
                if stamped:
                    rec[seriesfile.LOG_AT] = at
                mf.write(jsonio.dumps(rec) + "\n")
            at += len(line) + 1
    run.log.write_text("".join(line + "\n" for line in lines))
    seriesfile.save_book(run, seriesfile.load_book(run))   # series.json covers every record
    return run


def test_each_tail_line_has_its_record(tmp_path):
    run = make_run(tmp_path)
    assert seriesfile.load_book(run).offset == run.metrics.stat().st_size
    snap = RunWatcher(run, line_records=True).poll(with_gpu=False)
    assert snap.tail_records is not None and len(snap.tail_records) == len(snap.log_tail) == 40
    for line, rec in zip(snap.log_tail, snap.tail_records):
        if line.startswith("Saving"):
            assert rec is None
        else:
            assert rec is not None and f"'{rec['step']}/300'" in line
    # a record written later is found on the next poll
    watcher = RunWatcher(run, line_records=True)
    watcher.poll(with_gpu=False)
    at = run.log.stat().st_size
    with open(run.log, "a") as f:
        f.write("{'loss': 0.5, 'global_step/max_steps': '301/300'}\n")
    jsonio.append_jsonl(run.metrics, {"v": 1, "t": 2.0, "attempt": 1, "step": 301, "loss": 0.5,
                                      seriesfile.LOG_AT: at})
    snap = watcher.poll(with_gpu=False)
    assert snap.tail_records is not None and snap.tail_records[-1]["step"] == 301


def test_records_that_name_no_line_leave_the_tail_to_be_parsed(tmp_path):
    snap = RunWatcher(make_run(tmp_path, stamped=False), line_records=True).poll(with_gpu=False)
    assert snap.tail_records is None and len(snap.log_tail) == 40


def test_the_watcher_holds_the_records_of_the_tails_lines_only_however_long_the_run(tmp_path):
    """A console stays attached for days: the records it keeps for the tail's columns are those
    of the lines a tail can show (``LOG_TAIL_LINES``), not hundreds more (512 were kept, about
    1 MB of the attached console after ten minutes at a step a second). With the bound, every
    metric line of the tail still has its record, also after a burst of more steps than the
    bound in one poll."""
    from moeconsole.runner.rundir.snapshot import LOG_TAIL_LINES
    run = make_run(tmp_path)
    watcher = RunWatcher(run, line_records=True)
    watcher.poll(with_gpu=False)
    step = 300
    for burst in (1, 1, 5, 3 * LOG_TAIL_LINES, 1, 2, 7, 2 * LOG_TAIL_LINES, 1):
        at = run.log.stat().st_size
        with open(run.log, "a") as f, open(run.metrics, "a") as mf:
            for _ in range(burst):
                step += 1
                line = f"{{'loss': {1 / step}, 'global_step/max_steps': '{step}/900'}}\n"
                if step % 4 == 0:   # lines without a record between them
                    f.write("a line with no metrics\n")
                    at += len("a line with no metrics\n")
                f.write(line)
                mf.write(jsonio.dumps({"v": 1, "t": 1.0, "attempt": 1, "step": step, "max_steps": 900,
                                       "loss": 1 / step, seriesfile.LOG_AT: at}) + "\n")
                at += len(line)
        snap = watcher.poll(with_gpu=False)
        assert watcher.line_records is not None and len(watcher.line_records.by_at) <= LOG_TAIL_LINES
        assert snap.tail_records is not None and len(snap.log_tail) == LOG_TAIL_LINES
        for line, rec in zip(snap.log_tail, snap.tail_records):
            if line.startswith("a line") or line.startswith("Saving"):
                assert rec is None
            else:
                assert rec is not None and f"'{rec['step']}/" in line, line
        assert snap.tail_records[-1]["step"] == step
