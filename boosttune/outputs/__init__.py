"""What a user reads and takes home: the results table (results.py), the confirmed figures on disk (summary.py), the
export (export.py: best_boost_config.json and best_recipe.json) and ``load_best_recipe`` (best_recipe.py)."""
