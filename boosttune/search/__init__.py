"""Search: Ray Tune + Optuna over the search space, with the multi-objective rung scheduler and dashboards."""
