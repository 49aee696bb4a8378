"""Loading JSON/YAML documents safely and splitting ``{boost_level, boost_config_dict}`` files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from boosttune.config.boost import parse_boost_config
from boosttune.config.io import load_document, split_boost_document
from boosttune.errors import ConfigError

DOC = {
    "boost": {"mode": "manual", "less_bn": True, "grad_freeze": False},
    "common": {"gradient_split_groups": [2, 4], "device_number": 1},
    "less_bn": {"gc_flag": False},
}

DOC_YAML = """\
# a boost config as YAML
boost:
  mode: manual
  less_bn: true
  grad_freeze: false
common:
  gradient_split_groups: [2, 4]
  device_number: 1
less_bn:
  gc_flag: false
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _one_line(error: pytest.ExceptionInfo) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    return message


# --- loading --------------------------------------------------------------------------------


def test_load_json(tmp_path):
    path = _write(tmp_path / "boost.json", json.dumps(DOC, indent=2))
    assert load_document(path) == DOC
    assert load_document(str(path)) == DOC


@pytest.mark.parametrize("name", ["boost.yaml", "boost.yml", "BOOST.YAML", "boost.Yml"])
def test_load_yaml_by_suffix(tmp_path, name):
    assert load_document(_write(tmp_path / name, DOC_YAML)) == DOC


@pytest.mark.parametrize("text", [json.dumps(DOC), DOC_YAML], ids=["json", "yaml"])
@pytest.mark.parametrize("name", ["boostconfig", "boost.txt", "boost.conf"])
def test_load_other_suffix_tries_json_then_yaml(tmp_path, name, text):
    assert load_document(_write(tmp_path / name, text)) == DOC


def test_json_content_in_yaml_file(tmp_path):
    # JSON is (almost) YAML: a .yaml file holding JSON loads the same
    assert load_document(_write(tmp_path / "boost.yaml", json.dumps(DOC))) == DOC


def test_yaml_scalars_are_plain_python(tmp_path):
    doc = load_document(_write(tmp_path / "x.yaml", "a: 0.5\nb: 3\nc: false\nd: 'false'\ne: null\nf: [1, 2]\n"))
    assert doc == {"a": 0.5, "b": 3, "c": False, "d": "false", "e": None, "f": [1, 2]}
    assert type(doc["b"]) is int and type(doc["c"]) is bool


def test_empty_documents(tmp_path):
    for name, text in (("empty.yaml", ""), ("empty", ""), ("comments.yaml", "# only a comment\n")):
        path = _write(tmp_path / name, text)
        with pytest.raises(ConfigError) as info:  # not silently "all defaults"
            load_document(path)
        assert str(info.value).startswith(f"{path}: the file is empty (or holds only comments)")
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_document(_write(tmp_path / "empty.json", ""))


def test_invalid_json_names_path_and_line(tmp_path):
    path = _write(tmp_path / "bad.json", '{\n  "boost": {"mode": "manual",}\n}\n')
    with pytest.raises(ConfigError) as info:
        load_document(path)
    message = _one_line(info)
    assert message.startswith(f"{path}:2:")
    assert "invalid JSON" in message


def test_json_suffix_is_not_read_as_yaml(tmp_path):
    # YAML would accept this; a .json file must be JSON
    path = _write(tmp_path / "boost.json", "boost:\n  mode: manual\n")
    with pytest.raises(ConfigError, match=r"boost\.json:1:1: invalid JSON"):
        load_document(path)


@pytest.mark.parametrize("name", ["bad.yaml", "bad.yml", "bad"])
def test_invalid_yaml_names_path_and_line(tmp_path, name):
    path = _write(tmp_path / name, "boost:\n  mode: manual\n   less_bn: true\n")
    with pytest.raises(ConfigError) as info:
        load_document(path)
    message = _one_line(info)
    assert message.startswith(f"{path}:3:")
    assert "invalid YAML" in message


def test_unclosed_yaml_flow_sequence(tmp_path):
    path = _write(tmp_path / "bad.yaml", "common:\n  gradient_split_groups: [2, 4\n")
    with pytest.raises(ConfigError) as info:
        load_document(path)
    message = _one_line(info)
    assert message.startswith(str(path) + ":")
    assert "invalid YAML" in message


def test_missing_file(tmp_path):
    path = tmp_path / "nope.json"
    with pytest.raises(ConfigError) as info:
        load_document(path)
    assert _one_line(info) == f"{path}: no such file"


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_document(tmp_path)


@pytest.mark.parametrize("name", ["boost.json", "boost.yaml", "boost"])
def test_binary_file_is_a_config_error(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"\xff\xfe\x00b\x00o\x00o\x00s\x00t")
    with pytest.raises(ConfigError) as info:
        load_document(path)
    message = _one_line(info)
    assert message.startswith(f"{path}: ")
    assert "UTF-8" in message


@pytest.mark.parametrize("name", ["evil.yaml", "evil.yml", "evil"])
@pytest.mark.parametrize(
    "tag",
    [
        "!!python/object/apply:os.system",
        "!!python/object/apply:subprocess.call",
        "!!python/object/new:os.system",
    ],
)
def test_python_tags_are_rejected_and_not_executed(tmp_path, capfd, name, tag):
    marker = tmp_path / "executed"
    command = f"echo hi && touch {marker}" if "subprocess" not in tag else None
    argument = f'["{command}"]' if command else f'[["touch", "{marker}"]]'
    path = _write(tmp_path / name, f"boost: {tag} {argument}\n")

    with pytest.raises(ConfigError) as info:
        load_document(path)

    message = _one_line(info)
    assert message.startswith(f"{path}:1:")
    assert "invalid YAML" in message
    assert "could not determine a constructor" in message
    assert not marker.exists()
    assert "hi" not in capfd.readouterr().out


