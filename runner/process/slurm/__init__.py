"""Slurm as a launch engine: the batch script the runner writes, and what Slurm's commands
print, read into typed values. Pure text in, values out; the engine that runs sbatch, squeue,
sacct and scancel builds on these."""
