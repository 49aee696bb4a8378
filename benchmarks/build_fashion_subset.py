"""Build the Fashion-MNIST subset that ships in the package (boosttune/builtin/fashion_mnist/).

The main job (``python experiments/resnet.py``) trains on the first 4,096 training images and evaluates on the
first 2,000 test images each epoch and on all 10,000 after the last one: the rows the committed tables under
benchmarks/data/ measured, read from Debian's ``dataset-fashion-mnist``. Shipping exactly those rows (about 6 MB
gzipped) makes a fresh machine run the same job on the same images, with no package to install.

    apt-get install dataset-fashion-mnist && python benchmarks/build_fashion_subset.py

Fashion-MNIST is Zalando Research's, MIT licence (the notice is written beside the files).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from boosttune.config.recipe import SHIPPED_FASHION_MNIST as SHIPPED_FOLDER  # noqa: E402
from boosttune.config.recipe import SHIPPED_FASHION_TRAIN as SHIPPED_TRAIN  # noqa: E402

SOURCE = Path("/usr/share/datasets/fashion-mnist")
NOTICE = """Fashion-MNIST (https://github.com/zalandoresearch/fashion-mnist), Copyright (c) 2017 Zalando SE, MIT licence:
https://github.com/zalandoresearch/fashion-mnist/blob/master/LICENSE

These files hold the first {train} training images and labels and all {test} test images and labels of
Fashion-MNIST, in the original IDX format, gzipped, as Debian's dataset-fashion-mnist package ships them.
Built by: python benchmarks/build_fashion_subset.py
sha256 of the uncompressed files:
{digests}
"""


def _cut(raw: bytes, dims: int, rows: int | None) -> bytes:
    """The IDX file ``raw`` with only its first ``rows`` records (all of them for None), header rewritten."""
    offset = 4 + 4 * dims
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    keep = shape[0] if rows is None else min(rows, shape[0])
    record = 1
    for size in shape[1:]:
        record *= size
    header = raw[:4] + keep.to_bytes(4, "big") + raw[8:offset]
    return header + raw[offset: offset + keep * record]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE, help="the folder of the four .gz IDX files")
    args = parser.parse_args()
    SHIPPED_FOLDER.mkdir(parents=True, exist_ok=True)
    digests, counts = [], {}
    for prefix, kind, dims in (("train", "images", 3), ("train", "labels", 1), ("t10k", "images", 3),
                               ("t10k", "labels", 1)):
        name = f"{prefix}-{kind}-idx{dims}-ubyte"
        raw = _cut(gzip.decompress((args.source / f"{name}.gz").read_bytes()), dims,
                   SHIPPED_TRAIN if prefix == "train" else None)
        counts[prefix] = int.from_bytes(raw[4:8], "big")
        # mtime 0: the same bytes on every build
        (SHIPPED_FOLDER / f"{name}.gz").write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
        digests.append(f"  {name}: {hashlib.sha256(raw).hexdigest()}")
    (SHIPPED_FOLDER / "NOTICE").write_text(NOTICE.format(train=counts["train"], test=counts["t10k"],
                                                          digests="\n".join(digests)))
    print(f"wrote {SHIPPED_FOLDER}: {counts['train']} training and {counts['t10k']} test images")


if __name__ == "__main__":
    main()
