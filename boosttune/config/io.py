"""Safe loading of JSON and YAML files into plain Python values."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from boosttune.errors import ConfigError

__all__ = ["load_document", "load_yaml_text", "split_boost_document"]


class _SafeLoader(yaml.SafeLoader):
    """yaml.SafeLoader that also reads YAML 1.2 floats such as ``1e-3`` (PyYAML reads a string) and refuses a
    key given twice in one mapping (PyYAML keeps the last silently; YAML 1.2 forbids it)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` may override: that is its job
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.setdefault(key, key_node.start_mark.line + 1)
                except TypeError:  # an unhashable key: SafeConstructor reports it
                    continue
                if seen != key_node.start_mark.line + 1:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (first at line {seen}; YAML allows a key once per mapping)",
                        key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


_SafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_yaml_text(text: str):
    """Safe YAML loading: no Python objects, tags or code."""
    return yaml.load(text, Loader=_SafeLoader)  # noqa: S506 - _SafeLoader derives from SafeLoader

_YAML_SUFFIXES = {".yaml", ".yml"}


def load_document(path: str | Path) -> Any:
    """Load a JSON or YAML file (by suffix; anything else is tried as JSON, then YAML).

    YAML is read with ``yaml.safe_load``: no Python objects, tags or code. An empty file (or one of comments
    only) is refused: it would otherwise stand for "all defaults" without saying so.
    """
    document = _load_document(Path(path))
    if document is None:
        raise ConfigError(f"{path}: the file is empty (or holds only comments); write its fields, or leave the file "
                          "out to use the defaults")
    return document


def _load_document(path: Path) -> Any:
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not a UTF-8 text file (byte {e.start}: {e.reason})") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None
    if path.suffix.lower() in _YAML_SUFFIXES:
        return _load_yaml(path, text)
    try:
        return json.loads(text, object_pairs_hook=_unique_keys(path))
    except json.JSONDecodeError as e:
        if path.suffix.lower() == ".json":
            raise ConfigError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        return _load_yaml(path, text)


def _unique_keys(path: Path):
    """A JSON object hook that refuses a key given twice (json keeps the last silently)."""

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        document: dict[str, Any] = {}
        for key, value in pairs:
            if key in document:
                raise ConfigError(f"{path}: invalid JSON: duplicate key {key!r} in one object")
            document[key] = value
        return document

    return hook


def _load_yaml(path: Path, text: str) -> Any:
    try:
        return load_yaml_text(text)
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
