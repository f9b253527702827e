"""ms-swift's ``megatron sft`` start-up checks that need no GPU, no model and no dataset, mirrored
from the source: ``MegatronArguments.__post_init__`` and ``_init_distributed``
(swift/megatron/arguments/megatron_args.py in the ms-swift 4.2.0 and 4.6.0 wheels and of main's
4.6.0.dev0, commit 3602360a). Each check raises there, before any weight loads, with the message
below; the line numbers are the ``raise``/``assert`` of each version. 4.6.0 adds ``_check_muon``'s
refusal of ``--muon_lr``/``--muon_min_lr`` without a Muon optimizer (main has neither flag).

The one owner of these rules: ``moeconsole lint`` reports them (when ms-swift's own validation
cannot run in the training environment) and the test double ``tests/fakes/megatron`` refuses a
command the same way, in the same order.

Not mirrored, because they need the model's type or installed packages: the deepseek_v41
LoRA + selective recompute check (``_check_recompute``), ``apply_wd_to_qk_layernorm`` for other
model types, ``tuner_type lora_llm`` on a text-only model, the flash-attention version
(``_init_attention_backend``), ``bridge_backend megatron-bridge`` (``_check_bridge_backend``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from moeconsole.runner.recipes.swift.flags import is_prerelease, pick, version_key

SRC = "swift/megatron/arguments/megatron_args.py"


@dataclass(frozen=True)
class StartupError:
    rule: str
    message: str          # ms-swift's own exception text
    where: str            # file and lines, per version
    exc: str = "ValueError"


MAIN = "4.6.0.dev0"      # ms-swift's main branch, commit 3602360a (2026-08-22): the same checks, other lines


def _source_lines(version: str, v46: str, v42: str, main: str) -> str:
    if version.startswith(("4.0", "4.1", "4.2")):
        return f"{SRC} l.{v42} (4.2.0)"
    if is_prerelease(version) and version.startswith("4.6.0"):
        return f"{SRC} l.{main} ({MAIN}, main)"
    return f"{SRC} l.{v46} (4.6.0)"


def _muon_lr_checked(version: str) -> bool:
    """``_check_muon``'s refusal of ``--muon_lr`` without Muon came with the flag itself, in 4.5.3
    (l.1002-1003) and 4.6.0 (l.1046-1047); releases before 4.5.3 and main's 4.6.0.dev0 (3602360a) have no
    ``--muon_lr`` at all (an unknown flag there). So the version's flag table decides."""
    table, _ = pick(version)
    return table is not None and "muon_lr" in (table.fields("megatron sft") or {})


def _muon_lr_lines(version: str) -> str:
    if version_key(version)[:2] == (4, 5):
        return f"{SRC} l.1002-1003 (4.5.3)"
    return f"{SRC} l.1046-1047 (4.6.0)"


def _released_lines(version: str, v46: str, v45: str, v42: str | None, *, src: str = SRC,
                    v45_read: str = "4.4.0, 4.5.3") -> str:
    """A check's lines in the release the recipe names: 4.2.0's for 4.0-4.2 (where ``v42`` is given), the
    4.4.0/4.5.3 ones read (``v45_read``) for 4.3-4.5, 4.6.0's for 4.6 on (a main build too)."""
    key = version_key(version)[:2]
    if key <= (4, 2) and v42:
        return f"{src} l.{v42} (4.2.0)"
    if key < (4, 6):
        return f"{src} l.{v45} ({v45_read})"
    return f"{src} l.{v46} (4.6.0)"


def _megatron_fsdp_checked(version: str) -> bool:
    """``_check_megatron_fsdp`` came with ``--use_megatron_fsdp``, in 4.5.3 (l.913-927) and 4.6.0 (l.958-971):
    the version's flag table decides."""
    table, _ = pick(version)
    return table is not None and "use_megatron_fsdp" in (table.fields("megatron sft") or {})


def _megatron_fsdp_lines(version: str, v46: str, v453: str) -> str:
    where = f"{SRC} MegatronArguments._check_megatron_fsdp"
    return f"{where} l.{v453} (4.5.3)" if version_key(version)[:2] == (4, 5) else f"{where} l.{v46} (4.6.0)"


