"""Bad input is refused before anything starts: a corpus of malformed inputs on every surface.

Each case runs a real command line (the experiment script's and ``boosttune``'s), in this process, on
real files: data folders that are missing, empty, garbage or truncated, a damaged image, output paths
of the wrong kind, folders that hold another run or files boosttune did not write, broken YAML and
JSON, recipes and boost configs MindSpore would crash on. Every one must end with exit code 2 and one
line on stderr that names what is wrong, with no traceback, without starting Ray, and with nothing
written, created or changed on disk.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import ray

from boosttune.cli import main as cli
from boosttune.cli import search as search_cli
from tests.helpers import REPO



def _idx(path: Path, array_shape: tuple[int, ...], *, payload: bytes | None = None) -> None:
    """An MNIST-style IDX file of unsigned bytes (gzip), with the payload its header promises unless given."""
    header = bytes([0, 0, 0x08, len(array_shape)]) + b"".join(n.to_bytes(4, "big") for n in array_shape)
    size = 1
    for n in array_shape:
        size *= n
    body = payload if payload is not None else bytes(i % 10 for i in range(size))
    with gzip.open(path, "wb") as f:
        f.write(header + body)


def _idx_folder(folder: Path, *, truncate: bool = False) -> Path:
    folder.mkdir()
    for prefix, n in (("train", 40), ("t10k", 10)):
        images = folder / f"{prefix}-images-idx3-ubyte.gz"
        _idx(images, (n, 28, 28), payload=bytes(n * 28 * 28 - (100 if truncate else 0)))
        _idx(folder / f"{prefix}-labels-idx1-ubyte.gz", (n,))
    return folder


def _image_folder(folder: Path) -> Path:
    from PIL import Image

    for label in ("cat", "dog"):
        (folder / label).mkdir(parents=True)
        for i in range(4):
            Image.new("RGB", (12, 12), (40 * i, 80, 120)).save(folder / label / f"{i}.png")
    (folder / "dog" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)  # a PNG cut short
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    """The files every case points at; built once, checked unchanged after every case."""
    root = tmp_path_factory.mktemp("corpus")
    files: dict[str, Path] = {"root": root}
    files["empty_dir"] = root / "empty"
    files["empty_dir"].mkdir()
    files["garbage_idx"] = root / "garbage-idx"
    files["garbage_idx"].mkdir()
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        (files["garbage_idx"] / name).write_bytes(b"this is not an IDX file at all\n" * 8)
    files["truncated_idx"] = _idx_folder(root / "truncated-idx", truncate=True)
    files["small_idx"] = _idx_folder(root / "small-idx")
    files["gz_cut"] = root / "gz-cut"
    files["gz_cut"].mkdir()
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        _idx(files["gz_cut"] / f"{name}.gz", (10, 28, 28) if "images" in name else (10,))
        data = (files["gz_cut"] / f"{name}.gz").read_bytes()
        (files["gz_cut"] / f"{name}.gz").write_bytes(data[: len(data) // 2])  # a download cut in half
    files["images"] = _image_folder(root / "images")
    files["a_file"] = root / "a-file.txt"
    files["a_file"].write_text("not a folder\n")
    files["foreign"] = root / "foreign"
    files["foreign"].mkdir()
    (files["foreign"] / "results.parquet").write_bytes(b"somebody else's results")
    (files["foreign"] / "best_recipe.json").write_text("{}")
    files["bench_dir"] = root / "bench-out"
    files["bench_dir"].mkdir()
    (files["bench_dir"] / "bench.json").write_text(json.dumps({"name": "other"}))
    files["started"] = root / "started"
    (files["started"] / "trials").mkdir(parents=True)
    (files["started"] / "experiment.json").write_text(json.dumps({"name": "resnet8-search"}))
    (files["started"] / "trials" / "baseline.json").write_text(json.dumps({"run_id": "baseline"}))
    files["corrupt_results"] = root / "corrupt-results"
    files["corrupt_results"].mkdir()
    (files["corrupt_results"] / "experiment.json").write_text(json.dumps({"name": "x"}))
    (files["corrupt_results"] / "results.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    files["empty_results"] = root / "empty-results"
    files["empty_results"].mkdir()
    (files["empty_results"] / "experiment.json").write_text(json.dumps({"name": "x"}))
    from boosttune.tables.results import build_results_table, save_results

    files["other_schema"] = root / "other-schema"  # a real parquet table, of somebody else's columns
    files["other_schema"].mkdir()
    (files["other_schema"] / "experiment.json").write_text(json.dumps({"name": "x"}))
    import pandas as pd

    pd.DataFrame({"run": ["a"], "accuracy": [0.9]}).to_parquet(files["other_schema"] / "results.parquet")

    save_results(build_results_table([], ray_version=ray.__version__), files["empty_results"])
    files["one_run"] = root / "one-run"  # a results table with its baseline: report and export work on it
    files["one_run"].mkdir()
    (files["one_run"] / "experiment.json").write_text(json.dumps({"name": "x"}))
    save_results(build_results_table([{"trial_id": "b", "preset": "O0", "status": "completed",
                                       "metrics": {"throughput_sps": 100.0, "objective_value": 0.8}}], ray_version=ray.__version__),
                 files["one_run"])
    docs = {
        "dup.yaml": "name: x\nnum_trials: 4\nnum_trials: 8\n",
        "bad.yaml": "name: x\nbase: {model: resnet8\n",
        "list.yaml": "- name: x\n",
        "typo.yaml": "name: x\nnum_trails: 4\n",
        "tag.yaml": "name: !!python/object/apply:os.system ['echo pwned']\n",
        "latin1.yaml": None,
        "dup.json": '{"boost": {"mode": "manual"}, "boost": {"mode": "auto"}}',
        "o1_crash.json": json.dumps({"boost": {"mode": "manual", "grad_accumulation": True},
                                     "grad_accumulation": {"grad_accumulation_step": 4}}),
        "o1_freeze.json": json.dumps({"grad_freeze": {"freeze_type": 0, "freeze_p": 1.0}}),
        "string_bool.json": json.dumps({"boost": {"mode": "manual", "less_bn": "false"}}),
        "unknown_section.json": json.dumps({"less_bm": {"fn_flag": True}}),
        "recipe_list.yaml": "- model: lenet5\n",
        "bench_typo.yaml": "name: b\nseeds: [0, 1]\nrecipes: {x: {boost_levle: O1}}\n",
        "bench.yaml": "name: b\nseeds: [0, 1]\nbase: {model: lenet5, epochs: 1}\n",
        "not_best.json": json.dumps({"model": "lenet5"}),
        "bad_storage.yaml": "name: x\nstorage: nosuchscheme://bucket/runs\n",
        "huge_workers.yaml": "name: x\nworkers_per_trial: 4096\n",
        "empty.yaml": "# nothing but a comment\n",
        "entry_bad.yaml": "name: x\nbase: {model: {entry: 'my model.py'}}\n",
        "entry_data.yaml": "name: x\nbase: {model: {entry: 'team.model:build'}, data: {name: digits}}\n",
        "entry.yaml": "name: x\nbase: {model: {entry: 'team.model:build', kwargs: {hidden: 8}}}\n",
    }
    for name, text in docs.items():
        path = files[name.replace(".", "_")] = root / name
        if text is None:
            path.write_bytes("name: caf\xe9\n".encode("latin-1"))
        else:
            path.write_text(text)
    return files


# (id, command line, a fragment the one-line error must hold). "exp" is experiments/resnet.py; "bt" is boosttune.
# {name} is a corpus path; {new} a path inside the corpus that does not exist.
CASES = [
    # experiment flags
    ("abbreviated-flag", "exp --epoch 3", "unrecognized arguments: --epoch"),
    ("unknown-flag", "exp --trails 3", "unrecognized arguments: --trails"),
    ("epochs-zero", "exp --epochs 0", "epochs"),
    ("epochs-not-int", "exp --epochs three", "argument --epochs: invalid int value"),
    ("workers-zero", "exp --workers 0", "workers_per_trial"),
    ("trials-zero", "exp --trials 0", "num_trials"),
    ("batch-zero", "exp --batch-size 0", "batch_size"),
    ("max-drop-negative", "exp --max-drop -1", "max_drop: -1.0 is invalid"),
    ("max-drop-nan", "exp --max-drop nan", "max_drop: nan is invalid"),
    ("learning-rate-zero", "exp --learning-rate 0", "learning_rate"),
    ("sampler-unknown", "exp --sampler bayes", "argument --sampler: invalid choice: 'bayes'"),
    ("model-unknown", "exp --model resnet9", "argument --model: invalid choice"),
    ("device-unknown", "exp --device TPU", "argument --device: invalid choice"),
    ("search-unknown", "exp --search less_bn,warp_drive", "warp_drive"),
    ("image-size-tiny", "exp --image-size 4", "image_size"),
    ("failure-rate-above-1", "exp --max-failure-rate 2", "max_failure_rate"),
    ("concurrency-zero", "exp --concurrency 0", "max_concurrent_trials"),
    ("confirm-one-seed", "exp --confirm-seeds 1", "confirm_seeds"),
    ("confirm-budget-one-run", "exp --confirm-budget-runs 1", "confirm_budget_runs"),
    ("confirm-budget-no-minutes", "exp --confirm-budget-minutes 0", "confirm_budget_minutes"),
    ("confirm-mode-unknown", "exp --confirm-mode sprint", "argument --confirm-mode: invalid choice: 'sprint'"),
    ("time-budget-negative", "exp --time-budget -5", "time_budget_s"),
    ("resume-without-output", "exp --resume", "--resume needs --output"),
    # data
    ("data-path-ignored", "exp --data digits --data-path {empty_dir}", "--data-path: given with --data digits"),
    ("data-path-auto", "exp --data-path {small_idx}", "--data-path: given with --data auto"),
    ("data-path-missing", "exp --data imagefolder", "needs data.path"),
    ("data-folder-absent", "exp --data mnist_idx --data-path {new}", "no such folder"),
    ("data-folder-empty", "exp --data mnist_idx --data-path {empty_dir}", "missing train-images-idx3-ubyte"),
    ("data-garbage", "exp --data mnist_idx --data-path {garbage_idx}", "bad magic number"),
    ("data-truncated", "exp --data mnist_idx --data-path {truncated_idx}", "but the file holds"),
    ("data-gzip-cut", "exp --data mnist_idx --data-path {gz_cut}", "unreadable IDX file"),
    ("data-image-damaged", "exp --data imagefolder --data-path {images} --batch-size 2", "broken.png: unreadable image"),
    ("data-batch-too-big", "exp --data mnist_idx --data-path {small_idx} --batch-size 64",
     "batch_size: 64 is larger than the 40 training samples"),
    # output folders
    ("output-is-file", "exp --output {a_file}", "is a file, not a folder"),
    ("output-under-file", "exp --output {a_file}/run", "is a file, so the folder"),
    ("output-foreign", "exp --output {foreign}", "holds files boosttune did not write"),
    ("output-holds-bench", "exp --output {bench_dir}", "holds boosttune's bench.json"),
    ("output-holds-run", "exp --output {started}", "holds an earlier experiment with other settings"),
    ("resume-other-config", "exp --resume --output {started}", "different configuration"),
    ("resume-nothing", "exp --resume --output {empty_dir}", "holds no experiment to resume"),
    # cluster resources and storage
    ("workers-beyond-machine", "exp --workers 4096", "cannot be placed"),
    ("storage-bad-scheme", "bt tune {bad_storage_yaml}", "storage: "),
    # experiment files and --set
    ("tune-file-missing", "bt tune {new}", "no such file"),
    ("tune-duplicate-key", "bt tune {dup_yaml}", "duplicate key 'num_trials'"),
    ("tune-broken-yaml", "bt tune {bad_yaml}", "invalid YAML"),
    ("tune-list", "bt tune {list_yaml}", "expected a mapping of experiment fields"),
    ("tune-typo", "bt tune {typo_yaml}", "num_trails: unknown key"),
    ("tune-python-tag", "bt tune {tag_yaml}", "invalid YAML"),
    ("tune-not-utf8", "bt tune {latin1_yaml}", "not a UTF-8 text file"),
    ("tune-workers-beyond-machine", "bt tune {huge_workers_yaml}", "cannot be placed"),
    ("set-without-equals", "bt tune {typo_yaml} --set num_trials", "--set: 'num_trials' is invalid"),
    ("set-through-scalar", "bt tune {bad_storage_yaml} --set name.x=1", "--set: name.x cannot be set"),
    # boost configs
    ("validate-o1-crash", "bt validate {o1_crash_json}", "at boost_level O1"),
    ("validate-freeze-p", "bt validate {o1_freeze_json}", "grad_freeze.freeze_p"),
    ("validate-string-bool", "bt validate {string_bool_json}", "boost.less_bn"),
    ("validate-unknown-section", "bt validate {unknown_section_json}", "did you mean less_bn"),
    ("validate-duplicate-json", "bt validate {dup_json}", "duplicate key 'boost'"),
    ("validate-level", "bt validate {o1_crash_json} --level O3", "argument --level: invalid choice"),
    # recipes and trials
    ("trial-output-exists", "bt trial --output {a_file}", "exists; boosttune never writes over a file"),
    ("trial-output-folder", "bt trial --output {empty_dir}", "is a folder; allowed: the path of a new file"),
    ("trial-recipe-list", "bt trial {recipe_list_yaml}", "expected a mapping of recipe fields"),
    ("trial-level", "bt trial --set boost_level=O4", "boost_level"),
    ("trial-cifar-no-path", "bt trial --set data.name=cifar10", "needs data.path"),
    ("trial-digits-path", "bt trial --set data.path={empty_dir}", "reads no folder"),
    ("trial-data-garbage", "bt trial --set data.name=mnist_idx --set data.path={garbage_idx}", "bad magic number"),
    ("trial-empty-file", "bt trial {empty_yaml}", "the file is empty (or holds only comments)"),
    ("tune-empty-file", "bt tune {empty_yaml}", "the file is empty (or holds only comments)"),
    # a team's own builder (base.model: {entry, kwargs})
    ("tune-entry-not-module-function", "bt tune {entry_bad_yaml}", "base.model.entry: 'my model.py' is invalid"),
    ("tune-entry-with-data", "bt tune {entry_data_yaml}", "reads its own data"),
    ("tune-entry-working-dir-missing", "bt tune {entry_yaml} --set working_dir={new}", "working_dir: "),
    ("tune-entry-module-missing", "bt tune {entry_yaml} --set py_modules=[{new}]", "py_modules: "),
    # benches
    ("bench-seeds-garbage", "bt bench {bench_yaml} --output {new} --seed-list 1,a", "--seed-list: '1,a' is invalid"),
    ("bench-seeds-repeated", "bt bench {bench_yaml} --output {new} --seed-list 1,1", "seeds"),
    ("bench-recipe-typo", "bt bench {bench_typo_yaml} --output {new}", "boost_levle"),
    ("bench-output-foreign", "bt bench {bench_yaml} --output {foreign}", "holds files boosttune did not write"),
    ("bench-not-best-recipe", "bt bench {bench_yaml} --output {new} --recipe {not_best_json}", "best_recipe.json"),
    ("bench-abbreviated", "bt bench {bench_yaml} --out {new}", "required: --output"),
    # results, reports, exports, dashboards
    ("export-nothing", "bt export {empty_dir}", "no results.parquet"),
    ("export-corrupt", "bt export {corrupt_results}", "cannot read the results table"),
    ("export-empty", "bt export {empty_results}", "no finished O0 baseline"),
    ("export-other-schema", "bt export {other_schema}", "not a boosttune results table of any schema version"),
    ("report-other-schema", "bt report {other_schema}", "not a boosttune results table of any schema version"),
    ("report-corrupt", "bt report {corrupt_results}", "cannot read the results table"),
    ("report-empty", "bt report {empty_results}", "holds no trials"),
    ("report-output-foreign", "bt report {one_run} --output {foreign}", "holds files boosttune did not write"),
    ("report-output-file", "bt report {one_run} --output {a_file}", "is a file, not a folder"),
    ("export-output-foreign", "bt export {one_run} --output {foreign}", "holds files boosttune did not write"),
    ("dashboard-not-experiment", "bt dashboard {empty_dir}", "no experiment.json"),
    ("dashboard-port", "bt dashboard {started} --port 99999", "is not a port"),
    ("unknown-command", "bt tuen x.yaml", "invalid choice: 'tuen'"),
]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _run(argv: list[str]) -> int:
    try:
        if argv[0] == "exp":
            return search_cli.run("resnet8", "test", argv[1:])
        return cli.main(argv[1:])
    except SystemExit as e:  # argparse's exit
        return int(e.code)


@pytest.fixture
def no_ray(monkeypatch):
    """Fail the case if it reaches Ray: nothing may start before the input is known to be good."""
    import boosttune.execution.ray
    import boosttune.execution.start

    def started(*args, **kwargs):
        raise AssertionError("Ray was started before the input was refused")

    monkeypatch.setattr(ray, "init", started)
    monkeypatch.setattr(boosttune.execution.ray, "connect_ray", started)
    monkeypatch.setattr(boosttune.execution.start, "connect_ray", started)


# Refused by the preflight, which checks the parts in a fresh process that loads MindSpore (seconds each): slow.
PREFLIGHT = {"data-folder-absent", "data-folder-empty", "data-garbage", "data-truncated", "data-gzip-cut",
             "data-image-damaged", "data-batch-too-big", "storage-bad-scheme", "tune-entry-module-missing",
             "tune-entry-working-dir-missing"}


def test_the_corpus_is_large_and_its_ids_unique():
    assert len(CASES) >= 40
    assert len({case[0] for case in CASES}) == len(CASES)
    assert PREFLIGHT <= {case[0] for case in CASES}


@pytest.mark.parametrize("argv, fragment", [
    pytest.param(*case[1:], id=case[0], marks=pytest.mark.slow if case[0] in PREFLIGHT else ()) for case in CASES])
def test_bad_input_is_one_line_exit_2_nothing_started_nothing_written(argv, fragment, corpus, no_ray, capsys,
                                                                      monkeypatch):
    paths = {name: str(path) for name, path in corpus.items()}
    new = corpus["root"] / "new-output"
    line = argv.format(new=new, **paths)
    before = _snapshot(corpus["root"])
    modules = set(sys.modules)
    monkeypatch.chdir(corpus["root"])  # a default output folder (runs/...) would land here, and be seen

    code = _run(line.split())

    err = capsys.readouterr().err
    lines = [text for text in err.splitlines() if text.strip()]
    assert code == 2, err
    assert len(lines) == 1, err
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in err
    assert not new.exists(), "an output folder was created for input that was refused"
    assert _snapshot(corpus["root"]) == before, "a refused command wrote or changed a file"
    assert "mindspore" not in set(sys.modules) - modules, "MindSpore was imported for input that was refused"


@pytest.mark.slow
def test_a_start_that_failed_before_any_training_leaves_the_folder_free(tmp_path, corpus, capsys, monkeypatch):
    """A start refused after the folder was claimed (here: Ray cannot start) trained nothing, so the corrected
    command takes the folder again without --resume, and a folder where a run did train is still refused."""
    import boosttune.execution.start

    from boosttune.errors import UnsupportedError

    def refused(*args, **kwargs):
        raise UnsupportedError("base.device_target: refused for this test, as a device MindSpore cannot use is")

    monkeypatch.setattr(boosttune.execution.start, "connect_ray", refused)
    output = tmp_path / "run"
    assert _run(["exp", "--output", str(output)]) == 2
    assert (output / "experiment.json").is_file()  # claimed, then refused: nothing trained
    capsys.readouterr()
    assert _run(["exp", "--output", str(output), "--epochs", "4"]) == 2
    err = capsys.readouterr().err
    assert "refused for this test" in err and "holds an earlier" not in err  # taken again, with its new settings
    assert json.loads((output / "experiment.json").read_text())["base"]["epochs"] == 4
    (output / "trials").mkdir()
    (output / "trials" / "baseline.json").write_text("{}")
    assert _run(["exp", "--output", str(output), "--epochs", "4"]) == 2  # the same settings: --resume continues it
    assert "holds an earlier experiment; pass --resume" in capsys.readouterr().err
    assert _run(["exp", "--output", str(output)]) == 2  # other settings: --resume would be refused too
    assert "holds an earlier experiment with other settings (see " in capsys.readouterr().err


def test_smoke_says_what_it_set_and_what_was_given(capsys):
    parser = search_cli.script_parser("resnet8", "test")
    parser.set_defaults(**search_cli.SMOKE)
    note = search_cli.smoke_note(parser.parse_args(["--smoke", "--epochs", "5"]))
    assert "--train-limit 1024" in note and "--trials 3" in note
    assert note.endswith("as given: --epochs 5")


def test_report_and_export_write_only_into_new_empty_or_boosttune_folders(tmp_path, corpus):
    from boosttune.errors import ConfigError
    from boosttune.files import OWN_MARKER, claim_output_folder

    made = claim_output_folder(tmp_path / "report", "--output", "boosttune report")
    assert json.loads((made / OWN_MARKER).read_text()) == {"written_by": "boosttune report"}
    (made / "report.html").write_text("<html></html>")
    assert claim_output_folder(made, "--output", "boosttune report") == made  # its own: taken again
    with pytest.raises(ConfigError, match="holds files boosttune did not write"):
        claim_output_folder(corpus["foreign"], "--output", "boosttune report")


@pytest.mark.parametrize("argv, fragment", [
    (["experiments/resnet.py", "--epoch", "3"], "unrecognized arguments: --epoch"),
    (["-m", "boosttune.cli.main", "trial", "--set", "data.name=imagefolder", "--set", "data.path={images}",
      "--set", "batch_size=2"], "broken.png: unreadable image"),
], ids=["script-flag", "trial-damaged-image"])
def test_a_real_process_prints_one_line_without_mindspore_noise(argv, fragment, corpus):
    """As a user sees it: the process's whole stderr is the one line (no usage block, no MindSpore warnings)."""
    argv = [part.format(images=corpus["images"]) for part in argv]
    done = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert fragment in done.stderr


@pytest.mark.parametrize("argv, field", [
    (["experiments/resnet.py", "--smoke", "--data", "digits", "--storage", "nosuchdb://localhost/study"], "storage"),
    (["experiments/resnet.py", "--study-storage", "redis://localhost/0"], "study_storage"),
    (["-m", "boosttune.cli.main", "tune", "{experiment}", "--set", "storage=nosuchdb://x/y"], "storage"),
], ids=["script-storage", "script-study-storage", "tune-storage"])
def test_a_value_the_command_line_decides_is_refused_first_without_loading_mindspore_or_ray(argv, field, corpus,
                                                                                            tmp_path):
    """The issue-46 case: one line, exit 2, before the preflight or the probe speak; MindSpore, Ray and Optuna are
    never imported (read from ``python -X importtime``)."""
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text("name: x\nbase: {model: lenet5, data: {name: digits}}\n")
    argv = [part.format(experiment=experiment) for part in argv]
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert len(lines) == 1 and f"{field}: " in lines[0] and "allowed:" in lines[0], lines
    assert "preflight" not in done.stdout and "probe" not in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not imported & {"mindspore", "ray", "optuna"}, sorted(imported & {"mindspore", "ray", "optuna"})
