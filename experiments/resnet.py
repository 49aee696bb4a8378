"""Main job: a small ResNet (with BatchNorm) on real data, O0 baseline vs the device's boost presets.

    python experiments/resnet.py            # about 3 minutes on 2 CPU cores
    python experiments/resnet.py --smoke    # under a minute
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _preset_comparison import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run("resnet8", __doc__.strip().splitlines()[0]))
