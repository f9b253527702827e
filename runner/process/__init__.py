"""Processes: the waiter, the process tree, attempts and their engines (local, Slurm), and
launching a detached runner."""
