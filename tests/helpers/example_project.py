"""The example project (experiments/custom: an LSTM on MindRecord data) as a team's own folder outside the
repository, not installed: the ``custom_example`` fixture (tests/conftest.py) prepares it once a session, and each
test that tunes, calibrates or submits it takes a copy (:func:`copy_example`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO

EXAMPLE = REPO / "experiments" / "custom"
BOOSTTUNE = str(Path(sys.executable).with_name("boosttune"))


def user_env() -> dict[str, str]:
    """A user's shell: no Ray cluster to join, nothing of the repository on the path."""
    env = {**os.environ, "PYTHONPATH": ""}
    env.pop("RAY_ADDRESS", None)
    return env


def prepare_example(into: Path) -> Path:
    """experiments/custom as a team's own folder, with its data prepared (python prepare.py). The session's
    ``custom_example`` fixture runs it once; tests take copies of that folder (:func:`copy_example`)."""
    folder = into / "digits-lstm"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("data", "runs", "__pycache__"))
    subprocess.run([sys.executable, "prepare.py"], cwd=folder, env=user_env(), check=True, capture_output=True,
                   timeout=300)
    return folder


def copy_example(into: Path, prepared: Path) -> Path:
    """A team's folder of its own in ``into``: a copy of the prepared example (its MindRecord files name their
    shards relative to their folder, so the copy reads its own)."""
    folder = into / "digits-lstm"
    shutil.copytree(prepared, folder, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    return folder
