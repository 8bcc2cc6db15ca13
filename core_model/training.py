"""Training on the toy tasks: config, learning-rate schedules, and a Trainer that yields metrics (no UI)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypedDict, get_args

import torch
import torch.nn.functional as F

from .config import check_choice, check_float, check_int
from .decoding import greedy_decode
from .masks import MaskSpec
from .model import Seq2SeqTransformer
from .tasks import Batch, TaskSpec, make_batch
from .vocab import PAD

log = logging.getLogger(__name__)
ScheduleKind = Literal["noam", "constant", "warmup_cosine"]
DivergedQuantity = Literal["loss", "grad_norm"]
ADAM_BETAS = (0.9, 0.98)  # paper §5.3: beta1, beta2 (AdamW with weight_decay 0 is the paper's Adam)
ADAM_EPS = 1e-9  # paper §5.3
COSINE_FLOOR = 0.1  # warm-up + cosine decays to this fraction of lr, not to 0 (our choice, not the paper's)
# Any seed a checkpoint can store (every integer in one fits 64 bits, signed); torch.Generator.manual_seed takes
# them all. The CLI's --seed and the Trainer form offer fewer; a recipe from a file keeps its own.
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class TrainConfig:
    """How to train; defaults are the app's fast copy-task recipe."""

    batch_size: int = 32  # half of 64 costs ~0.65 of its step time and the copy task needs about as many steps
    steps: int = 300
    lr: float = 6e-3  # peak learning rate (constant, or the top of the warm-up); measured: RoPE copy 99 % in ~75 steps
    schedule: ScheduleKind = "warmup_cosine"  # "noam" is paper §5.3 and ignores lr (scale by noam_factor)
    warmup_steps: int = 20
    noam_factor: float = 1.0
    label_smoothing: float = 0.0  # paper §5.4 uses 0.1
    grad_clip: float | None = None  # max global grad norm, None = off (clipping at 1 halved copy-task speed)
    weight_decay: float = 0.0
    seed: int = 0
    device: str = "auto"
    mixed_precision: bool = True  # bf16 autocast, CUDA only

    def __post_init__(self) -> None:
        check_int("batch_size", self.batch_size, 1)
        check_int("steps", self.steps, 1)
        check_int("warmup_steps", self.warmup_steps, 0)
        check_int("seed", self.seed, 0, MAX_SEED)
        check_float("lr", self.lr, 1e-8, 10.0)
        check_float("noam_factor", self.noam_factor, 1e-6, 100.0)
        check_float("label_smoothing", self.label_smoothing, 0.0, 1.0, high_open=True)
        check_float("weight_decay", self.weight_decay, 0.0, 1.0)
        check_choice("schedule", self.schedule, get_args(ScheduleKind))
        if self.grad_clip is not None:
            check_float("grad_clip", self.grad_clip, 1e-6, 1e6)
        if self.schedule == "noam" and self.warmup_steps < 1:
            raise ValueError("warmup_steps must be >= 1 for the noam schedule")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# The default recipe per positional encoding, where it differs from TrainConfig's (which is RoPE's). Measured to
# 99 % copy exact match, 3 seeds, warm-up 20 + cosine over 300 steps: RoPE is fastest at lr 6e-3, batch 32 (~75
# steps). Sinusoidal took 275-300 steps at 6e-3 and 600+ at 1e-2; at 3e-3 it takes 225-250 at batch 32 and 225-275
# at batch 24, whose steps cost about three quarters as much. Batch 16 or 20, lr 2e-3, 2.5e-3 or 4e-3, a 150- or
# 600-step schedule and warm-up 5 or 50 were all slower.
DEFAULT_RECIPES: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {"rope": MappingProxyType({}), "sinusoidal": MappingProxyType({"lr": 3e-3, "batch_size": 24})}
)


def default_recipe(positional: str, **overrides: Any) -> TrainConfig:
    """The app's default recipe for a model with this positional encoding; `overrides` replace any field."""
    if positional not in DEFAULT_RECIPES:
        raise ValueError(f"positional must be one of {list(DEFAULT_RECIPES)}, got {positional!r}")
    return TrainConfig(**{**DEFAULT_RECIPES[positional], **overrides})


def learning_rate(config: TrainConfig, step: int, d_model: int) -> float:
    """LR at 1-based `step`. noam: factor * d^-0.5 * min(step^-0.5, step * warmup^-1.5) (paper §5.3)."""
    step = max(step, 1)
    if config.schedule == "noam":
        return config.noam_factor * d_model**-0.5 * min(step**-0.5, step * config.warmup_steps**-1.5)
    if config.schedule == "constant":
        return config.lr
    if step <= config.warmup_steps:
        return config.lr * step / config.warmup_steps
    frac = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    cosine = 0.5 * (1 + math.cos(math.pi * min(frac, 1.0)))  # 1 -> 0 over the steps after warm-up
    return config.lr * (COSINE_FLOOR + (1 - COSINE_FLOOR) * cosine)


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
    """AdamW with the paper's betas and eps; the fused kernel (one launch for every parameter) where torch has it."""
    kwargs = AdamWOptions(lr=config.lr, betas=ADAM_BETAS, eps=ADAM_EPS, weight_decay=config.weight_decay)
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