def test_echo_hi_sample_from_the_brief(tmp_path, capfd):
    path = _write(tmp_path / "boost.yaml", '!!python/object/apply:os.system ["echo hi"]\n')
    with pytest.raises(ConfigError, match="python/object/apply:os.system"):
        load_document(path)
    assert capfd.readouterr().out == ""


def test_yaml_file_end_to_end_with_parse(tmp_path):
    # an unquoted false is a boolean; a quoted one is the string MindSpore would read as true
    good = load_document(_write(tmp_path / "good.yaml", "boost:\n  mode: manual\n  grad_freeze: false\n"))
    assert parse_boost_config(good, "O1").effective().active == ("less_bn",)

    bad = load_document(_write(tmp_path / "bad.yaml", "boost:\n  mode: manual\n  grad_freeze: 'false'\n"))
    with pytest.raises(ConfigError, match=r"^boost\.grad_freeze: 'false' is invalid"):
        parse_boost_config(bad, "O1")


# --- split_boost_document -------------------------------------------------------------------


@pytest.mark.parametrize(("default", "level"), [(None, "O0"), ("O1", "O1"), ("O2", "O2")])
def test_split_bare_dict_takes_level_from_default(default, level):
    assert split_boost_document(DOC, default) == (DOC, level)


@pytest.mark.parametrize("default", [None, "O1"])
def test_split_wrapped_document(default):
    doc = {"boost_level": "O1", "boost_config_dict": DOC}
    assert split_boost_document(doc, default) == (DOC, "O1")


def test_split_wrapped_without_level_uses_default():
    assert split_boost_document({"boost_config_dict": DOC}, None) == (DOC, "O0")
    assert split_boost_document({"boost_config_dict": DOC}, "O2") == (DOC, "O2")


def test_split_wrapped_without_dict_is_empty():
    config, level = split_boost_document({"boost_level": "O2"}, None)
    assert (config, level) == ({}, "O2")
    assert parse_boost_config(config, level).effective().active == ("less_bn", "grad_freeze", "adasum")


def test_split_wrapped_null_dict_parses_as_empty():
    config, level = split_boost_document({"boost_level": "O1", "boost_config_dict": None}, None)
    assert config is None and level == "O1"
    assert parse_boost_config(config, level).effective().active == ("less_bn", "grad_freeze")


def test_split_unknown_key_next_to_boost_level():
    doc = {"boost_level": "O1", "boost": {"mode": "manual"}}
    with pytest.raises(ConfigError) as info:
        split_boost_document(doc, None)
    message = _one_line(info)
    assert message.startswith("boost: unknown key next to boost_level/boost_config_dict")
    assert "allowed: boost_level, boost_config_dict" in message


def test_split_unknown_key_next_to_boost_config_dict():
    with pytest.raises(ConfigError, match=r"^boost_levle: unknown key"):
        split_boost_document({"boost_levle": "O1", "boost_config_dict": {}}, None)


@pytest.mark.parametrize(("in_file", "flag"), [("O1", "O2"), ("O2", "O0"), ("O0", "O1")])
def test_split_conflicting_level(in_file, flag):
    with pytest.raises(ConfigError) as info:
        split_boost_document({"boost_level": in_file, "boost_config_dict": {}}, flag)
    assert _one_line(info) == f"boost_level: the file says {in_file!r} but --level says {flag!r}"


def test_split_leaves_level_validation_to_the_parser():
    config, level = split_boost_document({"boost_level": "O3", "boost_config_dict": {}}, None)
    with pytest.raises(ConfigError, match=r"^boost_level: 'O3' is not a boost level"):
        parse_boost_config(config, level)


def test_split_non_mapping_passes_through_to_the_parser():
    config, level = split_boost_document(["boost"], "O1")
    assert (config, level) == (["boost"], "O1")
    with pytest.raises(ConfigError, match="expected a mapping of sections, got list"):
        parse_boost_config(config, level)


def test_exported_document_round_trips(tmp_path):
    """What boosttune exports (level + canonical dict) loads and parses to the same config."""
    config = parse_boost_config(DOC, "O1")
    exported = {"boost_level": "O1", "boost_config_dict": config.to_boost_config_dict()}
    import yaml

    for path in (tmp_path / "export.json", tmp_path / "export.yaml"):
        text = json.dumps(exported) if path.suffix == ".json" else yaml.safe_dump(exported)
        loaded = load_document(_write(path, text))
        raw, level = split_boost_document(loaded, None)
        again = parse_boost_config(raw, level).effective()
        assert dict(again.applied) == dict(config.effective().applied)
        assert {k: dict(v) for k, v in again.settings.items()} == {
            k: dict(v) for k, v in config.effective().settings.items()
        }


def test_yaml_reads_exponent_floats_as_numbers(tmp_path):
    # PyYAML's YAML 1.1 resolver reads 1e-3 as a string; a learning rate written so must work.
    path = tmp_path / "r.yaml"
    path.write_text("learning_rate: 1e-3\nscale: 2E+4\nname: 1e\n")
    assert load_document(path) == {"learning_rate": 0.001, "scale": 20000.0, "name": "1e"}
