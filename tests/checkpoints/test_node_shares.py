"""A node of rank > 0 with a disk of its own: its shares of the world's saves (discover.node_shares) and
the rule that refuses a resume they prove is behind node 0's (order.node_resume_refusal)."""
from __future__ import annotations

from pathlib import Path

from moeconsole.runner.checkpoints.discover import node_shares
from moeconsole.runner.checkpoints.order import node_resume_refusal


def _share(root: Path, step: int, *names: str) -> Path:
    d = root / f"checkpoint-{step}"
    d.mkdir(parents=True)
    for n in names:
        (d / n).write_bytes(b"x")
    return d


def test_the_shares_of_a_node_newest_first_and_nothing_else(tmp_path):
    out = tmp_path / "output"
    _share(out, 2, "rng_state_1.pth")
    four = _share(out / "v0-20260101-000000", 4, "rng_state_2.pth", "rng_state_3.pth")   # ms-swift's v*/ dir
    _share(out, 6, "rng_state_1.pth", "adapter_model.safetensors", "trainer_state.json")  # a whole save
    _share(out, 8, "rng_state_1.pth", "rng_state_2.pth", "rng_state_3.pth")               # node 0's, process 0 missing
    ds = _share(out, 10, "rng_state_1.pth")
    (ds / "global_step10").mkdir()
    (ds / "global_step10" / "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt").write_bytes(b"x")
    assert node_shares(out) == [(10, ds), (4, four), (2, out / "checkpoint-2")]
    assert node_shares(tmp_path / "missing") == []


def test_a_resume_behind_the_worlds_newest_save_is_refused_in_one_line(tmp_path):
    share = tmp_path / "checkpoint-4"
    line = node_resume_refusal("1", None, [(4, share), (2, tmp_path / "checkpoint-2")])
    assert line is not None and "\n" not in line
    assert line.startswith("node 1 cannot resume with node 0: this node wrote its share of the world's save of step 4")
    assert str(share) in line and "it has no save" in line
    older = node_resume_refusal("1", {"path": str(tmp_path / "checkpoint-2"), "step": 2}, [(4, share)])
    assert older is not None and "its newest save is step 2" in older
    assert node_resume_refusal("1", {"path": str(share), "step": 4}, [(4, share)]) is None
    assert node_resume_refusal("1", None, []) is None


def test_only_the_shares_written_since_the_run_started_count(tmp_path):
    """Review R45 D2: the Trainer rotates saves only where ``should_save``, so an earlier run's shares stay on
    node 1's disk for ever; they say nothing of this run's world (written before it started: not counted)."""
    import os
    out = tmp_path / "output"
    old = _share(out, 500, "rng_state_1.pth")
    week_ago = old.stat().st_mtime - 7 * 86400
    os.utime(old / "rng_state_1.pth", (week_ago, week_ago))
    os.utime(old, (week_ago, week_ago))
    started = week_ago + 3600
    assert node_shares(out, since=started) == []
    assert node_shares(out) == [(500, old)]            # without a start, every share (as before)
    new = _share(out, 4, "rng_state_1.pth")            # this run's own share, written after its start
    assert node_shares(out, since=started) == [(4, new)]


def test_the_refusal_claims_no_more_than_the_node_knows_and_advises_no_split(tmp_path):
    """Review R45 D1/D3/D5: no "storage every node mounts" (two runners over one output dir each skip the other's
    saves as another recipe's: a silent split); node 0's save of the step may be unfinished (transformers writes
    the shares without waiting for process 0's weights), so ``--from`` is offered; the copy leaves node 0's
    sidecar out; a copy that kept it is named with the file to delete, not taken for a missing save."""
    share = tmp_path / "checkpoint-4"
    line = node_resume_refusal("1", None, [(4, share)])
    assert line is not None and "\n" not in line
    assert "mounts" not in line and "shared" not in line
    assert "if node 0 finished writing it" in line and "--from" in line
    assert "without its moeconsole.json" in line
    copied = tmp_path / "checkpoint-4"
    stamped = node_resume_refusal("1", None, [(2, tmp_path / "checkpoint-2")], [copied])
    assert stamped is not None and "\n" not in stamped and "checkpoint-2" not in stamped
    assert f"delete {copied / 'moeconsole.json'}" in stamped


def test_the_shares_on_disk_when_the_run_began_are_its_record_with_no_clock(tmp_path):
    """Round 18: the shares there when the run began (``shares_on_disk``) are an earlier run's; one made
    since, or rewritten since, is this run's whatever its mtime says (a wall clock stepped back an hour
    stamps it before the run's start)."""
    import os

    from moeconsole.runner.checkpoints.discover import shares_on_disk
    out = tmp_path / "output"
    old = _share(out, 500, "rng_state_1.pth")
    week_ago = old.stat().st_mtime - 7 * 86400
    os.utime(old / "rng_state_1.pth", (week_ago, week_ago))
    os.utime(old, (week_ago, week_ago))
    before = shares_on_disk(out)
    assert before == {"checkpoint-500": week_ago}
    assert node_shares(out, before=before) == []
    new = _share(out, 4, "rng_state_1.pth")
    stepped = new.stat().st_mtime - 3600
    os.utime(new / "rng_state_1.pth", (stepped, stepped))
    os.utime(new, (stepped, stepped))
    assert node_shares(out, since=stepped + 1800) == []          # the wall-clock rule misses it
    assert node_shares(out, before=before) == [(4, new)]
    (old / "rng_state_1.pth").write_bytes(b"yy")                 # written again since the run began
    os.utime(old / "rng_state_1.pth", (week_ago + 1, week_ago + 1))
    assert node_shares(out, before=before) == [(500, old), (4, new)]
