"""Search boost recipes for LeNet-5 on real data, speed vs accuracy.

    python experiments/lenet.py [--smoke]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _search_cli import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run("lenet5", __doc__.strip().splitlines()[0]))
