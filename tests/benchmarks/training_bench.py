"""Training speed against torch.nn.Transformer, measured side by side in the same process.

Time counts optimisation steps only (batch sampling and the periodic greedy evaluations are excluded on both
sides), so the ratio compares the learning recipes and the per-step cost, not the evaluation code.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import torch
from torch import nn

from core_model import BOS, EOS, PAD, ModelConfig, build_model, sinusoidal_table
from core_model.tasks import TaskSpec, make_batch
from core_model.training import TrainConfig, Trainer, evaluate


class TorchSeq2Seq(nn.Module):
    """The baseline: embeddings * sqrt(d) + sinusoids -> nn.Transformer -> linear (the classic copy-task setup)."""

    def __init__(
        self,
        vocab: int,
        d_model: int = 64,
        nhead: int = 4,
        layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.1,
        max_len: int = 512,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.src_embed, self.tgt_embed = nn.Embedding(vocab, d_model), nn.Embedding(vocab, d_model)
        self.register_buffer("pe", sinusoidal_table(max_len, d_model).float(), persistent=False)
        self.transformer = nn.Transformer(d_model, nhead, layers, layers, d_ff, dropout, batch_first=True)
        self.out = nn.Linear(d_model, vocab)
        for table in (self.src_embed, self.tgt_embed):  # unit variance after the sqrt(d) scaling, as in ours
            nn.init.normal_(table.weight, std=d_model**-0.5)

    def _embed(self, table: nn.Embedding, x: torch.Tensor) -> torch.Tensor:
        return table(x) * math.sqrt(self.d_model) + self.pe[: x.shape[1]]

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=src.device)
        h = self.transformer(
            self._embed(self.src_embed, src),
            self._embed(self.tgt_embed, tgt),
            tgt_mask=causal,
            src_key_padding_mask=src == PAD,
            memory_key_padding_mask=src == PAD,
            tgt_key_padding_mask=tgt == PAD,
            tgt_is_causal=True,
        )
        return torch.log_softmax(self.out(h), dim=-1)


@torch.no_grad()
def baseline_exact_match(model: TorchSeq2Seq, task: TaskSpec, n: int, length: int, seed: int = 1234) -> float:
    """Greedy decoding by full recomputation (slow but simple; only used between timed steps)."""
    model.eval()
    batch = make_batch(task, n, torch.Generator().manual_seed(seed), length)
    ys = torch.full((n, 1), BOS, dtype=torch.long)
    for _ in range(batch.tgt_out.shape[1]):
        nxt = model(batch.src, ys)[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat((ys, nxt), dim=1)
    out = ys[:, 1:]
    done = torch.cumsum((out == EOS).long(), dim=1) - (out == EOS).long() > 0  # positions after the first <eos>
    out = out.masked_fill(done, PAD)
    model.train()
    return float((out == batch.tgt_out).all(dim=1).float().mean())


@dataclass
class RunResult:
    name: str
    steps: int | None  # steps to reach the target, None when it never did
    seconds: float  # optimisation time until then (or in total)
    step_ms: float
    tokens_per_s: float
    exact_match: float


def train_baseline(
    task: TaskSpec,
    *,
    max_steps: int = 1000,
    check_every: int = 25,
    target: float = 0.99,
    d_model: int = 64,
    batch_size: int = 80,
    seed: int = 0,
    eval_n: int = 1000,
    stop_at_target: bool = True,
) -> RunResult:
    """nn.Transformer (d_model 64, 4 heads, 2+2 layers, d_ff 256), Adam 1e-3, batch 80."""
    torch.manual_seed(seed)
    vocab = len(task.vocabulary)
    nhead = 4 if d_model == 64 else 8
    model = TorchSeq2Seq(vocab, d_model, nhead, 2 if d_model == 64 else 6, 4 * d_model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    spent, tokens, em = 0.0, 0, 0.0
    for step in range(1, max_steps + 1):
        batch = make_batch(task, batch_size, gen)
        start = time.perf_counter()
        loss = nn.functional.nll_loss(
            model(batch.src, batch.tgt_in).flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        spent += time.perf_counter() - start
        tokens += batch.n_tokens
        if stop_at_target and step % check_every == 0:
            em = baseline_exact_match(model, task, eval_n, task.max_len)
            if em >= target:
                return RunResult("nn.Transformer", step, spent, 1000 * spent / step, tokens / spent, em)
    return RunResult("nn.Transformer", None, spent, 1000 * spent / max_steps, tokens / spent, em)


def train_ours(
    task: TaskSpec,
    config: ModelConfig | None = None,
    train: TrainConfig | None = None,
    *,
    check_every: int = 25,
    target: float = 0.99,
    eval_n: int = 1000,
    stop_at_target: bool = True,
    name: str = "playground",
) -> RunResult:
    """The app's default model and recipe (or the given ones), with the same stopping rule as the baseline."""
    config = config or ModelConfig()
    train = train or TrainConfig()
    trainer = Trainer(build_model(config, seed=train.seed), task, train)
    em = 0.0
    for metrics in trainer.train_steps():
        if stop_at_target and metrics.step % check_every == 0:
            em = evaluate(trainer.model, task, n=eval_n, length=task.max_len).exact_match
            if em >= target:
                return _summary(name, trainer, metrics.step, em)
    return _summary(name, trainer, None, em)


def _summary(name: str, trainer: Trainer, steps: int | None, em: float) -> RunResult:
    hist = trainer.history
    spent = hist[-1].elapsed_s
    return RunResult(name, steps, spent, 1000 * spent / len(hist), sum(m.tokens for m in hist) / spent, em)


def step_cost(d_model: int, steps: int = 20, batch_size: int = 80) -> tuple[RunResult, RunResult]:
    """Per-step time and tokens/s of our model vs nn.Transformer at one width (no evaluation)."""
    task = TaskSpec()
    ours_cfg = replace(
        ModelConfig(),
        d_model=d_model,
        d_ff=4 * d_model,
        n_heads=4 if d_model == 64 else 8,
        n_encoder_layers=2 if d_model == 64 else 6,
        n_decoder_layers=2 if d_model == 64 else 6,
    )
    ours = train_ours(
        task,
        ours_cfg,
        replace(TrainConfig(), steps=steps, batch_size=batch_size),
        stop_at_target=False,
        name=f"playground d{d_model}",
    )
    base = train_baseline(task, max_steps=steps, d_model=d_model, batch_size=batch_size, stop_at_target=False)
    base.name = f"nn.Transformer d{d_model}"
    return ours, base
