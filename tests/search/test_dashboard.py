"""``boosttune dashboard``: which study a results folder names, its one-line errors, and a real served dashboard.

:func:`tests.helpers.dashboard.check_dashboard` runs the real command on a free port and reads the study back over
optuna-dashboard's JSON API; the end-to-end search (tests/search/test_tune.py) calls it on a real experiment folder.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import optuna
import pytest

from boosttune.cli.main import main
from boosttune.config.experiment import parse_experiment
from boosttune.files import claim_folder
from boosttune.search.dashboard import is_loopback, resolve_study
from tests.helpers.dashboard import check_dashboard

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
