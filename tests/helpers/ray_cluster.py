"""Ray clusters of several nodes on this machine, started with ``ray start`` as a team starts one, and stopped
without touching any other Ray on the machine (``ray stop`` would stop them all).

A node can be given folders of its own (``private``): it starts in a mount namespace of its own (``unshare -m``,
root only) with a fresh tmpfs over each, so what it writes there is not seen on the head or on another node, as on
a cluster whose nodes share no disk. ``seed`` fills such a folder at the node's start (a cache it already holds).
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import psutil

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ours(marker: str) -> list[psutil.Process]:
    """Every process of this test's Ray cluster (their command lines carry its temp folder) and their children."""
    found = {}
    for process in psutil.process_iter(["cmdline"]):
        try:
            if marker in " ".join(process.info["cmdline"] or ()):
                found[process.pid] = process
                for child in process.children(recursive=True):
                    found[child.pid] = child
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return list(found.values())


def stop_cluster(marker: str) -> None:
    """Stop this cluster only (``ray stop`` would stop every Ray on the machine, other tests' included)."""
    processes = ours(marker)
    for process in processes:
        try:
            process.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=5)  # as `ray stop` waits, then kills what is left
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=10)


def _wait_for_job_agent(address: str, env: dict[str, str], timeout_s: float = 120.0) -> None:
    """The head answers before its job agent is up ("No available agent to submit job"): wait until it takes a job."""
    deadline = time.monotonic() + timeout_s
    while True:
        done = subprocess.run([RAY, "job", "submit", "--no-wait", "--address", address, "--", "true"], env=env,
                              capture_output=True, text=True, timeout=120)  # accepted: the agent is up
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the head's job agent did not come up in {timeout_s:.0f} s:\n{done.stderr[-2000:]}")
        time.sleep(2)


def can_make_private_nodes() -> bool:
    """Root, with ``unshare`` and ``mount``: a node of its own folders can be started (CI runs as root)."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None and shutil.which("mount") is not None


@contextmanager
def ray_cluster(nodes: Sequence[dict], *, env: dict[str, str] | None = None,
                head: Sequence[str] = (), seed: dict[Path, Path] | None = None) -> Iterator[dict]:
    """``ray start --head`` (the trial drivers' TRAIN_DRIVER resource, the dashboard on 127.0.0.1) with
    ``nodes[0]["cpus"]`` CPUs, and one node joining it for each further entry, in a short temp folder of their own
    (Unix socket paths are limited). A node's ``private``: folders that node gets a tmpfs of its own over; ``head``:
    more arguments of the head's ``ray start`` (``--autoscaling-config``); ``seed``: {private folder: a folder whose
    files every node's own copy starts with}.
    Yields the dashboard and GCS addresses, the environment to reach it with, and the temp folder."""
    temp = tempfile.mkdtemp(prefix="btj", dir="/tmp")
    gcs, dashboard = _free_port(), _free_port()
    # Ray 2.60 turns token authentication on for `ray start --head` when ~/.ray/auth_token exists (a local
    # ray.init() writes one); a joining node then needs RAY_AUTH_MODE=token too. This cluster has a token of its own.
    token = Path(temp) / "auth_token"
    token.write_text(secrets.token_hex(32))
    env = {**os.environ, **(env or {}), "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN_PATH": str(token), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("RAY_ADDRESS", None)
    common = ["--node-ip-address=127.0.0.1", "--num-gpus=0", f"--temp-dir={temp}", "--disable-usage-stats"]
    try:
        first, *others = nodes
        subprocess.run([RAY, "start", "--head", f"--port={gcs}", "--include-dashboard=true",
                        "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard}",
                        "--resources={\"TRAIN_DRIVER\": 1000}", f"--num-cpus={first['cpus']}", *common, *head],
                       env=env, check=True, capture_output=True, text=True, timeout=120)
        for node in others:
            start = [RAY, "start", f"--address=127.0.0.1:{gcs}", f"--num-cpus={node['cpus']}", *common]
            private = [str(p) for p in node.get("private", ())]
            if private:  # its raylet and every worker it starts live in this mount namespace
                mounts = " && ".join(f"mkdir -p {shlex.quote(p)} && mount -t tmpfs tmpfs {shlex.quote(p)}"
                                     + (f" && cp -a {shlex.quote(str(seed[Path(p)]))}/. {shlex.quote(p)}"
                                        if seed and Path(p) in seed else "")
                                     for p in private)
                start = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                         f"{mounts} && exec {shlex.join(start)}"]
            subprocess.run(start, env=env, check=True, capture_output=True, text=True, timeout=120)
        _wait_for_job_agent(f"http://127.0.0.1:{dashboard}", env)
        yield {"dashboard": f"http://127.0.0.1:{dashboard}", "gcs": f"127.0.0.1:{gcs}", "env": env, "temp": temp}
    finally:
        stop_cluster(temp)
        shutil.rmtree(temp, ignore_errors=True)
    assert not ours(temp), "processes of the test cluster were left behind"
