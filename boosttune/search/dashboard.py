"""``boosttune dashboard``: optuna-dashboard on an experiment folder's Optuna study.

An experiment folder's ``experiment.json`` names the study (``name``) and, when the search used one, its
storage URL; otherwise the study lives in the folder's ``optuna.db``, where ``boosttune tune`` put it.
Everything a user can get wrong (no such folder, no experiment, no study) is checked before serving and
reported as one :class:`~boosttune.errors.DataError` line.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import socket
from pathlib import Path
from typing import Any, Callable

from boosttune.errors import ConfigError, DataError

# SQLAlchemy, Optuna and optuna-dashboard are imported where used: heavy, and a bad folder is refused without them.

__all__ = ["is_loopback", "resolve_study", "serve"]

_DATABASES = ("sqlite", "postgresql", "mysql")


def _storage_of(experiment: dict[str, Any]) -> str | None:
    """The storage URL experiment.json records: ``study_storage``, or an older folder's ``storage``."""
    url = experiment.get("study_storage")
    if isinstance(url, str) and url:
        return url
    url = experiment.get("storage")
    if isinstance(url, str) and "://" in url and url.startswith(_DATABASES):
        return url
    return None


def _shown(url: str) -> str:
    """``url`` with its password masked, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL sqlalchemy reads: shown as written
        return url


def resolve_study(results_dir: str | Path) -> tuple[str, str]:
    """``(storage_url, study_name)`` of the experiment in ``results_dir``; a DataError line if it has none."""
    folder = Path(results_dir).resolve()
    if not folder.is_dir():
        raise DataError(f"{folder}: no such results folder")
    marker = folder / "experiment.json"
    if not marker.is_file():
        raise DataError(f"{folder}: no experiment.json here (expected the --output folder of boosttune tune "
                        "or experiments/*.py)")
    try:
        experiment = json.loads(marker.read_text())
    except (OSError, ValueError) as e:
        raise DataError(f"{marker}: not readable as JSON ({e})") from None
    name = experiment.get("name") if isinstance(experiment, dict) else None
    if not isinstance(name, str) or not name:
        raise DataError(f"{marker}: no study name (the 'name' field)")
    url = _storage_of(experiment)
    if url is None:
        database = folder / "optuna.db"
        if not database.is_file():
            raise DataError(f"{folder}: no optuna.db here (experiment.json names no other storage)")
        url = f"sqlite:///{database}"
    return url, name


def _open_study(url: str, name: str, folder: Path) -> tuple[Any, int]:
    """The storage at ``url`` and the number of trials of study ``name`` in it."""
    import optuna

    try:
        storage = optuna.storages.RDBStorage(url, skip_compatibility_check=True, skip_table_creation=True)
        names = [study.study_name for study in storage.get_all_studies()]
    except Exception as e:  # sqlalchemy raises many kinds for a bad URL or a database that is not Optuna's
        raise DataError(f"{folder}: storage {_shown(url)} is not a readable Optuna database "
                        f"({type(e).__name__})") from None
    if name not in names:
        there = f"studies there: {', '.join(sorted(names))}" if names else "it holds no study"
        raise DataError(f"{folder}: no study {name!r} in {_shown(url)} ({there})")
    return storage, len(storage.get_all_trials(storage.get_study_id_from_name(name), deepcopy=False))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) reaches this machine only: 127.0.0.0/8, ::1 or localhost."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def _url(host: str, port: int) -> str:
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(results_dir: str | Path, host: str = "127.0.0.1", port: int = 8080,
          log: Callable[[str], None] = print) -> None:
    """Serve optuna-dashboard on the experiment's study at ``host:port`` until Ctrl-C (then return)."""
    from optuna_dashboard import run_server

    folder = Path(results_dir).resolve()
    url, name = resolve_study(folder)
    storage, n_trials = _open_study(url, name, folder)
    local = is_loopback(host)
    if not local:
        log(f"warning: --host {host} exposes the dashboard, unauthenticated, to the network")
    log(f"dashboard: open {_url(host, port)} (study {name!r}, {n_trials} trial{'s' if n_trials != 1 else ''}, "
        f"in {_shown(url)}); Ctrl-C stops it")
    tunnel = "127.0.0.1" if local or host in ("0.0.0.0", "::") else host
    log(f"from a laptop: ssh -L {port}:{tunnel}:{port} user@{socket.gethostname()}, "
        f"then open http://127.0.0.1:{port}/")
    try:
        run_server(storage, host=host, port=port)
    except KeyboardInterrupt:
        pass
    except OSError as e:
        if e.errno in (errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES) or isinstance(e, socket.gaierror):
            raise ConfigError(f"--host {host} --port {port}: cannot listen there ({e.strerror or e})") from None
        raise
