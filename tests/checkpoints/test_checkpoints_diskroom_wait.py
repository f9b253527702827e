"""The room a run that crashed with disk_full waits for (moeconsole.runner.checkpoints.diskroom)."""
from __future__ import annotations

from moeconsole.runner.checkpoints.diskroom import MIB, room_needed, room_wait_line

GB = 10**9


def test_room_is_a_margin_over_the_largest_checkpoint_and_never_below_the_floor():
    assert room_needed(10 * GB, margin=1.2, min_free_mib=1024) == 12 * GB
    assert room_needed(0, margin=1.2, min_free_mib=1024) == 1024 * MIB      # no save seen yet
    assert room_needed(100 * MIB, margin=1.2, min_free_mib=1024) == 1024 * MIB  # tiny saves: the floor
    assert room_needed(-5, margin=2.0, min_free_mib=0) == 0


def test_the_waiting_line_names_the_path_and_the_numbers():
    line = room_wait_line("/ckpt/run", 3 * 1024 ** 3, 12 * 1024 ** 3, 10 * 1024 ** 3, 1.2)
    assert line == "room on /ckpt/run: 3.0 GB free, need 12.0 GB (1.2 x the largest checkpoint, 10.0 GB)"
    assert room_wait_line("/x", 0, 1024 * MIB, 0, 1.2).endswith("(cooldown.disk_free_min_mib)")
