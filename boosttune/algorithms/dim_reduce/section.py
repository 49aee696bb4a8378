"""DimReduce's boost_config_dict section and its rule (it replaces the optimizer, skipping three others)."""

import re

from pydantic import Field, field_validator

from boosttune.algorithms.base import Resolution, _Section

# DimReduce's stage-2 fails after computing the PCA when weight_load_dir holds other characters.
_DIM_REDUCE_PATH = re.compile(r"^[_A-Za-z0-9/.\-]+$")
# What MindSpore's BoostTrainOneStepCell skips when DimReduce is on (it returns before them).
SKIPS = ("less_bn", "grad_freeze", "adasum")


class DimReduceSection(_Section):
    rho: float = Field(0.55, gt=0.0, lt=1.0)
    gamma: float = Field(0.9, ge=0.0, lt=1.0)
    alpha: float = Field(0.001, gt=0.0)
    sigma: float = Field(0.4, gt=0.0, lt=1.0)
    n_components: int = Field(32, ge=1)
    pca_mat_path: str | None = None
    weight_load_dir: str | None = None
    timeout: int = Field(1800, ge=1)

    @field_validator("pca_mat_path")
    @classmethod
    def _npy(cls, path: str | None) -> str | None:
        # MindSpore silently ignores a pca_mat_path that does not end in .npy and recomputes.
        if path is not None and not path.endswith(".npy"):
            raise ValueError("must be a .npy file written by an earlier DimReduce run")
        return path

    @field_validator("weight_load_dir")
    @classmethod
    def _portable_path(cls, path: str | None) -> str | None:
        if path is not None and not _DIM_REDUCE_PATH.fullmatch(path):
            raise ValueError("DimReduce accepts only the characters [_A-Za-z0-9/.-] in this path")
        return path


def rule(state: Resolution) -> None:
    applied, notes = state.applied, state.notes
    if not applied["dim_reduce"]:
        return
    skipped = [n for n in SKIPS if applied[n]]
    for name in skipped:
        applied[name] = False
    if skipped:
        notes.append(f"dim_reduce replaces the optimizer and skips {', '.join(skipped)}")
    notes.append("dim_reduce trains with SGD(learning_rate=1) in place of the recipe's optimizer")
    dr = state.section("dim_reduce")
    if dr.pca_mat_path is None and dr.weight_load_dir is None:
        notes.append(
            "dim_reduce needs weight_load_dir (stage-1 checkpoints) or pca_mat_path; "
            "a boosttune trial produces them"
        )