def grpo_startup_errors(get: Callable[[str], Any], version: str) -> list[StartupError]:
    """``megatron rlhf --rlhf_type grpo``: ``RLHFMegatronArgumentsMixin.__post_init__`` runs first in
    ``MegatronArguments.__post_init__`` (4.6.0 l.842) and refuses these without a model, data or GPU,
    in this order (``_init_grpo``'s ``_check_not_supported``, then after the generation batch's
    arithmetic, not mirrored here, the truncation and vLLM). The message is ms-swift's own."""
    if get("rlhf_type") != "grpo":
        return []
    old = version_key(version)[:2] <= (4, 2)
    out: list[StartupError] = []
    unsupported = [("async_generate", get("async_generate"), "async_generate is not supported for Megatron GRPO right now",
                    ("396-397", "396-397", "299-300")),
                   ("sync_ref_model", get("sync_ref_model"), "sync_ref_model is not supported for Megatron GRPO right now",
                    ("398-399", "398-399", "301-302"))]
    if old:     # 4.2.0 only: a dataset in order, and no multi-turn scheduler
        unsupported += [("dataset_shuffle", get("dataset_shuffle") is False,
                         "dataset_shuffle false is not supported for Megatron GRPO", ("", "", "303-304")),
                        ("multi_turn_scheduler", bool(get("multi_turn_scheduler")),
                         "multi_turn_scheduler is not supported for Megatron GRPO right now", ("", "", "305-306"))]
    unsupported.append(("num_iterations", (get("num_iterations") or 1) > 1,
                        "num_iterations > 1 is not supported for Megatron GRPO right now",
                        ("400-401", "400-401", "307-308")))
    for flag, refused, message, (v46, v45, v42) in unsupported:
        if refused:
            out.append(StartupError("swift_grpo_unsupported", message, _released_lines(version, v46, v45, v42)))
            break     # _check_not_supported raises at the first
    truncation = get("truncation_strategy") or "left"
    if truncation not in ("left", "delete"):
        out.append(StartupError("swift_grpo_truncation", "GRPO requires `truncation_strategy 'left' or 'delete'`, "
                                f"Current value: `truncation_strategy='{truncation}'`.",
                                _released_lines(version, "416-418", "416-418", "316-318")))
    if get("use_vllm") is False and (old or not get("use_ray")):
        out.append(StartupError("swift_grpo_needs_vllm", "use_vllm must be True for Megatron GRPO",
                                _released_lines(version, "459-460", "439-440", "332"), exc="AssertionError"))
    return out


# What ``megatron sft``/``pt``/``rlhf`` set before their arguments are read: swift/cli/_megatron/sft.py l.5
# (4.2.0-4.6.0; pt.py, rlhf.py the same) ``os.environ.setdefault('CUDA_DEVICE_MAX_CONNECTIONS', '1')``,
# which Megatron-FSDP then refuses (its own comment: "SWIFT sets it to '1' by default").
MAX_CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"
SWIFT_MAX_CONNECTIONS = "1"


