"""The one owner of Ray (boosttune/execution/ray.py): a local instance keeps to itself beside another on the machine."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest


def test_a_local_instance_tells_its_processes_its_own_address():
    from boosttune.execution.ray import DASHBOARD_PORT, free_port, own_instance_env

    port = free_port(DASHBOARD_PORT)
    assert 1 <= port <= 65535
    assert own_instance_env(port) == {"RAY_API_SERVER_ADDRESS": f"http://127.0.0.1:{port}"}
    import socket

    with socket.socket() as taken:  # a port something listens on is never offered
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        assert free_port(taken.getsockname()[1]) != taken.getsockname()[1]


OTHER = textwrap.dedent("""
    import ray, sys, time
    ray.init(num_cpus=1, include_dashboard=False)
    print("up", flush=True)
    sys.stdin.read()  # until the test closes it
""")

TRAIN = textwrap.dedent("""
    import time
    from boosttune.execution.ray import connect_ray
    from boosttune.ray_internals import data_parallel_trainer
    from ray.train import ScalingConfig

    connect_ray(print)

    def train():
        time.sleep(4)  # Ray Train's placement-group cleaner asks the State API about the controller meanwhile

    data_parallel_trainer()(train, scaling_config=ScalingConfig(num_workers=1)).fit()
    time.sleep(3)  # the workers' last lines reach the driver
    print("trained", flush=True)
""")


@pytest.mark.slow
@pytest.mark.ray
def test_a_run_beside_another_local_ray_instance_keeps_to_its_own(tmp_path):
    """Two team members' runs on one box (or a run beside the tests): each run's local instance is the only one its
    workers look for. Before, Ray Train's placement-group cleaner in the second run found two GCS servers on the
    machine and printed a ConnectionError traceback ("Found multiple active Ray instances")."""
    other = subprocess.Popen([sys.executable, "-c", OTHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "up"
        done = subprocess.run([sys.executable, "-c", TRAIN], capture_output=True, text=True, timeout=240,
                              cwd=tmp_path)
    finally:
        other.stdin.close()
        other.wait(timeout=60)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "trained" in done.stdout, log[-3000:]
    assert "a local Ray instance (the embedded default; dashboard at http://127.0.0.1:" in done.stdout
    assert "multiple active Ray instances" not in log and "ConnectionError" not in log, log[-3000:]
