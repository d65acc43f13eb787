"""A Skiff runner in Python: one task of a sweep over lr and depth.

Skiff starts `python main.py` once per task, in its own gVisor sandbox. The
task's payload is a JSON file named by SKIFF_TASK_PAYLOAD; the result is the
JSON this writes to SKIFF_TASK_RESULT. Lines on stdout that start with
SKIFF_PROGRESS: report progress.
"""

import json
import math
import os
import sys


def progress(pct, stage):
    # flush: the line must reach Skiff while the task runs, not at exit.
    print("SKIFF_PROGRESS:" + json.dumps({"pct": pct, "stage": stage}), flush=True)


def train(lr, depth, epochs):
    """A stand-in for real training: a loss that depends on lr and depth."""
    loss = 1.0
    for epoch in range(epochs):
        loss = loss * (1 - lr) + 0.01 * abs(depth - 4)
        progress(round(100 * (epoch + 1) / epochs), "epoch %d" % (epoch + 1))
    return loss + 0.1 / math.sqrt(depth)


def main():
    with open(os.environ["SKIFF_TASK_PAYLOAD"]) as f:
        payload = json.load(f)
    # A sweep task's payload is fixed_payload plus its parameters, e.g.
    # {"epochs": 3, "lr": 0.1, "depth": 4, "_sweep_idx": 1, "_sweep_params": {...}}.
    lr, depth = float(payload["lr"]), int(payload["depth"])
    if not 0 < lr < 1 or depth < 1:
        # stderr becomes the task's error; a non-zero exit fails the attempt.
        print("lr must be in (0, 1) and depth at least 1, got %r" % payload, file=sys.stderr)
        sys.exit(2)
    val_loss = train(lr, depth, int(payload.get("epochs", 3)))
    print("lr=%g depth=%d val_loss=%.4f" % (lr, depth, val_loss))
    result = {"lr": lr, "depth": depth, "val_loss": val_loss, "python": sys.version.split()[0]}
    with open(os.environ["SKIFF_TASK_RESULT"], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
