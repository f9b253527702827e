"""`moeconsole doctor`: versions of the training environment and known-bad combinations."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from moeconsole.console.commands.doctor import known_bad

REPO = Path(__file__).resolve().parent.parent
SWIFT_46 = {"ms-swift": ["transformers<5.20.0,>=4.33", "peft>=0.11", 'deepspeed; extra == "all"']}


def test_declared_requirements_decide_known_bad_pairs():
    ok = {"ms-swift": "4.6.0", "transformers": "5.19.0", "peft": "0.20.0"}
    assert known_bad(ok, SWIFT_46) == []
    bad = known_bad({**ok, "transformers": "5.21.0"}, SWIFT_46)
    assert [b["rule"] for b in bad] == ["requirement_conflict"] and bad[0]["level"] == "error"
    assert bad[0]["message"] == "ms-swift 4.6.0 requires transformers<5.20.0,>=4.33 but 5.21.0 is installed"
    # An optional extra's requirement does not count.
    assert known_bad({**ok, "deepspeed": "0.1"}, SWIFT_46) == []
    assert [b["rule"] for b in known_bad({"torch": "2.13.0+cpu", "megatron-core": "0.14.0"})] == \
        ["cpu_torch_with_gpu_stack"]


def test_doctor_reports_this_environment():
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor", "--json"], capture_output=True,
                         text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    import torch
    assert doc["v"] == 1 and doc["packages"]["torch"] == torch.__version__
    assert doc["gpu"]["available"] is False and "NVIDIA" in doc["gpu"]["reason"]
    human = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor"], capture_output=True, text=True,
                           cwd=REPO, timeout=60)
    assert "GPUs: none" in human.stdout and "no known-bad combination found" in human.stdout


# ---- the training environment (runner/recipes/doctor.py) -------------------------------------------
from moeconsole.runner.recipes import doctor  # noqa: E402


def report(packages=None, env=None, torch=None, sources=None, requires=None):
    return doctor.EnvReport(python="3.11", executable="/opt/swift/bin/python", packages=packages or {},
                            env=env or {}, torch=torch, sources=sources or {}, requires=requires or {})


GPU_STACK = {"ms-swift": "4.6.0", "megatron-core": "0.15.0", "mcore-bridge": "1.0.0", "transformers": "5.19.0",
             "torch": "2.10.0", "transformer-engine": "2.8.0", "flash-linear-attention": "0.5.0"}
H200 = {"version": "2.10.0", "cuda": "12.9", "available": True, "nccl": "2.27.5",
        "devices": [{"name": "NVIDIA H200", "capability": [9, 0]}] * 8}
B200 = {**H200, "devices": [{"name": "NVIDIA B200", "capability": [10, 0]}]}


def rules(found):
    return {f["rule"]: f for f in found}


def test_fla_from_pypi_050_lacks_the_backward_fix_but_a_git_build_is_fine():
    r = rules(doctor.findings(report(GPU_STACK, torch=H200)))
    assert r["fla_missing_gdn_backward_fix"]["level"] == "warning"
    assert "gated-delta-rule backward fix" in r["fla_missing_gdn_backward_fix"]["message"]
    git = {"flash-linear-attention": {"url": "https://github.com/fla-org/flash-linear-attention",
                                      "vcs_info": {"vcs": "git", "commit_id": "0123456789abcdef"}}}
    r = rules(doctor.findings(report(GPU_STACK, torch=H200, sources=git)))
    assert "fla_missing_gdn_backward_fix" not in r and "0123456789ab" in r["fla_git_build"]["message"]


def test_alloc_conf_name_follows_the_torch_version():
    old = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    r = rules(doctor.findings(report(GPU_STACK, env=old, torch=H200)))
    assert "PYTORCH_ALLOC_CONF" in r["alloc_conf_renamed"]["message"] and "2.10.0" in r["alloc_conf_renamed"]["message"]
    assert "alloc_conf_renamed" not in rules(doctor.findings(report({**GPU_STACK, "torch": "2.8.0"}, env=old)))
    new = {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}
    assert "alloc_conf_renamed" not in rules(doctor.findings(report(GPU_STACK, env=new, torch=H200)))
    assert "(< 2.9) only reads" in rules(doctor.findings(report({**GPU_STACK, "torch": "2.8.0"}, env=new)))[
        "alloc_conf_renamed"]["message"]


A100 = {**H200, "devices": [{"name": "NVIDIA A100", "capability": [8, 0]}]}


def test_fla_tma_on_hopper_and_blackwell_and_in_builds_that_turn_it_on_by_default():
    # FLA_USE_TMA=1 opts into FLA's Triton TMA kernels on compute capability 9.x and 10.x alike.
    for gpu in (H200, B200):
        found = rules(doctor.findings(report(GPU_STACK, env={"FLA_USE_TMA": "1"}, torch=gpu)))
        assert found["fla_tma_enabled"]["level"] == "warning", found
        assert gpu["devices"][0]["name"] in found["fla_tma_enabled"]["message"]
    assert "fla_tma_enabled" not in rules(doctor.findings(report(GPU_STACK, env={"FLA_USE_TMA": "1"}, torch=A100)))
    assert "fla_tma_enabled" not in rules(doctor.findings(report(GPU_STACK, torch=H200)))
    # Before 0.4.0 TMA is on by default on sm_90+ (fla/utils.py: FLA_NO_USE_TMA to turn it off).
    old = {**GPU_STACK, "flash-linear-attention": None, "fla-core": "0.3.2"}
    found = rules(doctor.findings(report(old, torch=H200)))
    assert "before 0.4.0" in found["fla_tma_default_on"]["message"] and "FLA_NO_USE_TMA=1" in \
        found["fla_tma_default_on"]["message"]
    assert "fla_tma_default_on" not in rules(doctor.findings(report(old, env={"FLA_NO_USE_TMA": "1"}, torch=H200)))


SWIFT_46_MEGATRON = {"ms-swift": ["transformers<5.20.0,>=4.33", 'mcore-bridge>=1.6.3; extra == "megatron"',
                                  'megatron-core>=0.16; extra == "megatron"', 'peft>=0.15; extra == "megatron"']}


def test_ms_swift_megatron_extra_and_what_it_refuses_to_start_without():
    stack = {**GPU_STACK, "megatron-core": "0.16.1", "peft": "0.20.0", "transformers": "5.19.0"}
    ok = rules(doctor.findings(report({**stack, "mcore-bridge": "1.6.3"}, torch=H200, requires=SWIFT_46_MEGATRON)))
    assert "swift_megatron_extra" not in ok and "swift_megatron_requirement" not in ok
    # 1.5.x starts (megatron_args.py requires >=1.5.0) but is not what 4.6.0[megatron] declares.
    found = rules(doctor.findings(report({**stack, "mcore-bridge": "1.5.0"}, torch=H200, requires=SWIFT_46_MEGATRON)))
    assert found["swift_megatron_extra"]["level"] == "warning"
    assert "mcore-bridge>=1.6.3 but 1.5.0" in found["swift_megatron_extra"]["message"]
    # Below 1.5.0 `megatron sft` refuses to start.
    found = rules(doctor.findings(report({**stack, "mcore-bridge": "1.4.2"}, torch=H200, requires=SWIFT_46_MEGATRON)))
    assert found["swift_megatron_requirement"]["level"] == "error" and "swift_megatron_extra" not in found
    assert "mcore-bridge>=1.5.0" in found["swift_megatron_requirement"]["message"]
    # 4.2.0 asks for 1.2.0 (init.py _patch_mcore_bridge).
    old = rules(doctor.findings(report({**stack, "ms-swift": "4.2.0", "mcore-bridge": "1.2.0"}, torch=H200)))
    assert "swift_megatron_requirement" not in old


def test_recipe_pins_and_version_are_checked_against_the_training_python():
    git = {"flash-linear-attention": {"url": "https://github.com/fla-org/flash-linear-attention",
                                      "vcs_info": {"vcs": "git", "commit_id": "5aea42b0123456789"}}}
    stack = {**GPU_STACK, "torch": "2.9.1+cu128", "megatron-core": "0.16.1", "triton": "3.5.1"}
    pins = {"torch": "2.9.1", "megatron-core": "0.16.1", "triton": "3.5.1", "flash-linear-attention": "git:5aea42b",
            "transformer-engine": ">=2.15"}
    found = doctor.findings(report(stack, torch=H200, sources=git), pins=pins, expected_swift="4.6.0")
    mism = [f["message"] for f in found if f["rule"] == "pin_mismatch"]
    assert mism == ["transformer-engine is pinned to >=2.15 (swift.pins) but 2.8.0 is installed"], mism
    found = doctor.findings(report({**stack, "torch": "2.13.0+cpu"}, torch=H200), pins=pins, expected_swift="4.2.0")
    mism = " | ".join(f["message"] for f in found if f["rule"] == "pin_mismatch")
    assert "torch is pinned to 2.9.1 (swift.pins) but 2.13.0+cpu is installed" in mism
    assert "flash-linear-attention is pinned to git commit 5aea42b" in mism and "not a git build" in mism
    assert "4.2.0 (swift.version) but 4.6.0 is installed" in rules(found)["swift_version_mismatch"]["message"]


def test_doctor_recipe_whose_python_is_absent_reports_it(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: r\ncommand: [megatron, sft]\nswift: {python: /nonexistent/swift/bin/python, "
                      "pins: {torch: '2.9.1'}}\n")
    for extra in ([], ["--json"]):
        out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor", str(recipe), *extra], capture_output=True,
                             text=True, cwd=REPO, timeout=60)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        assert "training_python_missing" in out.stdout and "/nonexistent/swift/bin/python" in out.stdout
    assert json.loads(out.stdout)["problems"][0]["level"] == "warning"
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: r\ncommand: [megatron, sft]\nswift: {pins: {torch: 'not a version'}}\n")
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor", str(bad)], capture_output=True, text=True,
                         cwd=REPO, timeout=60)
    assert out.returncode == 2 and "swift.pins: torch: 'not a version'" in out.stderr and "Traceback" not in out.stderr


def test_missing_pieces_and_dev_builds_say_why():
    r = rules(doctor.findings(report({"ms-swift": "4.6.0", "torch": "2.10.0", "transformers": "5.20.0.dev0"})))
    assert "swift/megatron/init.py" in r["megatron_core_missing"]["message"]
    assert r["transformers_dev_build"]["level"] == "warning"
    r = rules(doctor.findings(report({**GPU_STACK, "mcore-bridge": None, "transformer-engine": None}, torch=H200)))
    assert "mcore_bridge_missing" in r and "transformer_engine_missing" in r
    assert rules(doctor.findings(report({"torch": "2.10.0"})))["swift_missing"]["level"] == "error"
    r = rules(doctor.findings(report({**GPU_STACK, "ms-swift": "3.12.6"}, torch=H200)))
    assert ("flag tables for 4.2.0-4.2.3, 4.3.0-4.3.2, 4.4.0-4.4.2, 4.5.0-4.5.3, 4.6.0.dev0, 4.6.0 only"
            in r["swift_untabled_version"]["message"])


def test_doctor_inspects_another_python_with_the_recipes_environment(tmp_path):
    """A real second environment: a venv made here (no ms-swift in it), inspected through a recipe."""
    import venv
    env_dir = tmp_path / "trainenv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    # It sees this environment's packages (torch) through a .pth file, as a layered venv would.
    import site
    (site_dir,) = env_dir.glob("lib/python*/site-packages")
    (site_dir / "layer.pth").write_text(site.getsitepackages()[0] + "\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: r\ncommand: [megatron, sft]\nswift: {{python: {env_dir}}}\n"
                      "env: {PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:True'}\n")
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor", str(recipe), "--json"], capture_output=True,
                         text=True, cwd=REPO, timeout=120)
    doc = json.loads(out.stdout)
    assert doc["executable"].startswith(str(env_dir)) and doc["env"]["PYTORCH_CUDA_ALLOC_CONF"]
    found = {p["rule"] for p in doc["problems"]}
    assert "swift_missing" in found and out.returncode == 1       # that env cannot train with ms-swift
    assert "alloc_conf_renamed" in found                            # torch 2.13 there, the old variable set
    bad = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor", "--python", str(tmp_path / "nope")],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert bad.returncode == 2 and "not an executable Python" in bad.stderr and "Traceback" not in bad.stderr


def _stub_env(root: Path, *, te: bool, fla: bool, flash: bool, transformers: str) -> Path:
    """A training environment made of stub packages on PYTHONPATH, imported by the real import
    machinery in a subprocess: ms-swift 4.6.0 whose Megatron arguments import mcore_bridge.model,
    which imports transformer_engine (as mcore-bridge 1.6.5's model modules do), megatron-core,
    peft, transformers; optionally transformer-engine, flash-linear-attention and flash-attn."""
    def pkg(rel: str, body: str = "") -> None:
        p = root / rel / "__init__.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)

    def dist(name: str, version: str) -> None:
        d = root / f"{name.replace('-', '_')}-{version}.dist-info"
        d.mkdir(parents=True, exist_ok=True)
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")

    pkg("swift", "__version__ = '4.6.0'\n")
    pkg("swift/megatron", "import megatron.core\n")
    pkg("swift/megatron/arguments", "from mcore_bridge.model import get_mcore_model_type, get_model_meta\n")
    pkg("megatron")
    pkg("megatron/core")
    pkg("mcore_bridge")
    pkg("mcore_bridge/model", "import transformer_engine\nget_mcore_model_type = get_model_meta = None\n")
    pkg("peft")
    pkg("transformers", f"__version__ = '{transformers}'\n")
    for name, version in (("ms-swift", "4.6.0"), ("megatron-core", "0.16.1"), ("mcore-bridge", "1.6.5"),
                          ("peft", "0.17.0"), ("transformers", transformers)):
        dist(name, version)
    if te:
        pkg("transformer_engine")
        pkg("transformer_engine/pytorch")
        dist("transformer-engine", "2.15.0")
    if fla:
        pkg("fla")
        pkg("fla/modules")
        (root / "fla/modules/l2norm.py").write_text("def l2norm(x):\n    return x\n")
        pkg("fla/ops")
        pkg("fla/ops/gated_delta_rule", "def chunk_gated_delta_rule(*a):\n    return None\n")
        dist("flash-linear-attention", "0.5.1")
    if flash:
        pkg("flash_attn")
        dist("flash-attn", "2.8.3")
    return root


def _doctor_recipe(tmp_path: Path, stubs: Path) -> Path:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({
        "name": "r", "swift": {"python": sys.executable, "version": "4.6.0"}, "env": {"PYTHONPATH": str(stubs)},
        "command": ["megatron", "sft", "--model", "Qwen/Qwen3.5-397B-A17B", "--tuner_type", "lora",
                    "--dataset", "d.jsonl"]}))
    return recipe


def test_doctor_imports_the_recipes_code_path_in_the_training_python(tmp_path):
    """ms-swift 4.6 with megatron-core and mcore-bridge but no transformer-engine, no FLA and no
    flash-attn, and transformers below the model's minimum: every one is an error (exit 1)."""
    stubs = _stub_env(tmp_path / "site", te=False, fla=False, flash=False, transformers="5.1.0")
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor", str(_doctor_recipe(tmp_path, stubs)),
                          "--json"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    errors = [p["message"] for p in doc["problems"] if p["level"] == "error"]
    text = "\n".join(errors)
    assert "import swift.megatron.arguments fails" in text and "No module named 'transformer_engine'" in text
    assert "import transformer_engine.pytorch fails" in text
    assert "import fla.ops.gated_delta_rule fails" in text and "gated_delta_net.py l.39-47" in text
    assert "import flash_attn fails" in text
    assert "the model needs transformers>=5.2.0" in text and "5.1.0 is installed" in text
    assert doc["imports"]["peft"] is None                 # what imports is not reported


def test_doctor_passes_once_the_code_path_imports(tmp_path):
    stubs = _stub_env(tmp_path / "site", te=True, fla=True, flash=True, transformers="5.2.0")
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor", str(_doctor_recipe(tmp_path, stubs)),
                          "--json"], capture_output=True, text=True, cwd=REPO, timeout=120)
    doc = json.loads(out.stdout)
    assert not [p for p in doc["problems"] if p["rule"] in ("import_failed", "model_requirement")], doc["problems"]
    assert all(v is None for v in doc["imports"].values()), doc["imports"]