def startup_errors(get: Callable[[str], Any], world_size: int | None, version: str,
                   env: Mapping[str, str] | None = None) -> list[StartupError]:
    """Every start-up check the command fails, in the order ms-swift runs them (the real run stops
    at the first). ``get(field)`` is the parsed value with ms-swift's default (``None`` when the
    field is unset and has none); ``world_size`` is torchrun's (NPROC_PER_NODE x NNODES), None
    when unknown (the batch arithmetic is then skipped); ``env``: the environment the training gets
    (None: unknown, the checks of it are skipped)."""
    out: list[StartupError] = grpo_startup_errors(get, version)
    ratio = get("freeze_parameters_ratio") or 0
    if 0 < ratio < 1 and (get("pipeline_model_parallel_size") or 1) > 1:
        out.append(StartupError("swift_freeze_ratio_with_pp",
                                "`freeze_parameters_ratio` is not supported when `pipeline_model_parallel_size` > 1",
                                _released_lines(version, "493-494", "473-474", "361-362")))
    granularity = get("recompute_granularity")
    if granularity == "none":
        granularity = None
    if granularity == "selective" and get("recompute_method") is not None:
        out.append(StartupError("swift_recompute_method_with_selective",
                                "recompute method is not yet supported for selective recomputing granularity",
                                _source_lines(version, "849-850", "643-644", "800-801")))
    if get("group_by_length") and get("padding_free"):
        out.append(StartupError("swift_group_by_length_padding_free",
                                "group_by_length is not compatible with padding_free.",
                                _source_lines(version, "852-853", "646-647", "803-804")))
    if (get("pipeline_model_parallel_size") or 1) == 1 and (get("decoder_first_pipeline_num_layers") is not None
                                                           or get("decoder_last_pipeline_num_layers") is not None):
        out.append(StartupError("swift_pipeline_layers_without_pp",
                                "pipeline_model_parallel_size must be greater than 1 if you want to set "
                                "decoder_first_pipeline_num_layers or decoder_last_pipeline_num_layers.",
                                _source_lines(version, "885-888", "676-679", "833-836")))
    limit = get("save_total_limit")
    if limit is not None:
        if get("async_save"):
            out.append(StartupError("swift_save_total_limit", "async_save is not supported with save_total_limit.",
                                    _source_lines(version, "910-912", "693-695", "858-860")))
        elif limit < 2:
            out.append(StartupError("swift_save_total_limit", "save_total_limit must be greater than or equal to 2.",
                                    _source_lines(version, "913-914", "696-697", "861-862")))
    if get("tuner_type") == "lora_llm":
        merge = get("merge_lora")
        merge = get("save_safetensors") if merge is None else merge
        if not merge:
            out.append(StartupError("swift_lora_llm", "`merge_lora` must be True when using `--tuner_type lora_llm`",
                                    _source_lines(version, "928-929", "711-712", "876-877")))
        elif not get("no_save_optim"):
            out.append(StartupError("swift_lora_llm",
                                    "`no_save_optim` must be True when using `--tuner_type lora_llm`",
                                    _source_lines(version, "930-931", "713-714", "878-879")))
    tp = get("tensor_model_parallel_size") or 1
    sequence_parallel = bool(get("sequence_parallel")) and tp > 1      # l.943-944 (4.2: l.726-727)
    if get("tp_comm_overlap") and not sequence_parallel:
        out.append(StartupError("swift_tp_comm_overlap_without_sp",
                                "Tensor parallel communication/GEMM overlap can happen only when "
                                "sequence parallelism is enabled", _source_lines(version, "949-951", "728-730", "897-899")))
    if get("use_megatron_fsdp") and _megatron_fsdp_checked(version):
        optimizer = get("optimizer") or "adam"
        if optimizer not in ("sgd", "adam"):
            out.append(StartupError("swift_megatron_fsdp_optimizer",
                                    f'Megatron-FSDP does not support the "{optimizer}" optimizer yet.',
                                    _megatron_fsdp_lines(version, "965-966", "921-922")))
        elif env is not None and env.get(MAX_CONNECTIONS, SWIFT_MAX_CONNECTIONS) == "1":
            out.append(StartupError("swift_megatron_fsdp_max_connections",
                                    "Megatron-FSDP requires `CUDA_DEVICE_MAX_CONNECTIONS > 1`, for example you can set "
                                    "`CUDA_DEVICE_MAX_CONNECTIONS=32`",
                                    _megatron_fsdp_lines(version, "969-971", "925-927")))
    if world_size:
        # initialize_megatron -> megatron-core initialize_model_parallel (megatron/core/parallel_state.py
        # 0.16.1 l.738-741 and l.787-795), then ms-swift's batch arithmetic.
        pp, cp = get("pipeline_model_parallel_size") or 1, get("context_parallel_size") or 1
        model_size = tp * pp * cp
        expert_size = (get("expert_tensor_parallel_size") or tp) * (get("expert_model_parallel_size") or 1) * pp
        if world_size % model_size:
            out.append(StartupError("swift_world_not_divisible", f"world_size ({world_size}) is not divisible by "
                                    f"{model_size}", "megatron/core/parallel_state.py l.740-741 (megatron-core 0.16.1)",
                                    exc="RuntimeError"))
            return out
        if world_size % expert_size:
            out.append(StartupError("swift_world_not_divisible", f"world_size ({world_size}) is not divisible by "
                                    f"expert_tensor_model_pipeline_parallel size ({expert_size})",
                                    "megatron/core/parallel_state.py l.791-795 (megatron-core 0.16.1)",
                                    exc="RuntimeError"))
            return out
        dp = world_size // model_size
        gbs, mbs = get("global_batch_size"), get("micro_batch_size") or 1
        per_step = mbs * dp
        if gbs % per_step != 0:
            out.append(StartupError("swift_global_batch_not_divisible",
                                    f"global batch size ({gbs}) is not divisible by micro batch size ({mbs}) times "
                                    f"data parallel size ({dp}).", _source_lines(version, "1003-1005", "739-741", "951-953")))
        elif gbs // per_step == 0:
            out.append(StartupError("swift_global_batch_not_divisible",
                                    "global_batch_size must be >= `data_parallel_size * micro_batch_size` to have at "
                                    f"least one micro-batch. global_batch_size: {gbs}, data_parallel_size: {dp}, "
                                    f"micro_batch_size: {mbs}.", _source_lines(version, "1007-1011", "743-747", "955-959")))
    if _muon_lr_checked(version) and "muon" not in str(get("optimizer") or "adam") and (
            get("muon_lr") is not None or get("muon_min_lr") is not None):
        # MegatronArguments._check_muon, right after _init_distributed (4.6.0 l.955, l.1046-1047; 4.5.3 l.911, l.1002-1003)
        out.append(StartupError("swift_muon_lr_without_muon",
                                "`muon_lr`/`muon_min_lr` require `--optimizer muon` or `--optimizer dist_muon`.",
                                _muon_lr_lines(version)))
    adapters = get("adapters") or []
    if len(adapters) > 1:
        out.append(StartupError("swift_one_adapter", "Currently only support one adapter",
                                _source_lines(version, "1119", "803", "1021"), exc="AssertionError"))
    return out


