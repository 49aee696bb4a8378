"""Execution: running one training run on Ray (Ray Train workers, the cluster's checks, the runs' records)."""
