"""``boosttune dashboard``: which study a results folder names, its one-line errors, and a real served dashboard.

:func:`check_dashboard` runs the real command on a free port and reads the study back over optuna-dashboard's
JSON API; an end-to-end test on a real experiment folder can call it too.
"""

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

import optuna
import psutil
import pytest

from boosttune.cli.main import main
from boosttune.config.experiment import parse_experiment
from boosttune.files import claim_folder
from boosttune.search.dashboard import is_loopback, resolve_study

STUDY = "dash-test"


def make_experiment(folder: Path, name: str = STUDY, n_trials: int = 3, **fields) -> Path:
    """An experiment folder as ``boosttune tune`` leaves it: experiment.json and a two-objective study in optuna.db."""
    config = parse_experiment({"name": name, **fields})
    folder = claim_folder(folder, "experiment.json", config.model_dump(mode="json"), resume=False, what="experiment")
    storage = config.study_storage or f"sqlite:///{folder / 'optuna.db'}"
    study = optuna.create_study(study_name=name, storage=storage, directions=["maximize", "maximize"])
    for number in range(n_trials):
        trial = study.ask()
        lr = trial.suggest_float("learning_rate", 1e-3, 1e-1, log=True)
        study.tell(trial, [100.0 * (number + 1), 0.9 - lr])
    return folder


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


def test_dashboard_serves_the_study_end_to_end(tmp_path):
    check_dashboard(make_experiment(tmp_path / "exp", n_trials=4), STUDY, 4)


def test_resolves_the_folders_optuna_db(tmp_path):
    folder = make_experiment(tmp_path / "exp")
    assert resolve_study(folder) == (f"sqlite:///{folder / 'optuna.db'}", STUDY)
    assert resolve_study(tmp_path / "exp" / ".." / "exp") == (f"sqlite:///{folder / 'optuna.db'}", STUDY)


def test_resolves_study_storage_and_an_older_storage_url(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    assert resolve_study(make_experiment(tmp_path / "new", study_storage=url)) == (url, STUDY)
    old = tmp_path / "old"
    old.mkdir()
    (old / "experiment.json").write_text(json.dumps({"name": "legacy", "storage": url}))
    assert resolve_study(old) == (url, "legacy")
    # storage is Ray's folder or bucket now: not an Optuna URL, so the folder's optuna.db is the study's
    (old / "experiment.json").write_text(json.dumps({"name": "legacy", "storage": "s3://bucket/runs"}))
    (old / "optuna.db").touch()
    assert resolve_study(old) == (f"sqlite:///{old.resolve() / 'optuna.db'}", "legacy")


def _one_line_error(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("boosttune: error: ") and "\n" not in err and "Traceback" not in err
    assert captured.out == ""  # nothing served, nothing announced
    return err


def test_missing_folder_is_one_line(tmp_path, capsys):
    err = _one_line_error(["dashboard", str(tmp_path / "nowhere")], capsys)
    assert err.endswith(f"{tmp_path / 'nowhere'}: no such results folder")


def test_empty_folder_is_one_line(tmp_path, capsys):
    assert f"{tmp_path}: no experiment.json here" in _one_line_error(["dashboard", str(tmp_path)], capsys)


def test_folder_without_optuna_db_is_one_line(tmp_path, capsys):
    folder = claim_folder(tmp_path / "exp", "experiment.json", parse_experiment({"name": STUDY}).model_dump(mode="json"),
                          resume=False, what="experiment")
    assert f"{folder}: no optuna.db here" in _one_line_error(["dashboard", str(folder)], capsys)
    assert not (folder / "optuna.db").exists()  # looking did not create one


def test_missing_study_is_one_line(tmp_path, capsys):
    folder = make_experiment(tmp_path / "exp", name="other-study")
    saved = json.loads((folder / "experiment.json").read_text())
    (folder / "experiment.json").write_text(json.dumps({**saved, "name": STUDY}))
    err = _one_line_error(["dashboard", str(folder)], capsys)
    assert f"{folder}: no study '{STUDY}' in sqlite:///{folder / 'optuna.db'} (studies there: other-study)" in err


def test_not_an_optuna_database_is_one_line(tmp_path, capsys):
    folder = claim_folder(tmp_path / "exp", "experiment.json", parse_experiment({"name": STUDY}).model_dump(mode="json"),
                          resume=False, what="experiment")
    (folder / "optuna.db").write_bytes(b"not a database")
    assert "is not a readable Optuna database" in _one_line_error(["dashboard", str(folder)], capsys)


def test_port_in_use_is_one_line(tmp_path, capsys):
    folder = make_experiment(tmp_path / "exp")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        capsys.readouterr()
        assert main(["dashboard", str(folder), "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"boosttune: error: --host 127.0.0.1 --port {port}: cannot listen there")


@pytest.mark.parametrize("host, warned", [("127.0.0.1", False), ("localhost", False), ("0.0.0.0", True)])
def test_warns_off_loopback_and_ctrl_c_exits_0(tmp_path, capsys, monkeypatch, host, warned):
    import optuna_dashboard

    seen = {}

    def interrupted(storage, host, port):
        seen.update(host=host, port=port, studies=[s.study_name for s in storage.get_all_studies()])
        raise KeyboardInterrupt

    monkeypatch.setattr(optuna_dashboard, "run_server", interrupted)
    folder = make_experiment(tmp_path / "exp")
    assert main(["dashboard", str(folder), "--host", host, "--port", "8123"]) == 0
    assert seen == {"host": host, "port": 8123, "studies": [STUDY]}
    out = capsys.readouterr().out
    assert out.startswith("warning: --host 0.0.0.0 exposes") == warned
    assert "(study 'dash-test', 3 trials" in out and "ssh -L 8123:127.0.0.1:8123 user@" in out


def test_is_loopback():
    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.5"]))
