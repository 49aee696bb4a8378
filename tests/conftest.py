"""The fixtures the test packages share, and the set-up that tests which train or start Ray need.

Nothing heavy happens at import: a session of pure-logic tests (``pytest tests/stats/test_paired.py``) runs no
probe and imports neither Ray nor MindSpore. The capability probe (run in child processes, cached per device, CPU and
MindSpore version) runs once, at the first of:

- MindSpore's first import in this process, so that the probe's ``ONEDNN_MAX_CPU_ISA`` is in force when oneDNN loads
  (a test module that imports MindSpore at its top triggers it while being collected);
- the set-up of a test marked ``slow`` (a test marked ``ray`` also gets Ray Train's local settings first, as
  ``connect_ray`` would apply them, since the Ray it starts passes them on to its workers);
- a test that asks for ``probe_report``.
"""

from __future__ import annotations

import atexit
import importlib.abc
import os
import shutil
import sys
import tempfile

import pytest

from tests.helpers.example_project import prepare_example
from tests.helpers.isolation import private_ray_temp, set_niceness
from tests.helpers.probe import FIRST, probe_once
from tests.helpers.records import RAY_VERSION, sample_records

os.environ.setdefault("GLOG_v", "3")  # MindSpore's C++ warnings drown pytest's output
# boosttune's cache (probe reports, speed calibrations, converted data) is the session's own, never the user's
# ~/.cache/boosttune: a session starts cold, so what it measures and how long it takes do not depend on earlier runs.
# The processes the tests start (the CLI, Ray and its workers) inherit it. A cache named in the environment is kept.
if "BOOSTTUNE_CACHE_DIR" not in os.environ:
    os.environ["BOOSTTUNE_CACHE_DIR"] = tempfile.mkdtemp(prefix="boosttune-test-cache-")
    atexit.register(shutil.rmtree, os.environ["BOOSTTUNE_CACHE_DIR"], ignore_errors=True)
private_ray_temp()  # no test joins a Ray another worker or session runs (tests/helpers/isolation.py)
# The boost_config_dict checks tests/config and tests/algorithms share: pytest's detailed assert messages there too.
pytest.register_assert_rewrite("tests.helpers.boost_cases")

class _ProbeBeforeMindSpore(importlib.abc.MetaPathFinder):
    """Runs the probe when MindSpore is first imported, then leaves the import to the usual finders."""

    def find_spec(self, name, path=None, target=None):
        if name == "mindspore":
            sys.meta_path.remove(self)
            probe_once()
        return None


if "mindspore" not in sys.modules:
    sys.meta_path.insert(0, _ProbeBeforeMindSpore())


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own, which names the group in each test's id
def pytest_collection_modifyitems(items):
    """Under ``pytest -n``: the tests that start Ray run one after another on one worker (two at once are too much
    for two cores: docs/layout.md#running-the-tests), while the other workers take the rest, ``FIRST``
    (tests/helpers/probe.py) first."""
    for item in items:
        if item.get_closest_marker("ray"):
            item.add_marker(pytest.mark.xdist_group("ray"))
    items.sort(key=lambda item: item.nodeid not in FIRST)  # stable: the rest keep their order


def pytest_configure(config):
    """Refuses, in one line, the pytest and pytest-xdist known to lose the group (see pytest_collection_finish)."""
    from importlib.metadata import version

    from packaging.version import Version

    if (config.getoption("dist", "no") == "loadgroup" and Version(version("pytest")) >= Version("9.2")
            and Version(version("pytest-xdist")) < Version("3.9")):
        raise pytest.UsageError(f"pytest {version('pytest')} with pytest-xdist {version('pytest-xdist')} runs the "
                                "tests that start Ray on two workers at once: pip install -e '.[dev]' (pytest<9.2)")


def pytest_collection_finish(session):
    """Refuses a pytest-xdist that left the Ray tests ungrouped (pytest 9.2 ignores the group xdist 3.8 writes into
    a test's id)."""
    if getattr(session.config.option, "loadgroup", False):  # set in a pytest-xdist worker under --dist loadgroup
        loose = [item.nodeid for item in session.items if item.get_closest_marker("ray") and "@" not in item.nodeid]
        if loose:
            raise pytest.UsageError(f"pytest-xdist did not group the tests that start Ray ({loose[0]} ...): "
                                    "install the versions pyproject.toml's dev extra pins")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if os.environ.get("PYTEST_XDIST_WORKER") and os.geteuid() == 0:  # below Ray's workers, unless it starts Ray
        set_niceness(0 if item.get_closest_marker("ray") else 19)
    if item.get_closest_marker("slow"):
        probe_once()
    if item.get_closest_marker("ray"):
        from boosttune.execution.ray import local_train_defaults

        local_train_defaults()  # the tests start local Ray (and `ray start` clusters) themselves