# ``swift sft`` / ``pt`` / ``rlhf``: ``SftArguments.__post_init__`` calls ``_check_padding_free`` (4.6.0
# swift/arguments/sft_args.py l.211) after the model's arguments are read and before anything loads. The
# same check in every 4.x wheel read (4.2.0 l.184-195, 4.4.0 l.185-196, 4.5.3 and 4.6.0 l.186-197):
# ``--packing`` turns ``padding_free`` on, and either needs a flash attention implementation; ``--attn_impl``
# defaults to None (swift/arguments/base_args/model_args.py l.79), so a plain ``--packing true`` is refused.
FLASH_ATTN_IMPLS = ("flash_attn", "flash_attention_2", "flash_attention_3", "flash_attention_4")
# ``RLHFArguments._check_padding_free`` then (4.6.0 swift/arguments/rlhf_args.py l.709-716, 4.2.0 l.528-535):
PACKING_RLHF_TYPES = ("grpo", "dpo", "kto", "gkd")
DEFAULT_RLHF_TYPE = "dpo"     # swift/arguments/rlhf_args.py l.233 (4.6.0)


# The other refusals of ``SftArguments.__post_init__`` that need no model, data or GPU, the same words in
# 4.2.0 and 4.6.0 (line numbers of 4.6.0, then 4.2.0): ``BaseArguments._init_lazy_tokenize``
# (swift/arguments/base_args/base_args.py l.164-168, 4.2.0 l.116-120) refuses a ``--lazy_tokenize true``
# given with ``--packing`` or ``--streaming`` (lazy_tokenize's default None is decided from the model's
# type, which is not read here: only the typed value is checked); the training dataset (sft_args.py
# l.220-222, 4.2.0 l.218-220); ``_init_fsdp`` (l.294-295, 4.2.0 l.290-291) refuses FSDP beside DeepSpeed,
# and ``_check_fsdp2_compatibility`` (l.347-351, 4.2.0 l.338-342) ``--save_only_model true`` under a
# sharded state dict, which the preset ``--fsdp fsdp2`` (swift/config/fsdp2.json) and a config without
# ``state_dict_type`` are. Not mirrored: DeepSpeed or FSDP with ``device_map`` (``is_mp``: the GPUs of the
# machine that trains), an FSDP config file (read where the run starts).
FSDP_PRESETS = {"fsdp2": "SHARDED_STATE_DICT"}   # swift/config/fsdp2.json's fsdp_config.state_dict_type


