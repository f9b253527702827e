"""LogFile: incremental line index, truncation and replacement, partial lines, search."""
from __future__ import annotations

import os
import time

from moeconsole.console.logfile import LogFile
from moeconsole.runner.core import bounds


def test_appends_are_indexed_incrementally_and_partial_lines_complete(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("one\ntwo\nthr")
    log = LogFile(p)
    assert log.refresh()
    assert len(log) == 3 and log.lines(0, 10) == ["one", "two", "thr"]
    with open(p, "a") as f:
        f.write("ee\nfour\n")
    assert log.refresh()
    assert log.lines(0, 10) == ["one", "two", "three", "four"]
    assert not log.refresh()


def test_progress_bar_carriage_returns_keep_the_last_redraw_and_long_lines_are_cut(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("Train: 1%\rTrain: 50%\rTrain: 100%\n" + "x" * 5000 + "\n")
    log = LogFile(p, max_line=100)
    log.refresh()
    first, second = log.lines(0, 2)
    assert first == "Train: 100%"
    assert len(second) == 101 and second.endswith("…")


def test_truncation_and_replacement_reset_the_index(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("a\nb\nc\n")
    log = LogFile(p)
    log.refresh()
    p.write_text("new\n")  # truncated in place
    log.refresh()
    assert log.lines(0, 5) == ["new"] and log.resets == 1
    q = tmp_path / "other.log"
    q.write_text("replaced 1\nreplaced 2\nreplaced 3\nreplaced 4\n")
    os.replace(q, p)  # a new inode under the same name
    log.refresh()
    assert log.lines(0, 5)[0] == "replaced 1" and len(log) == 4 and log.resets == 2


def test_search_forward_backward_and_wrapping(tmp_path):
    p = tmp_path / "train.log"
    lines = [f"step {i} loss 1.0" for i in range(2000)]
    lines[150] = "RuntimeError: CUDA out of memory"
    lines[1500] = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"
    p.write_text("\n".join(lines) + "\n")
    log = LogFile(p)
    log.refresh()
    assert log.search("cuda OUT of memory", 0) == 150
    assert log.search("cuda out of memory", 151) == 1500
    assert log.search("cuda out of memory", 1501) == 150  # wraps around
    assert log.search("cuda out of memory", 1500, backwards=True) == 150
    assert log.search("cuda out of memory", 100, backwards=True) == 1500  # wraps backwards
    assert log.search("not there", 0) is None


def test_search_across_chunk_boundaries(tmp_path, monkeypatch):
    import moeconsole.console.logfile as lf
    monkeypatch.setattr(lf, "CHUNK", 64)
    p = tmp_path / "train.log"
    body = "".join(f"line {i:04d} ........................\n" for i in range(200))
    body += "needle-in-the-haystack\n"
    p.write_text(body)
    log = LogFile(p)
    log.refresh()
    assert len(log) == 201
    assert log.search("needle-in-the-haystack", 0) == 200
    assert log.search("needle-in-the-haystack", 200, backwards=True) == 200
    assert log.lines(199, 5) == ["line 0199 ........................", "needle-in-the-haystack"]


def test_missing_file_is_empty(tmp_path):
    log = LogFile(tmp_path / "nope.log")
    assert not log.refresh()
    assert len(log) == 0 and log.lines(0, 5) == []


def _same_inode_again(p, text: str, tries: int = 2000) -> bool:
    """Unlink ``p`` and create it again with ``text`` until the filesystem gives the new file the
    old one's inode (ext4 gives a freed inode to the next new file at once; tmpfs never does):
    True when it did within ``tries``."""
    old = os.stat(p).st_ino
    for _ in range(tries):
        os.unlink(p)
        p.write_text(text)
        if os.stat(p).st_ino == old:
            return True
    return False


def test_a_log_replaced_by_a_new_file_with_the_old_inode_is_read_from_its_start(tmp_path):
    """A log deleted and written again (a training restarted by hand into the same file name, a
    sync that re-creates it), the filesystem giving the new file the freed inode, at least as
    long: the index was kept as a continuation and the view showed the new text cut at the old
    lines' offsets (a line glued onto another, the first lines lost)."""
    p = tmp_path / "train.log"
    p.write_text("a\nb\nc\n")
    log = LogFile(p)
    log.refresh()
    assert log.lines(0, 5) == ["a", "b", "c"]
    new = "first line of the new log\nsecond line\n"
    if not _same_inode_again(p, new):
        import pytest
        pytest.skip(f"the filesystem under {tmp_path} gave no freed inode again (tmpfs numbers every new file anew)")
    log.refresh()
    assert log.lines(0, 5) == ["first line of the new log", "second line"], log.lines(0, 5)
    assert len(log) == 2 and log.resets == 1


def test_a_log_truncated_and_written_past_the_old_end_between_two_reads_is_read_from_its_start(tmp_path):
    """logrotate's copytruncate while the view was not looking, the training writing on past the
    old end before the next refresh: same file, size not smaller; the text before the old end
    changed, so the index is made again from the start."""
    p = tmp_path / "train.log"
    p.write_text("step 1\nstep 2\n")
    log = LogFile(p)
    log.refresh()
    with open(p, "r+") as f:   # the same file: truncated, then written on past the old end
        f.truncate(0)
        f.write("after the rotation: step 3\nstep 4\n")
    log.refresh()
    assert log.lines(0, 5) == ["after the rotation: step 3", "step 4"], log.lines(0, 5)
    assert log.resets == 1


def _reads() -> int:
    """read(2)/pread(2) calls this thread made so far (/proc/thread-self/io ``syscr``)."""
    with open("/proc/thread-self/io") as f:
        return int(next(line for line in f if line.startswith("syscr:")).split()[1])


def test_an_unchanged_log_is_looked_at_with_a_stat_not_opened_and_read_at_each_refresh(tmp_path):
    """The ranks view looks at every rank's log each refresh (hundreds); each look opened the
    file and read its first bytes and those before the indexed end, five round trips a file on a
    network filesystem, for a file that had not changed. Now a look whose stat is the same as the
    last one reads nothing, until one refresh tick has passed (the stat's blind spot); an append
    is still seen at once."""
    p = tmp_path / "rank3.log"
    p.write_text("step 1\nstep 2\n")
    log = LogFile(p)
    log.refresh()
    looks = 50
    began, before = time.monotonic(), _reads()
    for _ in range(looks):
        assert not log.refresh()
    reads, ticks = _reads() - before, (time.monotonic() - began) / bounds.REFRESH_S
    # two reads a look that opens the file, at most one such look a tick; the rest: reading syscr
    assert reads <= 2 * (int(ticks) + 1) + 4, (reads, ticks)
    with open(p, "a") as f:
        f.write("step 3\n")
    assert log.refresh() and log.lines(0, 5) == ["step 1", "step 2", "step 3"]


def test_a_generation_the_filesystem_answers_once_and_not_the_next_time_keeps_the_index(tmp_path, monkeypatch):
    """FS_IOC_GETVERSION that fails at one look (a FUSE or network filesystem that answers it
    now and then: it cannot be made to fail here, so the look's call is made to fail) gives no
    generation: that is no new file, and the log was indexed again from its start at that look
    and at the next one that got a generation again."""
    import moeconsole.console.logfile as lf
    p = tmp_path / "train.log"
    p.write_text("a\nb\n")
    log = LogFile(p)
    monkeypatch.setattr(lf, "file_version", lambda fd: 7)
    log.refresh()
    for generation in (None, 7):
        monkeypatch.setattr(lf, "file_version", lambda fd, g=generation: g)
        with open(p, "a") as f:
            f.write("c\n")
        log.refresh()
    assert log.resets == 0 and len(log) == 4
    monkeypatch.setattr(lf, "file_version", lambda fd: 8)   # both known and not the same: another file
    with open(p, "a") as f:
        f.write("d\n")
    log.refresh()
    assert log.resets == 1 and log.lines(0, 6) == ["a", "b", "c", "c", "d"]
