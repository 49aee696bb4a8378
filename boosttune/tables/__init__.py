"""The tables every stage reads, below the statistics: a run's state (:mod:`~boosttune.tables.states`), the results
table of a search (:mod:`~boosttune.tables.results`) and the confirm table of paired rounds
(:mod:`~boosttune.tables.confirm`): their schema, readers and builders. Nothing here imports a later stage; the
statistics (:mod:`boosttune.stats`) read these tables, :mod:`boosttune.outputs` writes what they decide.
"""
