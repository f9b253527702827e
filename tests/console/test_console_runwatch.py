"""The console's poll timing on its own, without a UI (``moeconsole.console.runwatch.RunWatch``): a request
wakes it at once, a change in the run directory wakes it (and says so), the timer ends a quiet
wait, and cancellation is looked at while it waits."""
from __future__ import annotations

import threading

from moeconsole.console.runwatch import RunWatch
from tests.waiting import until


class Looks:
    """``cancelled`` for ``wait_next``: counts how often the wait looked (each look is a quarter
    second of waiting at most), and cancels after ``limit`` looks."""

    def __init__(self, limit: int = 400) -> None:
        self.n, self.limit = 0, limit

    def __call__(self) -> bool:
        self.n += 1
        return self.n > self.limit


def test_a_request_wakes_the_poller_at_once(tmp_path):
    watch = RunWatch(tmp_path, interval=3600)
    try:
        watch.poke()
        watch.poke()  # two requests before the wait: one poll answers both
        looks = Looks()
        assert watch.wait_next(looks) is False and looks.n == 1, "answered on the first look, not by the timer"
        looks = Looks(limit=2)
        assert watch.wait_next(looks) is False and looks.n == 3, "no request left: the wait went on until cancelled"
    finally:
        watch.close()


def test_a_change_in_the_run_directory_wakes_the_poller_and_says_so(tmp_path):
    watch = RunWatch(tmp_path, interval=3600)
    try:
        results: list[bool] = []
        looks = Looks()
        waiter = threading.Thread(target=lambda: results.append(watch.wait_next(looks)))
        waiter.start()
        until(lambda: looks.n >= 1, what="the wait to begin")
        (tmp_path / "train.log").write_text("step 1\n")
        waiter.join(timeout=60)
        assert results == [True], "a file change, not the timer or a request"
        assert looks.n < looks.limit
    finally:
        watch.close()


def test_the_timer_ends_a_quiet_wait(tmp_path):
    watch = RunWatch(tmp_path, interval=0.3)
    try:
        looks = Looks()
        assert watch.wait_next(looks) is False and looks.n < looks.limit
    finally:
        watch.close()


def test_only_files_a_woken_poll_reads_wake_it(tmp_path):
    """An atomic write's temp file (its content shows when it is renamed over the real name),
    ranks.json (read by the timer's poll alone), series.json (read once, at the start) and
    gpu-history.json (the GPU view's own timer) leave the wait alone; a state.json renamed over
    and a log written wake it. A 1,024-rank run's runner rewrites ranks.json and series.json at
    its flushes: each made polls that read and drew the same run again."""
    from moeconsole.runner.rundir import jsonio, rundir
    run = rundir.RunDir(tmp_path)
    watch = RunWatch(tmp_path, interval=3600)
    try:
        watch.start()
        for path in (run.rank_times, run.series, run.gpu_history):
            jsonio.atomic_write_json(path, {"v": 1})
        (tmp_path / jsonio.temp_name("state.json")).write_text("{}")   # a write not renamed yet
        looks = Looks(limit=1)
        assert watch.wait_next(looks) is False and looks.n == 2, "the changes were looked at, and the wait went on"
        jsonio.atomic_write_json(run.state, {"v": 1})
        looks = Looks()
        assert watch.wait_next(looks) is True and looks.n == 1, "state.json renamed over: a poll at once"
        with open(run.log, "a") as f:
            f.write("step 1\n")
        looks = Looks()
        assert watch.wait_next(looks) is True and looks.n == 1, "the log written: a poll at once"
    finally:
        watch.close()
