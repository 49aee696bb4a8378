"""Evaluation: the results table, Pareto selection, the paired confirm stage, its statistics and the export."""
