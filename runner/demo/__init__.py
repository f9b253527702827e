"""The built-in demo workload: a genuine tiny MoE causal LM with LoRA, trained on CPU with torch,
logging and checkpointing like ms-swift, with fault injection for every crash class.

Run it as ``python -m moeconsole.runner.demo.train`` (see ``moeconsole.runner.demo.train`` and docs/demo.md). Importing
this package is cheap: torch is imported only by the modules that train."""
# How to install torch's CPU build (its one owner; the crash hint and `moeconsole demo` say the same).
from moeconsole.runner.core.cpu_torch import install_hint  # noqa: F401

# What the demo imports beyond moeconsole's own dependencies: ``moeconsole run``'s pre-flight
# checks that the recipe's Python has them (moeconsole.runner.recipes.lint), so a missing torch is said before
# launch instead of failing three attempts. ``install_hint()`` says how to install them.
REQUIRES = ("torch", "safetensors")
