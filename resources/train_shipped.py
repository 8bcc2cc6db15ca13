"""Train the shipped checkpoints: one per task of the library with RoPE, and copy, reverse and sort with
sinusoidal PE too.

Every model uses the default ModelConfig except `positional` (so the Model panel's PE switch finds it) and, for a
task with more symbols than the default vocabulary holds, `vocab_size`; each is trained by
`core_model.recipe.shipped_recipe`: the recipe `attention-playground train` and the Trainer tab default to (the
task's training lengths and size, a quarter of the sources its hard cases, anchored sources for RoPE), with more and
larger steps (docs/SHIPPED_MODELS.md).

    nice -n 10 python resources/train_shipped.py                  # all of them, one after the other (CPU, 1 thread)
    nice -n 10 python resources/train_shipped.py reverse_rope     # one of them
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path

STEPS = 4000  # core_model.recipe.SHIPPED_TRAINING's (recall: 8000, SHIPPED_MAIN); written out so --help needs no torch
HISTORY_EVERY = 10  # keep every 10th step of the training history: the files stay small
# Written out so --help needs no torch; tests/core/test_core_recipe.py holds it to the registry (core_model.tasks).
TASKS = (
    "copy",
    "reverse",
    "sort",
    "rotate1",
    "rotate2",
    "interleave",
    "copy_memory",
    "dedupe",
    "histogram",
    "most_frequent",
    "addition",
    "running_sum",
    "recall",
    "dyck_depth",
)
SINUSOIDAL_TOO = ("copy", "reverse", "sort")  # the Length lab's pairs: the same task with either encoding
NAMES = tuple(
    f"{task}_{pe}" for task in TASKS for pe in ("rope", "sinusoidal") if pe == "rope" or task in SINUSOIDAL_TOO
)
log = logging.getLogger("train_shipped")


def train_one(name: str, out_dir: Path, steps: int | None = None) -> Path:
    """Train one shipped model (`name` is TASK_PE) and save it as out_dir/NAME.pt."""
    import torch

    from core_model import ModelConfig, build_model
    from core_model.checkpoint import CheckpointExtra, save_checkpoint
    from core_model.recipe import shipped_recipe
    from core_model.training import Trainer

    task_name, pe = name.rsplit("_", 1)
    recipe = shipped_recipe(task_name, pe, steps)
    task, train = recipe.task, recipe.train
    torch.manual_seed(train.seed)
    vocab_size = max(ModelConfig().vocab_size, task.vocab_size)  # the default's, unless the task needs more
    model = build_model(ModelConfig(positional=pe, vocab_size=vocab_size), seed=train.seed)
    trainer = Trainer(model, task, train)
    start = time.perf_counter()
    for metrics in trainer.train_steps():
        if metrics.step % 250 == 0:
            log.info("%s step %d loss %.4f acc %.4f", name, metrics.step, metrics.loss, metrics.token_accuracy)
    history = [asdict(m) for m in trainer.history]
    polish = None
    if recipe.polish is not None:
        history += polish_model(model, task, recipe.polish, name, offset=len(history))
        polish = recipe.polish.to_dict()
    seconds = round(time.perf_counter() - start, 1)
    model.eval()
    extra = CheckpointExtra(task, train.to_dict(), polish_config=polish, final_metrics={"seconds": seconds})
    history = history[HISTORY_EVERY - 1 :: HISTORY_EVERY]
    path = out_dir / f"{name}.pt"
    save_checkpoint(path, model, history=history, extra=extra)
    log.info("%s saved to %s after %.0f s", name, path, seconds)
    return path


def polish_model(model, task, config, name: str, offset: int) -> list[dict]:
    """A second phase on the trained model (new data stream, lower peak rate); its history rows continue the steps."""
    from core_model.training import Trainer

    trainer = Trainer(model, task, config)
    rows = []
    for metrics in trainer.train_steps():
        rows.append({**asdict(metrics), "step": offset + metrics.step})
        if metrics.step % 250 == 0:
            log.info("%s polish step %d loss %.4f acc %.4f", name, metrics.step, metrics.loss, metrics.token_accuracy)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"which models (default: all): {', '.join(NAMES)}")
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--steps", type=int, default=None, help=f"main-phase steps (default: {STEPS}, recall 8000)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(NAMES))
    if unknown:
        parser.error(f"unknown model names {unknown}; choose from {', '.join(NAMES)}")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import torch

    torch.set_num_threads(1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for name in args.names or NAMES:
        train_one(name, args.out_dir, args.steps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
