# Two entry points for a fresh machine:
#   make demo   set up .venv and run the built-in tiny MoE demo under the console (no GPU needed)
#   make test   set up .venv and run the test suite
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
# torch's CPU build comes from PyTorch's CPU index (scripts/install_torch.py): `make demo
# TORCH_CPU_INDEX=URL` names a mirror, `TORCH_CPU_INDEX=` (empty) takes torch from your own pip indexes.

.PHONY: setup demo test typecheck bench swift-env clean

$(STAMP): pyproject.toml scripts/install_torch.py runner/core/cpu_torch.py
	@# one line where $(PYTHON) cannot make a working .venv (too old, Debian's python3 without -venv)
	@$(PYTHON) scripts/check_python.py "$(PYTHON)" "make $(or $(MAKECMDGOALS),setup)"
	$(PYTHON) -m venv $(VENV)
	# torch first, the CPU build (PyPI's Linux torch is the CUDA one, 4.7 GB); the project keeps it.
	$(PY) scripts/install_torch.py
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/moeconsole demo

# Tests mostly wait on real processes, so workers overlap the waits (TEST_WORKERS=0: one process).
TEST_WORKERS ?= 4
test: $(STAMP)
	@echo "make test: each worker collects the suite first; nothing prints until it has (a minute or two on a busy 2-core machine)"
	$(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# mypy on runner/ and console/, and the import contracts (runner never imports console/, the layers).
typecheck: $(STAMP)
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The UI benchmarks run nvitop and toolong side by side, from an environment of their own.
BENCH_ENV = .venv-bench/.installed
$(BENCH_ENV):
	$(PYTHON) -m venv .venv-bench
	.venv-bench/bin/pip install -q nvitop toolong
	touch $(BENCH_ENV)

bench: $(STAMP) $(BENCH_ENV)
	$(PY) bench/run_all.py

# Optional: real ms-swift 4.6 in its own environment for recipes/swift-tiny-cpu.yaml and tests/swift.
swift-env:
	scripts/swift-env.sh

clean:
	rm -rf $(VENV) .venv-swift .venv-bench .swift-tiny *.egg-info
