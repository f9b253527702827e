"""The run directory's contract: its files and their typed models, the journal, the run index,
secrets, snapshots for the UI and --json, run comparison and receipts."""