@pytest.fixture(scope="session")
def probe_report():
    return probe_once()


@pytest.fixture(scope="module")
def local_ray(probe_report):
    """A local Ray instance for the module, two CPUs, no dashboard; yields the probe's runtime settings."""
    import ray

    from boosttune.execution.ray import local_train_defaults

    local_train_defaults()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield probe_report.runtime_env
    ray.shutdown()


@pytest.fixture(scope="session")
def custom_example(tmp_path_factory):
    """experiments/custom with its data prepared (``python prepare.py``, a MindSpore import), once a session: the
    tests that tune, calibrate or submit the team's project each copy it (tests.helpers.example_project)."""
    return prepare_example(tmp_path_factory.mktemp("custom-example"))


@pytest.fixture(scope="module")
def digits():
    """The default recipe's data set (scikit-learn's digits) at 32x32, split as trials split it."""
    from boosttune.builtin.data import load_dataset
    from boosttune.config.recipe import parse_recipe

    return load_dataset(parse_recipe({}).data, 32)


@pytest.fixture
def autoboost():
    """mindspore.boost.AutoBoost with its process-wide state reset before and after the test (the boost_config_dict
    checks of tests.helpers.boost_cases build it)."""
    from mindspore.boost import AutoBoost

    from boosttune.algorithms.mindspore_state import reset_boost_state

    reset_boost_state()
    yield AutoBoost
    reset_boost_state()


@pytest.fixture
def records():
    """:func:`tests.helpers.records.sample_records`: baseline, preset, searched and failed trials."""
    return sample_records()


@pytest.fixture
def table(records):
    """The results table of :func:`records`."""
    from boosttune.tables.results import build_results_table

    return build_results_table(records, ray_version=RAY_VERSION)


@pytest.fixture
def search():
    """The sample records' results table with start times and learning curves, as the search writes them: each
    epoch's time is its samples over the trial's throughput, compile aside, so a trial's speed-up per job is its
    speed-up per step (1.4x is 1.4x on both scales)."""
    from boosttune.tables.results import build_results_table

    records = sample_records()
    for index, record in enumerate(records):
        record["started"] = 1_700_000_000.0 + 30 * index
        record["label"] = record["preset"] or record["trial_id"]
        acc, sps = record["metrics"].get("objective_value"), record["metrics"].get("throughput_sps")
        if acc is not None:
            record["metrics"]["compile_s"] = 0.0
            epoch_s = 2000.0 / sps
            record["curve"] = [{"epoch": 1, "train_s": epoch_s, "objective_value": acc - 0.1},
                               {"epoch": 2, "train_s": 2 * epoch_s, "objective_value": acc}]
    return build_results_table(records, ray_version=RAY_VERSION)


@pytest.fixture(scope="module")
def confirmed_dir(tmp_path_factory):
    """The folder of a confirm stage of O0, the O1 preset and a GradientFreeze start point over five paired seeds,
    trained by :func:`tests.helpers.paired_runs.fake_train` (its runs in runs/, its decision at 1 pt)."""
    from boosttune.execution.runs import RecordStore
    from boosttune.objective import ACCURACY
    from boosttune.outputs.summary import save_confirmed
    from boosttune.stages.rounds import Candidate, run_paired
    from boosttune.stats.margin import Margin
    from tests.helpers.paired_runs import GF, O1, RECIPE, fake_train

    folder = tmp_path_factory.mktemp("confirmed")
    candidates = [Candidate("O0", RECIPE, "baseline", "O0"), Candidate("O1-equivalent", O1, "preset", "O1-equivalent"),
                  Candidate("grad_freeze p=0.5", GF, "start point")]
    records = run_paired(candidates, [1, 2, 3, 4, 5], store=RecordStore(folder / "runs"), role="confirm",
                         train=fake_train, log=lambda m: None)
    save_confirmed(records, folder, margin=Margin(ACCURACY, 1.0))
    return folder


@pytest.fixture(scope="module")
def confirmed(confirmed_dir):
    """That confirm stage's decision, read back from its folder."""
    from boosttune.outputs.summary import load_confirmed

    return load_confirmed(confirmed_dir)
