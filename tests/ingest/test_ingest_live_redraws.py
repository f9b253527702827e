"""A tqdm loop writes its bar behind carriage returns and its newline only when the bar closes:
the live reader reads each redraw a later one overwrote as it arrives, so the steps show while
the loop runs (they showed as "—" until it ended), and the records are the ones the whole line
gives when it is read at once."""
from __future__ import annotations

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.live import LiveReader

N = 40


def redraw(step: int, prefix: str = "") -> bytes:
    """tqdm's format_meter with set_postfix (the bar of docs/parsing.md's `tqdm_postfix`)."""
    loss = 2.0 / (1 + step * 0.1)
    bar = "#" * (step * 20 // N)
    return (f"\r{prefix}train: {100 * step // N:3d}%|{bar:20s}| {step}/{N} "
            f"[00:{step:02d}<00:10, 2.00it/s, loss={loss:.3f}]").encode()


def records(events: list) -> list[tuple]:
    return [(r.get("step"), r.get("loss"), r.get("rank")) for k, r in events if k == "record"]


def whole(data: bytes) -> list:
    parser = LogParser()
    events = []
    for line in data.split(b"\n")[:-1]:
        events += parser.process_line(line)
    return events + parser.end_of_input()


def test_steps_of_a_running_bar_arrive_before_its_newline():
    reader = LiveReader()
    events: list = []
    for step in range(1, 21):                     # the bar at 20/40: no newline written yet
        events += reader.feed(redraw(step))
    steps = [s for s, _, _ in records(events)]
    assert steps and steps[-1] >= 18, steps        # the steps so far, the last count held for its values
    assert steps == sorted(set(steps))


def test_the_records_are_those_of_the_whole_line_read_at_once():
    for prefix, head in (("", b"starting\n"), ("[rank1]:", b"[rank1]:starting\n")):
        data = head + b"".join(redraw(s, prefix if s == 1 else "") for s in range(1, N + 1)) + b"\ndone\n"
        reader = LiveReader()
        live: list = []
        for i in range(0, len(data), 37):        # cut anywhere, as writes reach the tail
            live += reader.feed(data[i:i + 37])
        live += reader.finish()
        want = records(whole(data))
        assert [s for s, _, _ in want] == list(range(1, N + 1))
        assert records(live) == want, prefix
