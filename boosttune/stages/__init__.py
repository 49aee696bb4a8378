"""The stages that train, after the search: the O0 baseline (baseline.py) and the confirm stage (confirm.py, its policy;
rounds.py, its paired rounds, fixed or raced). The search is :mod:`boosttune.search`."""
