"""The device's measured noise: what every race on a device and workload measured, pooled, for the next race.

The race (:mod:`boosttune.evaluation.race`) pools the noise of its own runs; where candidates leave after
one round its pool is thin, and a claim at 3 seeds rests on a few degrees of freedom. Every race on the
same device (node type: device, CPU and accelerator model) and the same workload (the baseline recipe,
seed aside) measures the same noise, so its residual sums of squares and degrees of freedom are added to a
record in the cache (beside the probe's), and once they reach ``MIN_RECORD_DF`` the next race takes them as its prior: the noise per paired
seed of the log speed-up and of the objective gain, weighted as ``min(df, MAX_PRIOR_DF)`` runs. A race on a
device and workload nothing was measured on gets :data:`~boosttune.evaluation.race.REFERENCE_NOISE` for its
drops only (no weight in a claim), and says so.

Ray Tune and Optuna keep no such record (a study's trials are independent draws), hence this module.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path

from boosttune.evaluation.race import REFERENCE_NOISE, Noise, Race
from boosttune.files import write_atomically
from boosttune.probe.report import cache_dir, node_type

__all__ = ["MAX_PRIOR_DF", "NoiseRecord", "noise_record"]

MAX_PRIOR_DF = 20  # a record's weight at most: the device may drift, and the race's own runs should still count
MIN_RECORD_DF = 4  # a record with fewer degrees of freedom is too thin to replace the reference (a 2-round race gives 1)


class NoiseRecord:
    """The pooled noise of the races on one device and workload, in a JSON file."""

    def __init__(self, path: Path, device: str):
        self.path, self.device = Path(path), device

    def _load(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def noise(self) -> Noise:
        """The prior for the next race: measured when a race here measured anything, else the reference."""
        data = self._load()
        speed_df, gain_df = int(data.get("speed_df", 0)), int(data.get("gain_df", 0))
        if speed_df < MIN_RECORD_DF:
            return REFERENCE_NOISE
        speed = math.sqrt(2 * float(data["speed_ss"]) / speed_df)  # per run -> per paired seed
        gain = (math.sqrt(2 * float(data["gain_ss"]) / gain_df) if gain_df >= MIN_RECORD_DF and data.get("gain_ss", 0) > 0
                else None)
        races = int(data.get("races", 0))
        return Noise(speed_sd=speed, gain_sd=gain, df=min(speed_df, gain_df if gain is not None else speed_df,
                                                          MAX_PRIOR_DF),
                     source=f"measured by {races} earlier race{'s' if races != 1 else ''} on this device "
                            f"({speed_df} df)")

    def add(self, race: Race, race_id: str) -> None:
        """Pool a finished race's own measurement into the record, once per ``race_id`` (a resumed experiment adds
        nothing twice; nothing when the race measured no spread)."""
        (speed_ss, speed_df), (gain_ss, gain_df) = race.measured()
        data = self._load()
        if speed_df <= 0 or race_id in data.get("race_ids", []):
            return
        data.update(device=self.device, races=int(data.get("races", 0)) + 1,
                    race_ids=[*data.get("race_ids", []), race_id][-200:],
                    speed_ss=float(data.get("speed_ss", 0.0)) + speed_ss,
                    speed_df=int(data.get("speed_df", 0)) + speed_df,
                    gain_ss=float(data.get("gain_ss", 0.0)) + gain_ss, gain_df=int(data.get("gain_df", 0)) + gain_df,
                    updated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, lambda temp: Path(temp).write_text(json.dumps(data, indent=2) + "\n"))


def noise_record(device_target: str, workload: str) -> NoiseRecord:
    """The record of ``device_target`` (as the probe names its node type) for ``workload`` (the baseline recipe as
    canonical JSON, seed aside)."""
    device = node_type(device_target)
    digest = hashlib.sha256(f"{device}|{workload}".encode()).hexdigest()[:16]
    return NoiseRecord(cache_dir() / f"noise-{device_target.lower()}-{digest}.json", device)
