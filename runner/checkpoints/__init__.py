"""Checkpoints: find them, prove they hold real weights, watch a live run's saves.

- ``safetensors_file``: strict header-only check of one safetensors file.
- ``discover``: find checkpoints of a run or directory, newest first, in the layouts users have.
- ``verify``: one verdict per checkpoint (layout-aware: adapters, shards, Megatron).
- ``scan`` / ``compare``: the deeper ``--full`` content checks and the determinism compare.
- ``sidecar`` / ``watch`` / ``live``: what the runner stores, watches and records.
- ``lint_rules``: the ms-swift Megatron stub-trap rule for ``moeconsole lint``.

Nothing here imports torch.
"""
