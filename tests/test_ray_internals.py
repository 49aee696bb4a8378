"""Ray's private layout, behind one seam (boosttune/ray_internals.py): this Ray has all of it, or the test names
what moved and the Ray version; no other module reaches into Ray's internals."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_this_ray_has_every_internal_boosttune_uses():
    from boosttune.ray_internals import unknown_layout

    missing = unknown_layout()
    assert not missing, ("Ray's private layout changed; update boosttune/ray_internals.py (and the pin in "
                         "pyproject.toml) for: " + "; ".join(missing))


def test_a_moved_internal_is_named_with_the_ray_version(monkeypatch):
    from boosttune import ray_internals

    def moved():
        raise ImportError("No module named 'ray._private.accelerators'")

    monkeypatch.setitem(ray_internals._USES, "ray._private.accelerators.get_accelerator_manager_for_resource", moved)
    import ray

    assert ray_internals.unknown_layout() == [
        f"ray._private.accelerators.get_accelerator_manager_for_resource (Ray {ray.__version__}; written for "
        f"{ray_internals.TESTED_RAY}: ImportError)"]


def test_the_installed_ray_is_the_one_the_seam_was_written_for():
    import ray

    from boosttune.ray_internals import TESTED_RAY

    pinned = re.search(r'"ray\[[^\]]*\]==([\d.]+)"|"ray==([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned, "pyproject.toml pins Ray"
    assert TESTED_RAY == (pinned.group(1) or pinned.group(2)) == ray.__version__


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "boosttune").rglob("*.py") if p.name != "ray_internals.py"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_other_module_imports_rays_internals(path):
    private = re.findall(r"^\s*(?:from|import) (ray[\w.]*\._(?:private|internal)\b[\w.]*|ray\.util\.state\b[\w.]*)",
                         path.read_text(), re.M)  # ray.util.state: a DeveloperAPI
    assert not private, f"{path.relative_to(ROOT)}: go through boosttune/ray_internals.py for {private}"


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "boosttune").rglob("*.py") if p.name != "ray_internals.py"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_other_module_touches_a_searchers_private_attributes(path):
    """The attributes of Ray Tune's searchers that boosttune reads or sets are named in the seam alone."""
    from boosttune.ray_internals import SEARCHER_PRIVATE

    touched = sorted({name for name in SEARCHER_PRIVATE
                      if re.search(rf"\.{name}\b", path.read_text())})
    assert not touched, f"{path.relative_to(ROOT)}: go through boosttune/ray_internals.py for {touched}"


def test_the_seam_reads_an_optuna_searchs_state_and_hands_a_wrapper_its_metric():
    from ray.tune.search.optuna import OptunaSearch

    from boosttune.ray_internals import adopt_search_properties, optuna_study, optuna_told, optuna_trial

    searcher = OptunaSearch(metric="speed", mode="max")
    assert optuna_trial(searcher, "t1") is None and not optuna_told(searcher, "t1") and optuna_study(searcher) is None

    class Wrapper:
        pass

    wrapper = Wrapper()
    adopt_search_properties(wrapper, searcher)
    assert (wrapper._metric, wrapper._mode) == ("speed", "max")
