"""The device's measured noise: what every race on a device and workload measured, pooled, for the next race.

Every race on the same device (node type), workload (the baseline recipe, seed aside) and run mode (:class:`RunMode`)
measures the same noise, so its residual sums of squares and degrees of freedom are kept in a record in the cache,
the last ``KEEP_RACES`` races only; once they reach ``MIN_RECORD_DF`` the next race (:mod:`boosttune.stats.race`)
takes them as its prior, weighted as ``min(df, MAX_PRIOR_DF)`` runs, after checking it against its own runs
(:mod:`boosttune.stats.race_model`). With no record, :data:`~boosttune.stats.race.REFERENCE_NOISE` serves
the drops only (no weight in a claim), and says so.

Why, and what was measured: docs/design/race.md.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from boosttune.files import write_atomically
from boosttune.probe.report import cache_dir, node_type
from boosttune.stats.race import REFERENCE_NOISE, Noise, Race

__all__ = ["KEEP_RACES", "MAX_PRIOR_DF", "NoiseRecord", "RunMode", "noise_record"]

MAX_PRIOR_DF = 20  # a record's weight at most: the device may drift, and the race's own runs should still count
MIN_RECORD_DF = 4  # a record with fewer degrees of freedom is too thin to replace the reference (a 2-round race gives 1)
KEEP_RACES = 5  # the record holds the last races only, so it follows a drifting machine


@dataclass(frozen=True)
class RunMode:
    """How the confirm runs are made, whose speed noise differs by 2x between modes: warm or fresh workers, graphs
    cached or compiled each run, ranks per run and runs at once."""

    warm_workers: bool
    cache_graphs: bool
    ranks: int = 1
    concurrent: int = 1
    turns: bool = False  # a round's runs at once, their epochs in turn

    def key(self) -> str:
        return (f"{'warm' if self.warm_workers else 'fresh'}|graphs {'cached' if self.cache_graphs else 'compiled'}|"
                f"{self.ranks} ranks|{self.concurrent} at once" + ("|epochs in turn" if self.turns else ""))


def _entries(data: dict) -> list[dict]:
    """The record's races, newest last; a file from before the history (sums only) reads as one entry."""
    races = data.get("history")
    if isinstance(races, list):
        return [r for r in races if isinstance(r, dict)]
    if "speed_ss" in data:
        return [{k: data.get(k, 0) for k in ("speed_ss", "speed_df", "gain_ss", "gain_df")}]
    return []


class NoiseRecord:
    """The pooled noise of the last ``KEEP_RACES`` races on one device, workload and run mode, in a JSON file."""

    def __init__(self, path: Path, device: str):
        self.path, self.device = Path(path), device

    def _load(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def sums(self) -> dict[str, float]:
        """speed_ss, speed_df, gain_ss, gain_df over the races the record keeps."""
        total = dict.fromkeys(("speed_ss", "speed_df", "gain_ss", "gain_df"), 0.0)
        for entry in _entries(self._load())[-KEEP_RACES:]:
            for k in total:
                value = entry.get(k, 0)
                total[k] += float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0
        return total

    def noise(self) -> Noise:
        """The prior for the next race: measured when a race here measured anything, else the reference."""
        data, sums = self._load(), self.sums()
        speed_df, gain_df = int(sums["speed_df"]), int(sums["gain_df"])
        if speed_df < MIN_RECORD_DF or sums["speed_ss"] <= 0:
            return REFERENCE_NOISE
        speed = math.sqrt(2 * sums["speed_ss"] / speed_df)  # per run -> per paired seed
        gain = math.sqrt(2 * sums["gain_ss"] / gain_df) if gain_df >= MIN_RECORD_DF and sums["gain_ss"] > 0 else None
        races = min(len(_entries(data)), KEEP_RACES)
        return Noise(speed_sd=speed, gain_sd=gain, df=min(speed_df, gain_df if gain is not None else speed_df,
                                                          MAX_PRIOR_DF),
                     source=f"measured by {'the last ' if races > 1 else ''}{races} earlier race{'s' if races != 1 else ''} "
                            f"on this device"
                            f"{' (' + data['mode'] + ')' if data.get('mode') else ''} ({speed_df} df)")

    def add(self, race: Race, race_id: str, mode: RunMode | None = None) -> None:
        """Add a finished race's own measurement to the record, once per ``race_id`` (a resumed experiment adds
        nothing twice; nothing when the race measured no spread). A race whose runs disagreed with the record
        starts its history afresh: the machine changed."""
        (speed_ss, speed_df), (gain_ss, gain_df) = race.measured()
        data = self._load()
        if speed_df <= 0 or race_id in data.get("race_ids", []):
            return
        kept = [] if race.checks()[0].state == "disagrees" else _entries(data)[-(KEEP_RACES - 1):]
        entry = dict(speed_ss=speed_ss, speed_df=speed_df, gain_ss=gain_ss, gain_df=gain_df,
                     when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        data = dict(device=self.device, mode=mode.key() if mode else data.get("mode"),
                    race_ids=[*data.get("race_ids", []), race_id][-200:], history=[*kept, entry],
                    updated=entry["when"])
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path, lambda temp: Path(temp).write_text(json.dumps(data, indent=2) + "\n"))


def noise_record(device_target: str, workload: str, mode: RunMode | None = None) -> NoiseRecord:
    """The record of ``device_target`` (as the probe names its node type) for ``workload`` (the baseline recipe as
    canonical JSON, seed aside) and ``mode`` (None: the key records had before modes, read as any other)."""
    device = node_type(device_target)
    key = f"{device}|{workload}" + (f"|{mode.key()}" if mode is not None else "")
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return NoiseRecord(cache_dir() / f"noise-{device_target.lower()}-{digest}.json", device)
