"""Search boost recipes for LeNet-5 on real data, speed vs accuracy.

    python experiments/lenet.py
    python experiments/lenet.py --smoke
"""

import sys

# The command line lives in the package, so this file runs alone: `ray submit` copies only the script.
from boosttune.cli.search import run

if __name__ == "__main__":
    sys.exit(run("lenet5", __doc__.strip().splitlines()[0]))
