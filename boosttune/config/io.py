"""Safe loading of JSON and YAML files into plain Python values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from boosttune.errors import ConfigError

__all__ = ["load_document", "split_boost_document"]

_YAML_SUFFIXES = {".yaml", ".yml"}


def load_document(path: str | Path) -> Any:
    """Load a JSON or YAML file (by suffix; anything else is tried as JSON, then YAML).

    YAML is read with ``yaml.safe_load``: no Python objects, tags or code.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in _YAML_SUFFIXES:
        return _load_yaml(path, text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if path.suffix.lower() == ".json":
            raise ConfigError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        return _load_yaml(path, text)


def _load_yaml(path: Path, text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ConfigError(f"{path}{where}: invalid YAML: {problem}") from None


def split_boost_document(document: Any, default_level: str | None) -> tuple[Any, str]:
    """Accept either a bare boost_config_dict or ``{boost_level, boost_config_dict}``.

    The second form is what ``Model(..., boost_level=..., boost_config_dict=...)`` takes and what
    boosttune exports; a bare dict takes its level from ``default_level`` (O0 when None).
    """
    if isinstance(document, dict) and ("boost_level" in document or "boost_config_dict" in document):
        extra = sorted(set(document) - {"boost_level", "boost_config_dict"})
        if extra:
            raise ConfigError(
                f"{extra[0]}: unknown key next to boost_level/boost_config_dict; "
                "allowed: boost_level, boost_config_dict"
            )
        level = document.get("boost_level", default_level or "O0")
        if default_level is not None and default_level != level:
            raise ConfigError(f"boost_level: the file says {level!r} but --level says {default_level!r}")
        return document.get("boost_config_dict", {}), level
    return document, default_level or "O0"
