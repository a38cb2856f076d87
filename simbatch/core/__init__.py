"""The shared kernel: errors and validation, random streams, distributions, pools and cores,
work bounds, results, and the engine interface with its registry."""
