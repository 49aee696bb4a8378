"""The report's "How to apply it" block: the exported files, a snippet for a team's own Model(...) that MindSpore
builds, and every knob of the recommended recipe by its MindSpore name, right after the answer."""

from __future__ import annotations

import json

from boosttune.cli.main import main
from boosttune.config.boost import parse_boost_config
from boosttune.report import figures, load_report_inputs, write_report
from tests.helpers.paired_runs import experiment_folder, report_inputs


def _exported_folder(tmp_path, search, confirmed_dir, capsys):
    folder = experiment_folder(tmp_path, search, confirmed_dir)
    assert main(["export", str(folder)]) == 0, capsys.readouterr().err
    return folder


def test_the_block_names_the_files_and_every_knob_of_the_exported_recipe(tmp_path, search, confirmed_dir,
                                                                          capsys):
    folder = _exported_folder(tmp_path, search, confirmed_dir, capsys)
    info = figures.apply_info(load_report_inputs(folder))
    recipe = json.loads((folder / "best_recipe.json").read_text())
    assert recipe["confirmed"]["recipe"] == "grad_freeze p=0.5" and info.exported
    # named as they sit beside the page, which may move with its folder
    assert [path for path, _ in info.files] == ["best_recipe.json", "best_boost_config.json"]
    assert 'boosttune.load_best_recipe("best_recipe.json")' in info.snippet
    assert "# model = Model(net, loss_fn, optimizer, metrics=metrics" in info.snippet  # plain MindSpore beside it
    assert 'boost_config_dict=json.load(open("best_boost_config.json"))' in info.snippet
    assert "**recipe.model_kwargs(net)" in info.snippet and "epochs=3)" in info.snippet
    assert max(len(line) for line in info.snippet.splitlines() if "best_recipe.json" not in line) <= 80
    knobs = dict(info.knobs)
    assert knobs["boost_level"] == recipe["boost_level"] == "O1"
    assert knobs['boost_config_dict["boost"]'] == ("mode manual; on: grad_freeze; off: adasum, dim_reduce, "
                                                  "grad_accumulation, less_bn, loss_scale_group")
    assert knobs['boost_config_dict["grad_freeze"]'] == ", ".join(
        f"{k}={v!r}" for k, v in recipe["boost_config_dict"]["grad_freeze"].items())
    assert set(recipe["boost_config_dict"]) == {"boost", "grad_freeze"}  # common.device_number: not on 1 rank
    assert (knobs["amp_level"], knobs["loss_scale_manager"]) == \
        ("O0", "FixedLossScaleManager(1.0, drop_overflow_update=False)")
    assert knobs["optimizer"] == "nn.Momentum(learning_rate, momentum=0.9, weight_decay=0.0)"
    assert knobs["learning_rate"] == "0.05, constant"
    assert info.notes[0].startswith("boost_level O1 goes with this boost_config_dict: O1 alone gives MindSpore's O1 "
                                    "preset (less_bn + grad_freeze at their defaults), not this recipe.")
    assert info.notes[-1].startswith("Not in best_boost_config.json: common.device_number, 8 is read only by adasum "
                                     "and dim_reduce")


def test_the_block_comes_right_after_the_answer_on_the_page_and_in_report_md(tmp_path, search, confirmed_dir,
                                                                             capsys):
    folder = _exported_folder(tmp_path, search, confirmed_dir, capsys)
    html_path, md_path = write_report(load_report_inputs(folder))
    page, text = html_path.read_text(encoding="utf-8"), md_path.read_text(encoding="utf-8")
    assert page.index('<p class="answer">Use grad_freeze p=0.5') < page.index('<section id="apply"><h2>How to apply it')
    assert page.index('<section id="apply">') < page.index('<dl class="facts">') < page.index('<section id="speed-')
    assert "boosttune.load_best_recipe(&quot;" in page and "Not written yet" not in page
    assert text.index("**Use grad_freeze p=0.5") < text.index("## How to apply it") < text.index("```python") < \
        text.index("| `boost_level` | O1 |") < text.index("## The run") < text.index("## Speed vs")


def test_keeping_o0_says_plain_training_and_how_to_write_the_files(search):
    info = figures.apply_info(report_inputs(search, max_drop=0.1))  # nothing within 0.1 pt: the baseline
    knobs = dict(info.knobs)
    assert (knobs["boost_level"], knobs["boost_config_dict"], knobs["loss_scale_manager"], knobs["dataset.batch"]) == \
        ("O0", "ignored at boost_level O0", "none", "32 per rank")
    assert not any(name.startswith("boost_config_dict[") for name in knobs)
    assert info.notes[0].startswith("boost_level O0: MindSpore applies no boost")
    assert not info.exported and info.export_command == "boosttune export ."  # inputs not read from a folder