def test_doctor_reads_the_code_path_from_an_ms_swift_config_file(tmp_path):
    """``megatron sft train.yaml``: the model and tuner are in the file (swift/cli/main.py
    ``parse_yaml_args`` splices them in), so the imports its code path needs are the same."""
    stubs = _stub_env(tmp_path / "site", te=False, fla=False, flash=True, transformers="5.2.0")
    (tmp_path / "train.yaml").write_text("model: Qwen/Qwen3.5-397B-A17B\ntuner_type: lora\ndataset: d.jsonl\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({
        "name": "r", "swift": {"python": sys.executable, "version": "4.6.0"}, "env": {"PYTHONPATH": str(stubs)},
        "command": ["megatron", "sft", "{recipe_dir}/train.yaml"]}))
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "doctor", str(recipe), "--json"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    text = "\n".join(p["message"] for p in json.loads(out.stdout)["problems"] if p["level"] == "error")
    assert "import fla.ops.gated_delta_rule fails" in text and "Qwen3.5-397B-A17B" in text


def test_doctor_from_a_deleted_working_directory_says_so_in_one_line(tmp_path):
    """`moeconsole doctor` typed in a directory deleted under the shell (an output directory cleaned
    while the shell stood in it): the probe ran the training's Python there, where torch's import
    dies ("Intel oneMKL FATAL ERROR: Cannot load .../libtorch_cpu.so"), and doctor reported that
    as the environment's fault. It says the directory is gone, as `run` does, exit 2. Real
    processes: a shell that enters the directory and removes it."""
    import os
    import shlex
    gone = tmp_path / "gone"
    gone.mkdir()
    for extra in ([], ["--python", sys.executable]):
        cli = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "moeconsole.console.cli", "doctor", *extra])
        done = subprocess.run(["sh", "-c", f"mkdir {shlex.quote(str(gone))} 2>/dev/null; cd {shlex.quote(str(gone))} "
                                           f"&& rmdir {shlex.quote(str(gone))} && exec {cli}"],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        said = [ln for ln in done.stderr.splitlines() if not ln.startswith("shell-init:")]
        assert done.returncode == 2 and len(said) == 1, done
        assert "the current directory no longer exists" in said[0] and "probe failed" not in said[0], said
