"""Training on the toy tasks: a Trainer that yields metrics, evaluation and the optimiser (no UI).

What to train with (TrainConfig, the schedules, the default recipes) lives in `train_config` and is re-exported here.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import torch
import torch.nn.functional as F

from .config import check_int
from .decoding import greedy_decode
from .masks import MaskSpec
from .model import Seq2SeqTransformer
from .tasks import Batch, TaskSpec, make_batch
from .train_config import (
    ADAM_BETA2,
    ADAM_EPS,
    COSINE_FLOOR,
    DEFAULT_RECIPES,
    MAX_SEED,
    PAPER_ADAM_BETA1,
    ScheduleKind,
    TrainConfig,
    default_recipe,
    learning_rate,
)
from .vocab import PAD

__all__ = [  # the recipe's names too, so `from core_model.training import TrainConfig` keeps working
    "ADAM_BETA2",
    "ADAM_EPS",
    "COSINE_FLOOR",
    "DEFAULT_RECIPES",
    "MAX_SEED",
    "PAPER_ADAM_BETA1",
    "EvalResult",
    "ScheduleKind",
    "StepMetrics",
    "TrainConfig",
    "Trainer",
    "TrainingDiverged",
    "default_recipe",
    "evaluate",
    "gradient_norm",
    "learning_rate",
    "make_optimizer",
    "sequence_loss",
    "uses_autocast",
]

log = logging.getLogger(__name__)
DivergedQuantity = Literal["loss", "grad_norm"]


@dataclass(frozen=True)
class StepMetrics:
    """What one optimisation step reports (plain floats: safe to hand to any thread)."""

    step: int
    loss: float
    token_accuracy: float
    lr: float
    tokens_per_s: float
    grad_norm: float
    elapsed_s: float  # optimisation time so far (batch sampling and evaluation excluded)
    tokens: int = 0  # target tokens in this step's batch


class TrainingDiverged(RuntimeError):
    """The loss or the gradient norm became NaN or inf; the model keeps the weights from before the bad step.

    Structured so front ends word their own message: `step` is the 1-based step that failed, `quantity` what
    became non-finite, `value` its value.
    """

    def __init__(self, step: int, quantity: DivergedQuantity, value: float) -> None:
        self.step, self.quantity, self.value = step, quantity, value
        kept = f"weights kept from step {step - 1}" if quantity == "loss" else "weights kept"
        super().__init__(f"{self.what} at step {step}; {kept}")

    @property
    def what(self) -> str:
        """E.g. "loss became nan" or "gradient norm became inf"."""
        name = "loss" if self.quantity == "loss" else "gradient norm"
        return f"{name} became {self.value}"


@dataclass
class EvalResult:
    exact_match: float  # fraction of sequences decoded exactly right
    token_accuracy: float  # teacher-forced next-token accuracy
    loss: float  # teacher-forced cross-entropy
    n: int


def sequence_loss(log_probs: torch.Tensor, labels: torch.Tensor, smoothing: float = 0.0) -> torch.Tensor:
    """Mean token cross-entropy over non-pad labels, with optional label smoothing (paper §5.4)."""
    return (
        F.nll_loss(log_probs.flatten(0, 1), labels.flatten(), ignore_index=PAD)
        if smoothing == 0
        else (F.cross_entropy(log_probs.flatten(0, 1), labels.flatten(), ignore_index=PAD, label_smoothing=smoothing))
    )


def uses_autocast(config: TrainConfig, device: torch.device) -> bool:
    """bf16 autocast on CUDA only: on the CPU bf16 matmuls are slower than fp32 and gain nothing at toy sizes."""
    return config.mixed_precision and device.type == "cuda"


class AdamWOptions(TypedDict):
    """The AdamW settings shared by the fused and the foreach kernel."""

    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with the recipe's beta1 and the paper's beta2 and eps; the fused kernel (one launch for every
    parameter) where torch has it."""
    betas = (config.adam_beta1, ADAM_BETA2)
    kwargs = AdamWOptions(lr=config.lr, betas=betas, eps=ADAM_EPS, weight_decay=config.weight_decay)
    try:
        return torch.optim.AdamW(model.parameters(), fused=True, **kwargs)
    except (RuntimeError, TypeError):  # a device or dtype without a fused kernel
        return torch.optim.AdamW(model.parameters(), foreach=True, **kwargs)


