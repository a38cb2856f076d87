"""simbatch: a discrete-event simulator and capacity planner for batching pipelines."""
