"""A served dashboard checked from outside: ``boosttune dashboard`` on a free port, read over HTTP, stopped with
Ctrl-C (the dashboard's own test and the end-to-end search's both use it)."""

from __future__ import annotations

import ipaddress
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def _non_loopback_ipv4() -> str | None:
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == socket.AF_INET and not ipaddress.ip_address(address.address).is_loopback:
                return address.address
    return None


def check_dashboard(results_dir: Path, study_name: str, n_trials: int) -> None:
    """Serve ``results_dir`` with ``boosttune dashboard`` on a free port, check over HTTP that it shows
    ``study_name`` with ``n_trials`` trials and listens on 127.0.0.1 only, then stop it with Ctrl-C (exit 0)."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "boosttune.cli.main", "dashboard", str(results_dir), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # Ctrl-C as a terminal sends it, even when this test runs in a background job (which ignores SIGINT).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                out, err = process.communicate()
                pytest.fail(f"boosttune dashboard exited with {process.returncode} before serving:\n{out}{err}")
            try:
                studies = _get_json(f"{base}/api/studies")["study_summaries"]
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    pytest.fail(f"boosttune dashboard did not answer on {base} within 60 s")
                time.sleep(0.2)
        ids = [s["study_id"] for s in studies if s["study_name"] == study_name]
        assert len(ids) == 1, f"study {study_name!r} not in {studies}"
        detail = _get_json(f"{base}/api/studies/{ids[0]}")
        assert detail["name"] == study_name
        assert len(detail["trials"]) == n_trials

        listening = [c.laddr for c in psutil.Process(process.pid).net_connections(kind="inet")
                     if c.status == psutil.CONN_LISTEN]
        assert listening and all(address.ip == "127.0.0.1" and address.port == port for address in listening)
        other = _non_loopback_ipv4()
        if other is not None:  # this machine's network address must not reach it
            with pytest.raises(OSError):
                socket.create_connection((other, port), timeout=2).close()

        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
        assert process.returncode == 0, err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    first = out.splitlines()[0]
    assert first.startswith(f"dashboard: open {base}/ (study {study_name!r}, {n_trials} trial"), out
    assert f"ssh -L {port}:127.0.0.1:{port} user@" in out and "warning" not in out
