"""The team project the preflight and experiment tests run as a user would: tests/projects/team_model.py (a small
network with BatchNorm on in-memory data; its kwargs switch in the issue's mistakes and the team's optimizers)
copied outside the repository with an experiment file, not installed, and ``boosttune`` run from its folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO

BOOSTTUNE = str(Path(sys.executable).with_name("boosttune"))
EXPERIMENT = """\
name: team
base:
  model: {entry: "team_model:build", kwargs: {}}
  epochs: 2
  batch_size: 32
  optimizer: {name: momentum, learning_rate: 0.05}
num_trials: 2
prune_slow: false
confirm_seeds: 0
"""


def user_env() -> dict[str, str]:
    """A user's shell: no Ray cluster to join, nothing of the repository on the path, MindSpore's log as shipped."""
    env = {**os.environ, "PYTHONPATH": ""}
    env.pop("RAY_ADDRESS", None)
    env.pop("GLOG_v", None)
    return env


def make_project(folder: Path) -> Path:
    """The team's folder: its model module, its data (data/team.npz, read by a relative path) and experiment.yaml."""
    shutil.copy(REPO / "tests" / "projects" / "team_model.py", folder / "team_model.py")
    (folder / "experiment.yaml").write_text(EXPERIMENT)
    subprocess.run([sys.executable, "team_model.py"], cwd=folder, env=user_env(), check=True, timeout=120)
    return folder


def boosttune(project: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """``boosttune ARGS`` run from the project's folder, as the team types it."""
    return subprocess.run([BOOSTTUNE, *args], cwd=project, env=user_env(), capture_output=True, text=True,
                          timeout=timeout)
