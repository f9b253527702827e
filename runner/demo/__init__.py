"""The built-in demo workload: a genuine tiny MoE causal LM with LoRA, trained on CPU with torch,
logging and checkpointing like ms-swift, with fault injection for every crash class.

Run it as ``python -m runner.demo.train`` (see ``runner.demo.train`` and docs/demo.md). Importing
this package is cheap: torch is imported only by the modules that train."""
