"""What counts as a secret and how it is masked, on plain strings."""
from __future__ import annotations

import json

from moeconsole.runner.rundir.secrets import MASK, Redactor, mask_assignments, secret_argv_values


def test_values_from_env_and_argv_are_masked_wherever_they_appear():
    r = Redactor.from_env({"HF_TOKEN": "abcd1234efgh", "WANDB_API_KEY": "k3y-value", "PATH": "/usr/bin",
                           "PAD_TOKEN_ID": "0"},
                          ["train.py", "--hub_token", "plain-word-secret", "--db-password=pw123456", "--lr", "1e-4"])
    assert set(r.values) == {"abcd1234efgh", "k3y-value", "plain-word-secret", "pw123456"}
    line = "login with abcd1234efgh; hub plain-word-secret; PATH=/usr/bin"
    assert r.redact(line) == f"login with {MASK}; hub {MASK}; PATH=/usr/bin"
    assert r.redact_argv(["x", "--hub_token", "plain-word-secret", "--other", "abcd1234efgh"]) == \
        ["x", "--hub_token", MASK, "--other", MASK]


def test_token_shapes_and_assignments_are_masked_without_knowing_them():
    r = Redactor()
    assert r.redact("Authorization uses hf_" + "A" * 30) == f"Authorization uses {MASK}"
    assert r.redact("url https://user:hunter22@example.org/x") == f"url https://user:{MASK}@example.org/x"
    assert mask_assignments('{"api_key": "abcdef123", "pad_token": "<pad>", "eos_token_id": 2}') == \
        f'{{"api_key": "{MASK}", "pad_token": "<pad>", "eos_token_id": 2}}'
    assert mask_assignments("hub_token=xyz98765 lr=0.1") == f"hub_token={MASK} lr=0.1"


def test_short_values_are_not_collected_and_flags_without_value_are_skipped():
    assert secret_argv_values(["--token", "--next", "--api-key="]) == []
    assert Redactor(["ab", "abcd"]).values == ["abcd"]


def test_for_run_dir_reads_both_secrets_file_forms(tmp_path):
    (tmp_path / "secrets.json").write_text(json.dumps({"v": 1, "env": {"HF_TOKEN": "envsecret1"},
                                                       "argv": {"3": "argvsecret2"}}))
    assert set(Redactor.for_run_dir(tmp_path).values) == {"envsecret1", "argvsecret2"}
    (tmp_path / "secrets.json").write_text(json.dumps({"HF_TOKEN": "oldform3"}))
    assert Redactor.for_run_dir(tmp_path).values == ["oldform3"]
    (tmp_path / "secrets.json").unlink()
    (tmp_path / "secrets.json").symlink_to(tmp_path / "elsewhere.json")
    assert Redactor.for_run_dir(tmp_path).values == []            # never follows a symlink
