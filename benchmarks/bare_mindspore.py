"""The reference: the same training as a boosttune trial, written as a bare MindSpore script.

Same network and data pipeline (built by the same functions), plain ``Model.train``, a timing
callback that reads the loss each step (as the trial does) and the same steady-state rule.
Prints one JSON line. Not a test: run by overhead.py.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("GLOG_v", "3")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--data", default="fashion_mnist")
    parser.add_argument("--train-limit", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import mindspore as ms
    from mindspore import nn
    from mindspore.train.callback import Callback

    from boosttune.builtin.data import load_dataset
    from boosttune.builtin.models import build_network, default_image_size
    from boosttune.config.recipe import DataConfig
    from boosttune.trial.timing import summarize_steps

    ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
    ms.set_seed(args.seed)
    size = default_image_size(args.model)
    data = load_dataset(DataConfig(name=args.data, train_limit=args.train_limit, val_limit=64), size)
    train = data.train.dataset(args.batch_size, shuffle=True, seed=args.seed)
    steps_per_epoch = train.get_dataset_size()
    epochs = -(-args.steps // steps_per_epoch)
    train = train.take(min(steps_per_epoch, args.steps))
    net = build_network(args.model, data.num_classes, data.channels, size)
    model = ms.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                     nn.Momentum(net.trainable_params(), args.lr, 0.9))

    class Timer(Callback):
        def __init__(self):
            super().__init__()
            self.durations = []

        def on_train_step_begin(self, run_context):
            if not self.durations and not hasattr(self, "first_step_at"):
                self.first_step_at = time.time()
            self.start = time.perf_counter()

        def on_train_step_end(self, run_context):
            run_context.original_args().net_outputs.asnumpy()
            self.durations.append(time.perf_counter() - self.start)

    timer = Timer()
    model.train(epochs, train, callbacks=[timer], dataset_sink_mode=False)
    summary = summarize_steps(timer.durations, args.batch_size, args.warmup_steps)
    print(json.dumps({"throughput_sps": summary.throughput_sps, "steps": len(timer.durations),
                      "first_step_at": timer.first_step_at,
                      "compile_s": summary.compile_s, "steady_steps": summary.steady_steps}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
