"""The runner: the driver loop that supervises one run, and its control protocol."""
