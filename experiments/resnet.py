"""Main job: search boost recipes for a small ResNet (with BatchNorm) on real data, speed vs accuracy.

    python experiments/resnet.py                 # about 18 minutes on 2 CPU cores, local Ray, confirm stage included
    python experiments/resnet.py --smoke         # about 3 minutes
    ray submit cluster.yaml experiments/resnet.py --workers 2
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _search_cli import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run("resnet8", __doc__.strip().splitlines()[0]))