def _fsdp_state_dict_type(fsdp: str) -> str | None:
    """The ``state_dict_type`` an ``--fsdp`` value gives (``_check_fsdp2_compatibility``: SHARDED when its
    config has none); None where it cannot be told here (a file, read where the run starts)."""
    if fsdp in FSDP_PRESETS:
        return FSDP_PRESETS[fsdp]
    if fsdp.lstrip().startswith("{"):
        import json
        try:
            config = json.loads(fsdp)
        except ValueError:
            return None
        inner = config.get("fsdp_config", {}) if isinstance(config, dict) else {}
        return str(inner.get("state_dict_type", "SHARDED_STATE_DICT")) if isinstance(inner, dict) else None
    return None


def sft_startup_errors(get: Callable[[str], Any], command: str, *, values_known: bool = True,
                       version: str = "4.6.0") -> list[StartupError]:
    """The start-up checks of ``swift sft``/``pt``/``rlhf`` that need no model, data or GPU, in ms-swift's
    order (the run stops at the first); ``get`` as for ``startup_errors``. ``values_known``: False where some
    of the command's values could not be read (a config file lint cannot open): the checks of a value's
    absence are left out."""
    if command not in ("swift sft", "swift pt", "swift rlhf"):
        return []
    before, after = rlhf_startup_errors(get, version) if command == "swift rlhf" else ([], [])
    out: list[StartupError] = before
    base = "swift/arguments/base_args/base_args.py BaseArguments._init_lazy_tokenize"
    if get("lazy_tokenize") is True and get("packing"):
        out.append(StartupError("swift_lazy_tokenize_packing", "Packing and lazy_tokenize are incompatible.",
                                f"{base} (4.6.0 l.164-166)"))
    elif get("lazy_tokenize") is True and get("streaming"):
        out.append(StartupError("swift_lazy_tokenize_streaming", "Streaming and lazy_tokenize are incompatible.",
                                f"{base} (4.6.0 l.164-168)"))
    out += _padding_free_errors(get, command)
    if values_known and not get("dataset") and not get("cached_dataset"):
        dataset, cached = get("dataset") or [], get("cached_dataset") or []
        out.append(StartupError("swift_no_dataset",
                                f"self.dataset: {dataset}, self.cached_dataset: {cached}. Please input the training dataset.",
                                "swift/arguments/sft_args.py SftArguments.__post_init__ (4.6.0 l.220-222)"))
    fsdp = get("fsdp")
    if fsdp and get("deepspeed"):
        out.append(StartupError("swift_fsdp_with_deepspeed", "FSDP2 is not compatible with DeepSpeed.",
                                "swift/arguments/sft_args.py SftArguments._init_fsdp (4.6.0 l.294-295)"))
    elif fsdp and get("save_only_model") and "SHARDED" in (_fsdp_state_dict_type(str(fsdp)) or "").upper():
        out.append(StartupError("swift_fsdp_sharded_save_only_model",
                                "FSDP2 with SHARDED_STATE_DICT is not compatible with save_only_model=True. "
                                "Either set save_only_model=False, or change state_dict_type to FULL_STATE_DICT in "
                                "fsdp_config. Note: FULL_STATE_DICT requires more memory and is slower.",
                                "swift/arguments/sft_args.py SftArguments._check_fsdp2_compatibility (4.6.0 l.347-351)"))
    return out + after


RLHF_SRC = "swift/arguments/rlhf_args.py"
VLLM_RLHF_TYPES = ("grpo", "gkd")   # rlhf_args.py l.13 ``rlhf_support_vllm_types`` (4.2.0-4.6.0)


