"""Main job: search boost recipes for a small ResNet (with BatchNorm) on real data, speed vs accuracy.

    python experiments/resnet.py                 # 15-25 minutes on 2 CPU cores, local Ray, confirm stage included
    python experiments/resnet.py --smoke         # about 3 minutes
    ray job submit --address http://127.0.0.1:8265 --working-dir . -- python experiments/resnet.py --device GPU \
        --output /home/ubuntu/runs/resnet               # on a cluster (docs/clusters-and-devices.md)
    ray submit cluster.yaml experiments/resnet.py --device GPU --output runs/resnet
"""

import sys

# The command line lives in the package, so this file runs alone: `ray submit` copies only the script.
from boosttune.cli.search import run

if __name__ == "__main__":
    sys.exit(run("resnet8", __doc__.strip().splitlines()[0]))
