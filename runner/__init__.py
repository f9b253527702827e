"""Headless supervision of training runs: recipes, process control, log ingestion,
monitors, telemetry, checkpoints and the run store. Never imports ``console``."""
