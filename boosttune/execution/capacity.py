"""Whether a trial's ranks can ever be placed, known before anything trains: on the local instance about to start,
and on a cluster as it stands and as its autoscaler may grow it (node types and ``max_workers``).

Ray Train waits forever for a placement that can never come. Ray has no public API for an autoscaler's limits:
they are read where the autoscaler reads them (the cluster config its monitor was started with, or the one an
autoscaler v2 reports to the GCS), through :mod:`boosttune.ray_internals`. Where neither is visible (a driver
that is not on the head) the run goes on and says so: a cluster that may still grow is never refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import ray

from boosttune.devices import ACCELERATOR_RESOURCES, DEVICES, device_held
from boosttune.errors import ConfigError
from boosttune.execution.ray import cluster_address, cluster_nodes, describe_resources, running_cluster
from boosttune.ray_internals import HEAD_NODE_RESOURCE, accelerator_manager, autoscaler_config, reported_node_groups

__all__ = ["Autoscaler", "NodeType", "check_capacity", "check_local_capacity", "check_placeable", "find_autoscaler",
           "local_resources", "pick_device", "placeable_ranks", "rank_threads"]


def ranks_on(resources: Mapping[str, float], per_rank: Mapping[str, float]) -> int:
    """How many ranks of ``per_rank`` a node holding ``resources`` can hold."""
    return int(min(resources.get(k, 0.0) // v for k, v in per_rank.items() if v > 0))


def placeable_ranks(nodes: Iterable[Mapping[str, Any]], per_rank: Mapping[str, float]) -> list[int]:
    """How many ranks of ``per_rank`` each alive node can hold (from its total resources)."""
    return [ranks_on(node.get("Resources", {}), per_rank) for node in nodes if node.get("Alive", True)]


@dataclass(frozen=True)
class RankThreads:
    """The CPU threads each rank of a run uses (:func:`rank_threads`), and why: ``node_cpus`` shared by ``ranks``."""

    threads: int
    node_cpus: int
    ranks: int

    def describe(self) -> str:
        return (f"each rank runs {self.threads} CPU thread(s) (MindSpore's kernel threads and OMP_NUM_THREADS): its "
                f"node's {self.node_cpus} core(s) over the run's {self.ranks} rank(s) there, as the job alone on that "
                "node would use them")


def rank_threads(nodes: Iterable[Mapping[str, Any]], per_rank: Mapping[str, float], workers: int) -> RankThreads | None:
    """The threads a rank uses: the cores of the smallest node that takes a rank, over the ranks of one run Ray packs
    on it, since boosttune trains one run per node at a time (one trial per CPU node, :func:`~boosttune.execution.
    cluster.default_concurrency`; a round's runs taking turns train one at a time), as the user's job alone on that
    node would. Not what Ray reserves: a rank asks for one CPU, so that ranks pack, and Ray would set
    OMP_NUM_THREADS=1 from it. None when no alive node can take a rank yet (a cluster still to grow)."""
    held = [(node.get("Resources", {}), count) for node, count in
            zip([n for n in nodes if n.get("Alive", True)], placeable_ranks(list(nodes), per_rank)) if count > 0]
    if not held:
        return None
    resources, count = min(held, key=lambda pair: pair[0].get("CPU", 0.0))
    cpus = int(resources.get("CPU", 0.0))
    ranks = max(1, min(workers, count))
    return RankThreads(max(1, cpus // ranks), cpus, ranks) if cpus >= 1 else None


def check_placeable(nodes: Iterable[Mapping[str, Any]], per_rank: Mapping[str, float], workers: int) -> None:
    """Refuse a trial a cluster that does not grow can never place."""
    counts = placeable_ranks(list(nodes), per_rank)
    if sum(counts) >= workers:
        return
    asked, held = describe_resources(per_rank), sum(counts)
    allowed = f"allowed: 1 to {held}" if held else f"no node has {asked}: add one, or change the device"
    raise ConfigError(f"workers_per_trial: {workers} ranks of ({asked}) each cannot be placed; the cluster holds "
                      f"{held} such rank(s) ({len(counts)} node(s)); {allowed}")


# --- what an autoscaler may add ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeType:
    """A kind of worker node the autoscaler may start."""

    name: str
    resources: Mapping[str, float] | None  # None: the provider fills them in at launch (not known here)
    max_workers: int | None  # None: no limit of its own


@dataclass(frozen=True)
class Autoscaler:
    """What the cluster's autoscaler may add, and where that was read. No node types: the cluster does not grow."""

    node_types: tuple[NodeType, ...]
    max_workers: int | None  # all worker nodes together; None: no limit
    source: str

    @classmethod
    def from_cluster_config(cls, config: Mapping[str, Any], source: str) -> Autoscaler:
        """From a cluster config as ``ray up`` writes it for the autoscaler (``available_node_types``, each with its
        ``max_workers`` of worker nodes, and ``max_workers`` overall)."""
        head, total = config.get("head_node_type"), config.get("max_workers")
        if not config.get("available_node_types"):  # not as the autoscaler reads it: the nodes are not known
            return cls((NodeType("workers", None, total),), total, source)
        types = []
        for name, spec in config["available_node_types"].items():
            limit = spec.get("max_workers", 0 if name == head else total)  # Ray's defaults (the head's own excluded)
            resources = spec.get("resources")
            types.append(NodeType(name, {k: float(v) for k, v in resources.items()} if resources else None,
                                  None if limit is None else int(limit)))
        return cls(tuple(types), None if total is None else int(total), source)

    @classmethod
    def from_node_groups(cls, groups: Iterable[tuple[str, Mapping[str, float], int]], source: str) -> Autoscaler:
        """From the node groups an autoscaler v2 reports (a max count of -1: no limit)."""
        return cls(tuple(NodeType(name, dict(resources), None if count < 0 else count)
                         for name, resources, count in groups), None, source)

    def most_ranks(self, per_rank: Mapping[str, float]) -> int | None:
        """The most ranks of ``per_rank`` the nodes it may start hold together (None: no bound is known)."""
        sizes = []
        for kind in self.node_types:
            if kind.max_workers == 0:
                continue
            if kind.resources is None:
                return None
            if ranks_on(kind.resources, per_rank):
                sizes.append((ranks_on(kind.resources, per_rank), kind.max_workers))
        left, most = self.max_workers, 0
        for size, count in sorted(sizes, key=lambda s: -s[0]):  # the largest nodes first: an upper bound
            if count is None and left is None:
                return None
            take = min(c for c in (count, left) if c is not None)
            most += size * take
            left = None if left is None else left - take
        return most

    def describe(self, per_rank: Mapping[str, float]) -> str:
        if not self.node_types:
            return f"no autoscaler adds nodes ({self.source})"
        kinds = ", ".join(f"{k.name}: {'?' if k.resources is None else ranks_on(k.resources, per_rank)} per node, "
                          f"at most {'any' if k.max_workers is None else k.max_workers}" for k in self.node_types
                          if k.max_workers != 0)
        most = self.most_ranks(per_rank)
        return (f"its autoscaler may add {'any number' if most is None else f'at most {most}'} ({kinds}; "
                f"max_workers {'none' if self.max_workers is None else self.max_workers}; read from {self.source})")


def find_autoscaler(gcs_address: str | None = None) -> Autoscaler | None:
    """The connected cluster's autoscaler limits (or, unconnected, those of the cluster at ``gcs_address``), where Ray
    shows them on this machine (None: not visible here)."""
    try:
        groups = reported_node_groups() if gcs_address is None else None  # read through a connected driver
        found = None if groups else autoscaler_config(gcs_address or ray.get_runtime_context().gcs_address)
    except Exception:  # noqa: BLE001 - an unreadable config is limits not visible: the run goes on and says so
        return None
    if groups:
        return Autoscaler.from_node_groups(groups, "the cluster config reported to the GCS")
    if found is None:
        return None
    path, config = found
    if config is None:
        return Autoscaler((), None, "its monitor runs without --autoscaling-config")
    return Autoscaler.from_cluster_config(config, path)


def check_capacity(per_rank: Mapping[str, float], workers: int, *, log: Callable[[str], None],
                   nodes: list[Mapping[str, Any]] | None = None, autoscaler: Autoscaler | None = None,
                   local: bool = False) -> None:
    """After connecting: refuse, in one line, a trial that the cluster cannot hold and its autoscaler cannot grow
    to; say so where it has to wait for the autoscaler, or where the limits are not visible."""
    nodes = list(ray.nodes()) if nodes is None else nodes
    if local:  # a local instance never grows
        check_placeable(nodes, per_rank, workers)
        return
    now = sum(placeable_ranks(nodes, per_rank))
    if now >= workers:
        return
    asked = describe_resources(per_rank)
    autoscaler = autoscaler or find_autoscaler()
    if autoscaler is None:
        log(f"capacity: a trial's {workers} ranks of ({asked}) wait for nodes: the cluster holds {now} now, and "
            "its autoscaler's limits are not visible from this machine (run the driver on the head to check them)")
        return
    head = sum(placeable_ranks([n for n in nodes if HEAD_NODE_RESOURCE in n.get("Resources", {})], per_rank))
    added = autoscaler.most_ranks(per_rank)
    if added is None or head + added >= workers:
        log(f"capacity: a trial's {workers} ranks of ({asked}) wait for the autoscaler: the cluster holds {now} "
            f"now; {autoscaler.describe(per_rank)}")
        return
    most = max(now, head + added)
    allowed = (f"allowed: 1 to {most}" if most else
               f"no node has {asked}: add a node type that holds it to the cluster file, or change the device")
    alive = len([n for n in nodes if n.get("Alive", True)])
    raise ConfigError(f"workers_per_trial: {workers} ranks of ({asked}) each cannot be placed; the cluster holds "
                      f"{now} such rank(s) ({alive} node(s)) and {autoscaler.describe(per_rank)}; {allowed}")


# --- the local instance, before it starts -----------------------------------------------------------------


def local_resources() -> dict[str, float]:
    """What a local Ray instance started here would hold: this machine's cores, and the accelerators Ray's own
    detection finds (through boosttune.ray_internals), as it counts them when it starts."""
    resources = {"CPU": float(os.cpu_count() or 1)}
    for name, _ in ACCELERATOR_RESOURCES.values():
        try:
            manager = accelerator_manager(name)
            count = manager.get_current_node_num_accelerators() if manager else 0
        except ImportError:  # a private API: without it, accelerators are checked once Ray has started
            return resources
        except Exception:  # noqa: BLE001 - a driver or tool missing: none detected, as Ray itself would
            count = 0
        if count:
            resources[name] = float(count)
    return resources


def check_local_capacity(per_rank: dict[str, float], workers: int) -> None:
    """Before Ray starts: refuse a trial the local instance about to start could never place, a device this
    machine does not have included.

    Only where that instance is known in advance: no cluster to join (``RAY_ADDRESS``, or one ``ray start`` runs
    here).
    """
    if ray.is_initialized() or os.environ.get("RAY_ADDRESS") or running_cluster():
        return
    held = local_resources()
    for device, (name, _) in ACCELERATOR_RESOURCES.items():
        if per_rank.get(name) and not held.get(name):
            raise ConfigError(f"base.device_target: {device} ranks need a {name}, and this machine has none that Ray "
                              "detects, with no cluster to join (RAY_ADDRESS, or `ray start` here); run where the "
                              f"device is, join its cluster, or use --device CPU")
    check_placeable([{"Alive": True, "Resources": held}], per_rank, workers)


# --- --device auto ----------------------------------------------------------------------------------------


def pick_device(log: Callable[[str], None]) -> str:
    """``--device auto``: the device of the nodes the trials will run on, said in one line. On the cluster the run
    joins (its nodes now, and the node types its autoscaler may start: a GPU cluster's workers are often not up
    yet), else on this machine, as the local instance about to start would detect them. GPU or Ascend where any of
    them holds one, else CPU."""
    connected = ray.is_initialized()
    address = None if connected else cluster_address()
    unknown: list[str] = []
    if not connected and address is None:
        places = [("this machine", local_resources())]
        looked = "this machine holds no GPU or NPU, and there is no cluster to join"
    else:
        # Read, not joined: the run joins once, with the code it ships (a driver's connection that ends releases
        # its job's working_dir, which Ray may then delete from under it)
        nodes = [node for node in (ray.nodes() if connected else cluster_nodes(address)) if node.get("Alive")]
        autoscaler = find_autoscaler(None if connected else address)
        places = [(f"node {node.get('NodeManagerAddress', '?')}", node.get("Resources", {})) for node in nodes]
        kinds = [kind for kind in (autoscaler.node_types if autoscaler else ()) if kind.max_workers != 0]
        places += [(f"the autoscaler's node type {kind.name}", kind.resources) for kind in kinds if kind.resources]
        unknown = [kind.name for kind in kinds if kind.resources is None]
        looked = (f"the cluster's {len(nodes)} node(s)" + (" and the node types its autoscaler may start"
                                                            if kinds else "") + " hold no GPU or NPU")
    device, where = device_held(places)
    accelerators = "|".join(name for name, d in DEVICES.items() if d.ray_resource)
    if where is not None:
        resource = DEVICES[device].ray_resource or ""
        article = "an" if resource[:1] in "AEIOUFHLMNRSX" else "a"  # as the letter is said: an NPU, a GPU
        log(f"device: {device} (--device auto: {where} holds {article} {resource}; --device CPU trains on CPUs "
            "instead)")
    else:
        later = (f"; node type(s) {', '.join(unknown)} report their devices only when they join: give --device "
                 f"{accelerators} if they hold one" if unknown else "")
        log(f"device: CPU (--device auto: {looked}; --device {accelerators} chooses one){later}")
    return device
