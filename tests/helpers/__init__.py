"""Plain modules the tests share that are not fixtures (fixtures live in the conftest.py files): imported as
``tests.helpers.<name>``, never from a test module."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
