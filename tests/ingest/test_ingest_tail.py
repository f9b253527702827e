"""Following a growing file: offsets, truncation, replacement, and live delivery."""
from __future__ import annotations

import os


from moeconsole.runner.ingest import FileTailer
from moeconsole.runner.ingest.tail import SEEN_BYTES, seen_digest



def append(path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


# ----------------------------------------------------------------------------- FileTailer

def test_tailer_reads_appended_bytes_by_offset(tmp_path):
    log = tmp_path / "train.log"
    t = FileTailer(log)
    assert t.read_new() == b""                  # not there yet
    append(log, "one\n")
    assert t.read_new() == b"one\n"
    assert t.read_new() == b""
    append(log, "two\nthr")
    assert t.read_new() == b"two\nthr" and t.offset == 11 and t.resets == 0


def test_tailer_start_offset_and_read_cap(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"0123456789")
    t = FileTailer(log, start_offset=4, max_read=3)
    assert [t.read_new(), t.read_new(), t.read_new()] == [b"456", b"789", b""]


def test_tailer_truncation_restarts_from_zero(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"a" * 100)
    t = FileTailer(log)
    assert len(t.read_new()) == 100
    with open(log, "r+b") as f:
        f.truncate(0)
    append(log, "new\n")
    assert t.read_new() == b"new\n" and t.resets == 1


def test_a_truncation_written_past_the_offset_before_the_next_read_restarts_from_zero(tmp_path):
    """copytruncate while the reader was busy: the file is longer than the offset again when it
    looks, but the bytes before the offset are new text: read from 0, not from the middle."""
    log = tmp_path / "train.log"
    append(log, "".join(f"step {i}\n" for i in range(1, 21)))
    t = FileTailer(log, pinned=True)
    assert t.read_new().endswith(b"step 20\n")
    os.truncate(log, 0)
    append(log, "".join(f"step {i}\n" for i in range(21, 201)))   # an O_APPEND writer: from offset 0
    got = t.read_new()
    assert got.startswith(b"step 21\n") and t.resets == 1, got[:40]


def test_a_reader_started_at_a_saved_offset_reads_a_log_rewritten_meanwhile_from_its_start(tmp_path):
    """A runner starts at the offset its predecessor saved, with the digest of the bytes before it
    (state.json's ``log_seen``): a copytruncate while no reader ran, the new text longer than the
    offset, is read from 0 (with no digest it read on from the middle of the new text). The same
    log grown on is read on at the offset; a digest never holds the text."""
    log = tmp_path / "train.log"
    append(log, "".join(f"step {i}\n" for i in range(1, 21)))
    first = FileTailer(log, pinned=True)
    first.read_new()
    offset, seen = first.offset, first.digest_before(first.offset)
    first.close()
    assert seen == seen_digest(log.read_bytes()[offset - SEEN_BYTES:offset]) and seen is not None
    append(log, "step 21\n")
    grown = FileTailer(log, start_offset=offset, pinned=True, seen=seen)
    assert grown.read_new() == b"step 21\n" and grown.resets == 0
    os.truncate(log, 0)
    append(log, "".join(f"step {i}\n" for i in range(22, 201)))
    again = FileTailer(log, start_offset=offset, pinned=True, seen=seen)
    got = again.read_new()
    assert got.startswith(b"step 22\n") and again.resets == 1, got[:40]
    blind = FileTailer(log, start_offset=offset, pinned=True)   # no digest saved: read on
    assert not blind.read_new().startswith(b"step 22\n")


def test_the_hole_a_writer_without_append_leaves_after_a_truncation_is_read_on(tmp_path):
    """A writer without O_APPEND writes on at its own offset after the truncation: zeros up to
    there, its new lines after. The reader goes on at its offset (nothing of the new text is
    before it) and reads no zeros as a line."""
    log = tmp_path / "train.log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"".join(b"step %d\n" % i for i in range(1, 21)))
        t = FileTailer(log, pinned=True)
        assert t.read_new().endswith(b"step 20\n")
        os.truncate(log, 0)
        os.write(fd, b"step 21\n")    # at the writer's offset: a hole before it
    finally:
        os.close(fd)
    assert t.read_new() == b"step 21\n" and t.resets == 0


def test_zeros_read_at_the_end_and_filled_in_later_are_no_rewrite(tmp_path):
    """On a shared filesystem a reader may see a file's new size before its data (NFS's cached
    attributes, another host writing): the last bytes read are zeros that are text by the next
    read. That is the same file written on, not a rewritten one: the reader goes on at its
    offset (a restart from 0 read the whole log again, every record twice)."""
    log = tmp_path / "train.log"
    log.write_bytes(b"".join(b"step %d\n" % i for i in range(1, 21)) + b"\0" * 8)
    t = FileTailer(log, pinned=True)
    assert t.read_new().endswith(b"\0" * 8)
    with open(log, "r+b") as f:
        f.seek(-8, os.SEEK_END)
        f.write(b"step 21\n")   # the zeros' real bytes arrive
        f.write(b"step 22\n")   # and more after them
    assert t.read_new() == b"step 22\n" and t.resets == 0


def test_tailer_replacement_drains_the_old_file_first(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"old-1\n")
    t = FileTailer(log)
    assert t.read_new() == b"old-1\n"
    append(log, "old-2\n")                       # written before the swap, not read yet
    fresh = tmp_path / "fresh.log"
    fresh.write_bytes(b"new-1\n")
    os.replace(fresh, log)
    assert t.read_new() == b"old-2\n" and t.resets == 0
    assert t.read_new() == b"new-1\n" and t.resets == 1


def test_tailer_new_file_after_delete(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"first run\n")
    t = FileTailer(log)
    t.read_new()
    log.unlink()
    assert t.read_new() == b""
    log.write_bytes(b"second\n")
    assert t.read_new() == b"second\n" and t.resets == 1


def test_tailer_on_a_shorter_file_than_the_start_offset(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"abc")
    t = FileTailer(log, start_offset=100)
    assert t.read_new() == b"abc" and t.resets == 1


def test_a_pinned_tailer_reads_the_writers_file_through_a_rotation_until_told_to_follow(tmp_path):
    """logrotate's rename-and-create under a training: its stdout keeps the renamed file, so the
    runner's tailer (pinned) goes on reading that file, not the new empty train.log; the next
    attempt's descriptor (``follow``) moves it to the new file, from its start."""
    log = tmp_path / "train.log"
    writer = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # the training's stdout
    t = FileTailer(log, pinned=True)
    os.write(writer, b"step 1\n")
    assert t.read_new() == b"step 1\n"
    os.rename(log, tmp_path / "train.log.1")
    log.write_bytes(b"")
    os.write(writer, b"step 2\n")
    assert t.read_new() == b"step 2\n" and t.resets == 0
    os.write(writer, b"step 3\n")
    assert t.read_new() == b"step 3\n"
    os.close(writer)
    nxt = os.open(log, os.O_WRONLY | os.O_APPEND)  # the next attempt's stdout: the new train.log
    os.write(nxt, b"attempt 2\n")
    assert t.follow(nxt) is True and t.resets == 1
    assert t.read_new() == b"attempt 2\n"
    assert t.follow(nxt) is False                  # the same file: nothing changes
    os.close(nxt)
    t.close()


def test_following_the_file_already_read_keeps_the_offset(tmp_path):
    """A new runner (start offset from state.json) launching into the same train.log reads on
    from its offset, never the earlier attempts again."""
    log = tmp_path / "train.log"
    log.write_bytes(b"attempt 1 line\n")
    t = FileTailer(log, start_offset=15, pinned=True)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"attempt 2\n")
    assert t.follow(fd) is False
    assert t.read_new() == b"attempt 2\n"
    os.close(fd)
    t.close()
