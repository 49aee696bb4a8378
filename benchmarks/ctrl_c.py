"""Ctrl-C: how long a driver on the local Ray instance takes to exit once the terminal sends it.

    python benchmarks/ctrl_c.py              # 3 runs
    python benchmarks/ctrl_c.py --runs 1

Starts ``experiments/lenet.py`` (LeNet-5 on scikit-learn's digits, a 4-trial search) in a process group of its own, as
a terminal runs it; once the first search trial has finished, sends SIGINT to the whole group (what Ctrl-C does) and
times the exit. Prints each run's seconds and exit status (130 expected); asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMAND = ["experiments/lenet.py", "--data", "digits", "--epochs", "2", "--train-limit", "512", "--val-limit", "128",
           "--no-early-stop", "--keep-slow", "--search", "less_bn,grad_freeze", "--trials", "4", "--confirm-seeds",
           "0"]


def one_run(folder: Path) -> tuple[float, int]:
    log = folder / "driver.log"
    with log.open("w") as out:
        driver = subprocess.Popen([sys.executable, "-u", *COMMAND, "--output", str(folder / "run")], cwd=REPO,
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 600
        while "search [1/" not in log.read_text():
            if driver.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the driver ended or stalled before its first search trial: {log}")
            time.sleep(0.2)
        sent = time.monotonic()
        os.killpg(driver.pid, signal.SIGINT)
        code = driver.wait()
    return time.monotonic() - sent, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for index in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="boosttune-ctrl-c-") as folder:
            seconds, code = one_run(Path(folder))
        print(f"run {index + 1}: SIGINT to exit {seconds:.1f} s, exit status {code}", flush=True)


if __name__ == "__main__":
    main()
