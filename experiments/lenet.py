"""LeNet-5 on real data, O0 baseline vs the device's boost presets.

    python experiments/lenet.py [--smoke]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _preset_comparison import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run("lenet5", __doc__.strip().splitlines()[0]))