def test_the_snippet_builds_the_recipes_boost_in_mindspore(tmp_path, search, confirmed_dir, capsys, monkeypatch):
    """The block's snippet, run as written with a team's own network and data, builds the recipe's boost."""
    import mindspore as ms
    import numpy as np
    from mindspore import nn
    from mindspore.boost.boost import AutoBoost
    from mindspore.train import Accuracy

    from boosttune.algorithms.mindspore_state import reset_boost_state
    from boosttune.builtin.models import build_network
    from boosttune.trial.runner import observed_boost

    folder = _exported_folder(tmp_path, search, confirmed_dir, capsys)
    info = figures.apply_info(load_report_inputs(folder))
    exported = json.loads((folder / "best_boost_config.json").read_text())
    monkeypatch.chdir(folder)  # run beside the files, as the page names them
    images, labels = np.zeros((64, 1, 32, 32), np.float32), np.zeros((64,), np.int32)
    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    reset_boost_state()
    try:
        team = {"net": build_network("lenet5", 10, 1, 32), "metrics": {"acc": Accuracy()},
                "loss_fn": nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                "train": ms.dataset.NumpySlicesDataset((images, labels), ["image", "label"]).batch(32)}
        exec(info.snippet, team)
        built, boost = observed_boost(team["model"]), AutoBoost._instance
        settings = (boost.level, boost.boost_config, boost._freeze_p, boost._param_groups, boost.device_number)
        # the plain MindSpore line beside it, uncommented as a team would, builds the same boost
        plain = "\n".join(line[2:] for line in info.snippet.split("plain MindSpore")[1].splitlines()[1:])
        reset_boost_state()
        team.update(json=json, FixedLossScaleManager=ms.FixedLossScaleManager, optimizer=team["optimizer"],
                    net=build_network("lenet5", 10, 1, 32))
        team["optimizer"] = nn.Momentum(team["net"].trainable_params(), 0.05, 0.9)
        exec(plain.replace("model = ", "plain = ", 1), team)
        assert observed_boost(team["plain"]) == built
    finally:
        reset_boost_state()
    effective = parse_boost_config(exported, "O1").effective()
    assert (built["grad_freeze"], built["less_bn"], built["train_cell"]) == (True, False, "BoostTrainOneStepCell")
    assert settings == ("O1", dict(effective.applied), effective.settings["grad_freeze"]["freeze_p"],
                        effective.settings["grad_freeze"]["param_groups"], 8)


def test_amp_loss_scale_optimizer_and_schedule_by_their_mindspore_names():
    from tests.helpers.records import RAY_VERSION, make_record

    from boosttune.config.recipe import parse_recipe
    from boosttune.tables.results import build_results_table

    boosted = make_record("t_00001", level="O1", boost={"less_bn": {"gc_flag": False}}, sps=150.0, acc=0.9)
    boosted["recipe"] = parse_recipe({
        "model": "lenet5", "batch_size": 16, "amp_level": "O2", "loss_scale": {"kind": "fixed", "loss_scale": 64.0},
        "optimizer": {"name": "adam", "learning_rate": 0.002, "weight_decay": 1e-4, "lr_schedule": "cosine",
                      "warmup_steps": 2}, "boost_level": "O1", "boost_config_dict": {"less_bn": {"gc_flag": False}}}
    ).to_dict()
    table = build_results_table([make_record("t_00000", preset="O0", sps=100.0, acc=0.9), boosted],
                                ray_version=RAY_VERSION)
    knobs = dict(figures.apply_info(report_inputs(table)).knobs)
    assert knobs["amp_level"] == "O2" and knobs["dataset.batch"] == "16 per rank"
    assert knobs["loss_scale_manager"] == "FixedLossScaleManager(64.0, drop_overflow_update=False)"
    assert knobs["optimizer"] == "nn.Adam(learning_rate, weight_decay=0.0001, loss_scale=64.0)"  # divided back out
    assert knobs["learning_rate"] == ("0.002, 2 linear warm-up updates, then cosine decay to 0 over the run's updates "
                                      "(every update's rate: recipe.learning_rates(steps_per_epoch, epochs))")
    assert knobs['boost_config_dict["boost"]'].startswith("mode manual; on: grad_freeze, less_bn; off: ")
    assert knobs['boost_config_dict["less_bn"]'] == "fn_flag=True, gc_flag=False"


def test_a_recipe_that_is_mindspores_preset_is_named_so():
    from tests.helpers.records import RAY_VERSION, make_record

    from boosttune.tables.results import build_results_table

    table = build_results_table([make_record("t_00000", preset="O0", sps=100.0, acc=0.9),
                                 make_record("t_00001", level="O1", sps=150.0, acc=0.9)], ray_version=RAY_VERSION)
    note = figures.apply_info(report_inputs(table)).notes[0]
    assert note.startswith("boost_level O1 goes with this boost_config_dict: O1 alone gives MindSpore's O1 preset "
                           "(less_bn + grad_freeze at their defaults), which this recipe is.")