def gradient_norm(model: torch.nn.Module, clip: float | None) -> torch.Tensor:
    """Global L2 norm of the gradients as a 0-d tensor (no host sync); clips them in place when `clip` is set."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if clip is not None:
        return torch.nn.utils.clip_grad_norm_(model.parameters(), clip, foreach=True)
    return torch.nn.utils.get_total_norm(grads, foreach=True)


@dataclass
class Trainer:
    """Trains a model on a task; `train_steps` yields StepMetrics and can be resumed where it stopped."""

    model: Seq2SeqTransformer
    task: TaskSpec
    config: TrainConfig
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    masks: MaskSpec = field(default_factory=MaskSpec)
    step: int = 0
    history: list[StepMetrics] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.task.check_vocab(self.model.config.vocab_size)
        self.model.to(self.device)
        self.generator = torch.Generator().manual_seed(self.config.seed)
        self.optimizer = make_optimizer(self.model, self.config)
        self._elapsed = 0.0

    def _autocast(self):
        return torch.autocast(
            device_type=self.device.type, dtype=torch.bfloat16, enabled=uses_autocast(self.config, self.device)
        )

    def _one_step(self, batch: Batch) -> StepMetrics:
        """One optimisation step; every number it reports is read from the device in one transfer at the end."""
        lr = learning_rate(self.config, self.step + 1, self.model.config.d_model)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        start = time.perf_counter()
        self.model.train()
        with self._autocast():
            log_probs = self.model(batch.src, batch.tgt_in, self.masks).log_probs.float()
        loss = sequence_loss(log_probs, batch.tgt_out, self.config.label_smoothing)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = gradient_norm(self.model, self.config.grad_clip)
        keep = batch.tgt_out != PAD
        correct = ((log_probs.detach().argmax(-1) == batch.tgt_out) & keep).sum()
        loss_value, norm_value, n_correct, n_tokens = torch.stack(  # the step's one host sync
            (loss.detach(), grad_norm.to(loss.dtype), correct.to(loss.dtype), keep.sum().to(loss.dtype))
        ).tolist()
        checked: tuple[tuple[DivergedQuantity, float], ...] = (("loss", loss_value), ("grad_norm", norm_value))
        for quantity, value in checked:
            if not math.isfinite(value):  # checked before the optimiser moves: the weights stay as they were
                self.optimizer.zero_grad(set_to_none=True)
                raise TrainingDiverged(self.step + 1, quantity, value)
        self.optimizer.step()
        self.step += 1
        took = time.perf_counter() - start
        self._elapsed += took
        n_tokens = int(n_tokens)
        return StepMetrics(
            self.step,
            loss_value,
            n_correct / max(1, n_tokens),
            lr,
            n_tokens / max(took, 1e-9),
            norm_value,
            self._elapsed,
            n_tokens,
        )

    def train_steps(self, n: int | None = None) -> Iterator[StepMetrics]:
        """Run up to n more steps (default: until config.steps), yielding metrics after each."""
        target = self.config.steps if n is None else self.step + n
        while self.step < target:
            batch = make_batch(self.task, self.config.batch_size, self.generator).to(self.device)
            metrics = self._one_step(batch)
            self.history.append(metrics)
            yield metrics

    @torch.no_grad()
    def evaluate(self, n: int = 1000, length: int | None = None, seed: int = 1234, batch_size: int = 500) -> EvalResult:
        """Greedy exact match and teacher-forced loss/accuracy on n fresh sequences."""
        return evaluate(
            self.model,
            self.task,
            n=n,
            length=length,
            seed=seed,
            device=self.device,
            masks=self.masks,
            batch_size=batch_size,
        )


@torch.no_grad()
def evaluate(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    *,
    n: int = 1000,
    length: int | None = None,
    seed: int = 1234,
    device: torch.device | str = "cpu",
    masks: MaskSpec | None = None,
    batch_size: int = 500,
) -> EvalResult:
    """Exact match by greedy decoding on n fresh sequences drawn with `seed` (independent of training's stream)."""
    check_int("n", n, 1)
    was_training = model.training
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    exact = correct = tokens = 0
    loss_sum = 0.0
    for start in range(0, n, batch_size):
        batch = make_batch(task, min(batch_size, n - start), gen, length).to(device)
        log_probs = model(batch.src, batch.tgt_in, masks).log_probs.float()
        keep = batch.tgt_out != PAD
        loss_sum += float(sequence_loss(log_probs, batch.tgt_out)) * int(keep.sum())
        correct += int(((log_probs.argmax(-1) == batch.tgt_out) & keep).sum())
        tokens += int(keep.sum())
        out = greedy_decode(model, batch.src, batch.tgt_out.shape[1], masks, n_tokens=len(task.vocabulary))
        width = batch.tgt_out.shape[1]
        out = F.pad(out, (0, max(0, width - out.shape[1])), value=PAD)[:, :width]
        exact += int(((out == batch.tgt_out) | ~keep).all(dim=1).sum())
    model.train(was_training)
    return EvalResult(exact / n, correct / max(tokens, 1), loss_sum / max(tokens, 1), n)
