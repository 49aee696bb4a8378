"""Command lines: ``boosttune`` (:mod:`boosttune.cli.main`) and the experiment scripts' (:mod:`boosttune.cli.search`)."""