def rlhf_startup_errors(get: Callable[[str], Any], version: str) -> tuple[list[StartupError], list[StartupError]]:
    """``swift rlhf``'s own refusals that need no model, data or GPU: (those ``RLHFArguments.__post_init__``
    raises before ``SftArguments.__post_init__``, those after). Before: ``_init_grpo`` (a cached dataset,
    the truncation side), ``_init_rollout`` (``--vllm_mode`` without or missing beside ``--use_vllm``, for
    GRPO and GKD); after: ``_check_teacher``'s one generation per prompt for GRPO without a teacher (4.5.3
    and 4.6.0; 4.2.0 has no such check). The same words in 4.2.0, 4.5.3 and 4.6.0."""
    rlhf_type = get("rlhf_type") or DEFAULT_RLHF_TYPE
    before: list[StartupError] = []
    after: list[StartupError] = []
    if rlhf_type == "grpo":
        if get("cached_dataset") or get("cached_val_dataset"):
            before.append(StartupError("swift_grpo_cached_dataset", "cached_dataset is not supported for GRPO.",
                                       _released_lines(version, "344", "343", "338", src=RLHF_SRC, v45_read="4.5.3")))
        truncation = get("truncation_strategy") or "left"
        if truncation not in ("left", "delete"):
            before.append(StartupError("swift_grpo_truncation", "GRPO requires `truncation_strategy 'left' or 'delete'`, "
                                       f"Current value: `truncation_strategy='{truncation}'`.",
                                       _released_lines(version, "354", "353", "348", src=RLHF_SRC, v45_read="4.5.3")))
    if rlhf_type in VLLM_RLHF_TYPES:
        if get("vllm_mode") is not None and not get("use_vllm"):
            before.append(StartupError("swift_vllm_mode_without_vllm", "vllm_mode is not supported when use_vllm is false",
                                       _released_lines(version, "445", "444", "394", src=RLHF_SRC, v45_read="4.5.3")))
        elif get("vllm_mode") is None and get("use_vllm"):
            before.append(StartupError("swift_vllm_mode_missing", "vllm_mode is required when use_vllm is true",
                                       _released_lines(version, "448", "447", "397", src=RLHF_SRC, v45_read="4.5.3")))
    if (rlhf_type == "grpo" and version_key(version)[:2] >= (4, 5) and get("num_generations") == 1
            and get("teacher_model") is None and get("teacher_model_server") is None):
        after.append(StartupError("swift_grpo_one_generation", "num_generations must be greater than 1 for GRPO",
                                  _released_lines(version, "410", "409", None, src=RLHF_SRC, v45_read="4.5.3")))
    return before, after


def _padding_free_errors(get: Callable[[str], Any], command: str) -> list[StartupError]:
    """``_check_padding_free``: SftArguments', then RLHFArguments' override."""
    if not (get("packing") or get("padding_free")):
        return []
    out: list[StartupError] = []
    feature = "packing" if get("packing") else "padding_free"
    if get("attn_impl") not in FLASH_ATTN_IMPLS:
        impls = ", ".join(f'"{impl}"' for impl in FLASH_ATTN_IMPLS)
        out.append(StartupError("swift_packing_needs_flash_attn",
                                f'The "{feature}" feature requires a flash attention implementation. '
                                f"Please use one of: {impls}.",
                                "swift/arguments/sft_args.py SftArguments._check_padding_free (4.6.0 l.193-197)"))
    rlhf_type = get("rlhf_type") or DEFAULT_RLHF_TYPE
    if command == "swift rlhf" and rlhf_type not in PACKING_RLHF_TYPES:
        out.append(StartupError("swift_packing_rlhf_type",
                                f"The current rlhf_type '{rlhf_type}' does not support padding_free/packing. "
                                "Please set --padding_free/packing to false.",
                                "swift/arguments/rlhf_args.py RLHFArguments._check_padding_free (4.6.0 l.711-716)",
                                exc="NotImplementedError"))
    return out
