"""Train a RoPE and a sinusoidal model side by side on one length range: the length lab's "train both now".

Both get the same architecture (the app's default) but for the positional encoding, the same batches and the same
seed, so any difference past the training range comes from how each encodes position.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .checkpoint import Checkpoint, CheckpointExtra
from .config import ModelConfig, PositionalKind
from .model import build_model
from .tasks import TaskSpec
from .training import TrainConfig, Trainer

REPORT_EVERY = 10  # steps between progress reports
PAIR: tuple[PositionalKind, PositionalKind] = ("rope", "sinusoidal")  # the order of train_pair's result


@dataclass(frozen=True)
class TrainProgress:
    """Steps done of both runs together, and a sentence for the progress bar."""

    done: int
    total: int
    text: str


def train_pair(
    task: TaskSpec,
    steps: int,
    seed: int,
    progress: Callable[[TrainProgress], None] | None = None,
    *,
    batch_size: int = 64,
    base: ModelConfig | None = None,
) -> tuple[Checkpoint, Checkpoint] | None:
    """(RoPE, sinusoidal) checkpoints in memory. `progress` every REPORT_EVERY steps and at each model's last;
    raising Stop there ends the training with no result (core_model.stopping)."""
    config = replace(base or ModelConfig(), vocab_size=task.vocab_size)
    train = TrainConfig(batch_size=batch_size, steps=steps, seed=seed, device="cpu")
    out = []
    for index, positional in enumerate(PAIR):
        model = build_model(replace(config, positional=positional), seed=seed)
        trainer = Trainer(model, task, train)
        for metrics in trainer.train_steps():
            if progress is not None and (metrics.step % REPORT_EVERY == 0 or metrics.step == steps):
                progress(
                    TrainProgress(
                        index * steps + metrics.step,
                        2 * steps,
                        f"Training {positional}: step {metrics.step} of {steps}, loss {metrics.loss:.3f}",
                    )
                )
        model.eval()
        state = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}
        out.append(Checkpoint(model.config, state, [], CheckpointExtra(task=task, train_config=train.to_dict())))
    return out[0], out[1]
