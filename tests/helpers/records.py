"""Trial records as the search writes them, and a sample of six (baseline, preset, searched, failed): the input of
the results-table, selection, export and report tests. The ``records`` and ``table`` fixtures (tests/conftest.py)
are built from :func:`sample_records`."""

from __future__ import annotations

from boosttune.config.boost import parse_boost_config
from boosttune.config.recipe import parse_recipe

RAY_VERSION = "2.60.0"
ENVIRONMENT = {"device_target": "CPU", "mindspore_version": "2.10.0", "boosttune_version": "0.1.0",
               "runtime_env": {"ONEDNN_MAX_CPU_ISA": "AVX2"}}
_OFF = {"less_bn": False, "grad_freeze": False, "grad_accumulation": False, "grad_accumulation_step": 1,
        "dim_reduce": False, "adasum": False, "fn_heads": 0, "batchnorm_layers": 0,
        "train_cell": "TrainOneStepCell", "optimizer": "Momentum"}


def make_record(trial_id, status="completed", *, preset=None, level="O0", boost=None, params=None,
                sps=None, acc=None, reason=None, observed=None, lr=0.05):
    """A trial record as the search produces it (real recipe and canonical boost_config_dict)."""
    boost = boost or {}
    recipe = parse_recipe({"model": "lenet5", "data": {"name": "digits"}, "batch_size": 32, "epochs": 2, "seed": 0,
                           "optimizer": {"learning_rate": lr}, "boost_level": level, "boost_config_dict": boost})
    metrics = dict.fromkeys(("throughput_sps", "objective_value", "val_loss", "train_loss", "compile_s", "wall_s",
                             "time_to_target_s", "peak_rss_mb", "steady_steps", "stage1_s", "world_size"))
    if status != "failed":
        metrics.update(throughput_sps=sps, objective_value=acc, val_loss=0.5, train_loss=0.4, compile_s=1.5, wall_s=20.0,
                       peak_rss_mb=900.0, steady_steps=100, world_size=1)
    return {
        "trial_id": trial_id, "status": status, "reason": reason, "preset": preset, "params": params or {},
        "recipe": recipe.to_dict(), "boost_config_dict": parse_boost_config(boost, level).to_boost_config_dict(),
        "metrics": metrics, "observed_boost": {**_OFF, **(observed or {})} if status != "failed" else {},
        "environment": ENVIRONMENT,
    }


def sample_records():
    """O0 baseline, O1-equivalent preset (faster, -3 pt), and searched trials incl. a failed one."""
    less_bn = {"less_bn": {"gc_flag": False}}
    accumulate = {"boost": {"mode": "manual", "grad_freeze": False, "grad_accumulation": True},
                  "less_bn": {"gc_flag": False}, "grad_accumulation": {"grad_accumulation_step": 4}}
    return [
        make_record("t_00000", preset="O0", sps=500.0, acc=0.800),
        make_record("t_00001", preset="O1-equivalent", level="O1", boost=less_bn, sps=640.0, acc=0.770,
                    params={"boost.less_bn": True, "boost.grad_freeze": True}),
        make_record("t_00002", level="O1", boost=accumulate, sps=600.0, acc=0.797,
                    params={"boost.grad_accumulation": True, "grad_accumulation.grad_accumulation_step": 4},
                    observed={"less_bn": True, "grad_accumulation": True, "grad_accumulation_step": 4}),
        make_record("t_00003", level="O1", boost=less_bn, sps=700.0, acc=0.780,  # faster, too inaccurate
                    params={"boost.grad_freeze": True, "grad_freeze.freeze_p": 0.4}),
        make_record("t_00004", "failed", level="O1", boost=less_bn, reason="trial failed in MindSpore: boom",
                    params={"boost.grad_freeze": True, "grad_freeze.freeze_p": 0.9}),
        make_record("t_00005", sps=450.0, acc=0.810, lr=0.1, params={"optimizer.learning_rate": 0.1}),
    ]
