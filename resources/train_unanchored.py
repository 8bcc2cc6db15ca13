"""Train copy_rope_unanchored.pt: a small RoPE copy model that reads its source without <bos> ... <eos> anchors.

Lesson 5 opens it to show why the shipped RoPE models are anchored: without an anchor every position of a source of
one repeated symbol ("0000") enters the encoder as the same vector and leaves every layer as the same vector, so the
model cannot see the source's length and writes the wrong number of zeros, while it copies sources of different
symbols right (docs/SHIPPED_MODELS.md, "The repeated-symbol lesson"). It is trained like the first shipped RoPE copy
model: no anchors and no runs of repeated symbols. Smaller than the shipped models (d_model 32, d_ff 128) so the
file stays near 300 KB; about two minutes on one CPU thread.

    nice -n 10 python resources/train_unanchored.py
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path

NAME = "copy_rope_unanchored.pt"  # core_model.shipped.LESSON_CHECKPOINTS
STEPS = 1500
HISTORY_EVERY = 10  # keep every 10th step of the training history: the file stays small
log = logging.getLogger("train_unanchored")


def train(out: Path, steps: int = STEPS) -> Path:
    """Train the unanchored model and save it to `out`."""
    import torch

    from core_model import ModelConfig, build_model
    from core_model.checkpoint import CheckpointExtra, save_checkpoint
    from core_model.recipe import SHIPPED_TRAINING, recipe_task
    from core_model.train_config import default_recipe
    from core_model.training import Trainer

    task = recipe_task("copy", "rope", runs=0.0, anchored=False)
    config = default_recipe("rope", **{**SHIPPED_TRAINING, "steps": steps})
    torch.manual_seed(config.seed)
    model = build_model(ModelConfig(positional="rope", d_model=32, d_ff=128), seed=config.seed)
    trainer = Trainer(model, task, config)
    start = time.perf_counter()
    for metrics in trainer.train_steps():
        if metrics.step % 250 == 0:
            log.info("step %d loss %.4f acc %.4f", metrics.step, metrics.loss, metrics.token_accuracy)
    seconds = round(time.perf_counter() - start, 1)
    model.eval()
    extra = CheckpointExtra(task, config.to_dict(), final_metrics={"seconds": seconds})
    history = [asdict(m) for m in trainer.history][HISTORY_EVERY - 1 :: HISTORY_EVERY]
    save_checkpoint(out, model, history=history, extra=extra)
    log.info("saved %s after %.0f s", out, seconds)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / NAME)
    parser.add_argument("--steps", type=int, default=STEPS)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import torch

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    train(args.out, args.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
