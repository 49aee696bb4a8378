"""The statistics, pure (pandas, numpy, scipy; no Ray, no MindSpore): paired-seed tests (paired.py), the race and its
model (race.py, race_model.py), the device's noise record (noise.py), the job at the planned length (job.py), the
handoff (handoff.py), the Pareto selection and the tolerance (select.py), the confirm stage's figures
(confirmed.py) and the one vocabulary of a decision (decisions.py)."""
