"""``order.chosen_save``: the save ``restart --from WHICH`` names, on real saves on disk: a relative
path or one through a symlink names the same directory; a name or step that saves of several
attempts' ``v<N>-<time>/`` folders share is refused for its path; ``order.save_before`` judges
as the resume point does (``watch.latest_good``)."""
from __future__ import annotations

import os

from moeconsole.runner.checkpoints.order import SaveOrder, chosen_save, save_before
from moeconsole.runner.checkpoints.sidecar import write_sidecar


def test_a_relative_path_or_one_through_a_symlink_names_the_save(mk, tmp_path, monkeypatch):
    out = tmp_path / "out"
    ck = mk.adapter(out / "checkpoint-40")
    mk.adapter(out / "checkpoint-20")
    (tmp_path / "latest").symlink_to(ck)
    monkeypatch.chdir(tmp_path)
    for which in ("out/checkpoint-40", "latest", str(tmp_path / "latest"), str(ck)):
        got = chosen_save(out, SaveOrder(), which, recipe_hash=None)
        assert isinstance(got, dict) and got["path"] == str(ck) and got["step"] == 40, (which, got)


def test_a_name_or_step_several_attempts_saved_is_refused_for_its_path(mk, tmp_path):
    """ms-swift's v0 saved checkpoint-20 (a stub: cut short) and v1, after a restart --from an earlier
    save, saved checkpoint-20 again (ok). The name and the step are refused, listing both; each path
    is taken (the newest alone had been matched, and a refusal there ended the search)."""
    out = tmp_path / "out"
    bad = out / "v0-20260101-000000" / "checkpoint-20"
    mk.stub(bad / "adapter_model.safetensors")
    (bad / "adapter_config.json").write_text('{"r": 8}')
    good = mk.adapter(out / "v1-20260101-000100" / "checkpoint-20")
    for which in ("checkpoint-20", "20"):
        got = chosen_save(out, SaveOrder(), which, recipe_hash=None)
        assert isinstance(got, str) and got.startswith(f"--from {which}: 2 saves of this run are named so ("), got
        assert str(bad) in got and str(good) in got and got.endswith("give its path"), got
    assert chosen_save(out, SaveOrder(), str(good), recipe_hash=None)["path"] == str(good)
    refused = chosen_save(out, SaveOrder(), os.path.relpath(bad), recipe_hash=None)
    assert isinstance(refused, str) and "checkpoint-20 is " in refused and "verifies ok" in refused, refused


def test_save_before_takes_the_newest_clean_save_of_this_recipe_below_the_step(mk, tmp_path):
    out = tmp_path / "out"
    mk.adapter(out / "checkpoint-10")
    write_sidecar(mk.adapter(out / "checkpoint-20"), run_id="r", recipe_hash="h", step=20, verdict="ok", suspect=False)
    write_sidecar(mk.adapter(out / "checkpoint-30"), run_id="r", recipe_hash="old", step=30, verdict="ok", suspect=False)
    write_sidecar(mk.adapter(out / "checkpoint-40"), run_id="r", recipe_hash="h", step=40, verdict="ok", suspect=True)
    mk.adapter(out / "checkpoint-50")
    assert save_before(out, SaveOrder(), 50, recipe_hash="h")["step"] == 20
    assert save_before(out, SaveOrder(), 50, recipe_hash="h", allow_drift=True)["step"] == 30
    assert save_before(out, SaveOrder(), 10, recipe_hash="h") is None


def test_save_before_names_a_save_by_its_path_when_attempts_share_its_name(mk, tmp_path):
    """The divergence hint types `restart RUN --from WHICH` with ``save_before``'s ``which``: a name
    that saves of several attempts share is refused by ``--from``, so the hint's command gives the
    path, which ``chosen_save`` takes; a name only one save has stays the name."""
    from moeconsole.runner.core.crash import divergence_hint
    out = tmp_path / "out"
    mk.adapter(out / "v0-20260101-000000" / "checkpoint-20")
    older = mk.adapter(out / "v0-20260101-000000" / "checkpoint-10")
    newer = mk.adapter(out / "v1-20260101-000100" / "checkpoint-20")
    got = save_before(out, SaveOrder(), 30, recipe_hash=None)
    assert got["path"] == str(newer) and got["which"] == str(newer), got
    assert chosen_save(out, SaveOrder(), got["which"], recipe_hash=None)["path"] == str(newer)
    assert f"--from {newer}` resumes from checkpoint-20 (step 20" in divergence_hint("r1", got, 30)
    alone = save_before(out, SaveOrder(), 20, recipe_hash=None)
    assert alone["path"] == str(older) and alone["which"] == "checkpoint-10", alone
    assert "--from checkpoint-10` resumes from checkpoint-10 (step 10" in divergence_hint("r1", alone, 20)
