"""The built-in demo workload: a genuine tiny MoE causal LM with LoRA, trained on CPU with torch,
logging and checkpointing like ms-swift, with fault injection for every crash class.

Run it as ``python -m moeconsole.runner.demo.train`` (see ``moeconsole.runner.demo.train`` and docs/demo.md). Importing
this package is cheap: torch is imported only by the modules that train."""

# What the demo imports beyond moeconsole's own dependencies: ``moeconsole run``'s pre-flight
# checks that the recipe's Python has them (moeconsole.runner.recipes.lint), so a missing torch is said before
# launch instead of failing three attempts. ``pip install 'moeconsole[demo]'`` installs them.
REQUIRES = ("torch", "safetensors")
INSTALL_HINT = "pip install 'moeconsole[demo]'"
