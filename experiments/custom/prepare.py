"""Write the example's data as MindRecord: scikit-learn's 1,797 handwritten digits, each an 8-step sequence of
8-pixel rows, split 80/20 into train.mindrecord and val.mindrecord under data/ (about 0.5 MB).

    python prepare.py            # once, before the search
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from mindspore.mindrecord import FileWriter
from sklearn.datasets import load_digits


def write(path: Path, rows: np.ndarray, labels: np.ndarray) -> None:
    for old in (path, path.with_name(path.name + ".db")):
        old.unlink(missing_ok=True)
    writer = FileWriter(str(path), shard_num=1, overwrite=True)
    writer.set_header_size(1 << 16)  # MindRecord's defaults (16 MB header, 32 MB pages) would make each small
    writer.set_page_size(1 << 17)  # file 50 MB on disk
    writer.add_schema({"rows": {"type": "float32", "shape": [8, 8]}, "label": {"type": "int32"}}, "digit rows")
    writer.write_raw_data([{"rows": r, "label": int(y)} for r, y in zip(rows, labels)])
    writer.commit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).parent / "data"), help="folder to write (default: data/)")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    digits = load_digits()
    rows = (digits.images / 16.0).astype(np.float32)  # pixel values 0-16 -> 0-1
    order = np.random.RandomState(0).permutation(len(rows))
    cut = int(len(rows) * 0.8)
    write(out / "train.mindrecord", rows[order[:cut]], digits.target[order[:cut]])
    write(out / "val.mindrecord", rows[order[cut:]], digits.target[order[cut:]])
    print(f"wrote {cut} training and {len(rows) - cut} validation sequences to {out}")


if __name__ == "__main__":
    main()
