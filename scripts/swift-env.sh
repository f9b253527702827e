#!/usr/bin/env bash
# Create the isolated ms-swift environment for recipes/swift-tiny-cpu.yaml, then build the tiny
# Qwen3-MoE model and dataset the recipe trains on. Run from anywhere:
#
#     scripts/swift-env.sh            # creates .venv-swift/ and .swift-tiny/ at the repo root
#
# ms-swift stays out of .venv (the console must not need it): the recipe runs
# .venv-swift/bin/swift, moeconsole runs from .venv. Idempotent: a finished install is kept
# (delete .venv-swift/ to reinstall); the model is rebuilt only when missing.
# Needs network access to PyPI (or its mirror) for ms-swift; about 3-4 minutes and 2 GB.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=.venv-swift
STAMP="$VENV/.installed"

if [ ! -f "$STAMP" ]; then
  "$PYTHON" -m venv "$VENV"
  # Keep the environment out of git whatever the repo's .gitignore says (as Python 3.13 venvs do).
  echo '*' > "$VENV/.gitignore"
  # torch first, the CPU build, as the Makefile's .venv (scripts/install_torch.py: PyPI's Linux torch
  # is the CUDA build; TORCH_CPU_INDEX= takes it from your own indexes). ms-swift keeps that torch.
  "$VENV/bin/python" scripts/install_torch.py
  # The recipe uses 4.6 flags (--tuner_type; 4.2's --train_type is rejected by 4.6).
  "$VENV/bin/python" -m pip install -q 'ms-swift>=4.6,<4.7'
  touch "$STAMP"
fi

mkdir -p .swift-tiny
echo '*' > .swift-tiny/.gitignore
"$VENV/bin/python" -m moeconsole.runner.demo.swift_tiny --out .swift-tiny
echo "ms-swift environment ready: $VENV/bin/swift; tiny model and data in .swift-tiny/"
