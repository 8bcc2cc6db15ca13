"""Sampling beside `greedy_decode`: temperature, top-k and top-p (nucleus) with a caller's torch.Generator.

The filters apply in the usual order (temperature, then top-k, then top-p; as in Holtzman et al. 2020 and most
libraries), to the task symbols and <eos> only: <pad>, <bos> and spare ids are out before the softmax
(`decoding.choosable`). A sample's reported log-probability is the model's own (softmax over its whole vocabulary),
untempered, unfiltered and not renormalised, so it equals a teacher-forced pass and samples and beam hypotheses are
scored on one scale.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from .beam_search import Hypothesis
from .config import check_int
from .decoding import choosable, max_output_len
from .layers import LayerCache
from .masks import MaskSpec
from .model import HeadGates, Seq2SeqTransformer
from .vocab import BOS, EOS, PAD

MAX_SAMPLES = 256  # drawn as one batch with a KV cache each


@dataclass(frozen=True)
class SamplingConfig:
    """How to turn the model's distribution into the one sampled from."""

    temperature: float = 1.0  # > 0; below 1 sharpens, above 1 flattens
    top_k: int | None = None  # keep the k most likely tokens (None: all)
    top_p: float | None = None  # keep the smallest most-likely set with mass >= p, in (0, 1] (None: all)

    def __post_init__(self) -> None:
        if not (
            isinstance(self.temperature, (int, float)) and self.temperature > 0 and self.temperature < float("inf")
        ):
            raise ValueError(f"temperature must be a finite number > 0, got {self.temperature!r}")
        if self.top_k is not None:
            check_int("top_k", self.top_k, 1)
        if self.top_p is not None and not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")


def filtered_distribution(log_probs: Tensor, config: SamplingConfig) -> Tensor:
    """The distribution sampled from: (..., V) log-probabilities -> (..., V) probabilities summing to 1.

    Tokens at -inf (never chosen) get probability 0 and are never among the top k.
    """
    logits = log_probs / config.temperature
    if config.top_k is not None and config.top_k < logits.shape[-1]:
        kth = logits.topk(config.top_k, dim=-1).values[..., -1:]  # (..., 1); -inf when fewer than k are finite
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if config.top_p is not None and config.top_p < 1:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        before = sorted_p.cumsum(-1) - sorted_p  # mass of the more likely tokens
        drop_sorted = before >= config.top_p  # the first token is always kept (before = 0)
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


@torch.no_grad()
def sample_decode(
    model: Seq2SeqTransformer,
    src: Tensor,
    n_samples: int,
    config: SamplingConfig,
    generator: torch.Generator,
    max_new_tokens: int | None = None,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
    on_step: Callable[[int], None] | None = None,
    n_tokens: int | None = None,
) -> tuple[Hypothesis, ...]:
    """Draw n samples for one source (1, S), batched with a KV cache; the same generator state gives the same samples.

    `on_step(position)` runs before each step (progress, or raise to cancel); `n_tokens` is the task vocabulary's
    size (larger ids are never drawn).
    """
    check_int("n_samples", n_samples, 1, MAX_SAMPLES)
    if src.dim() != 2 or src.shape[0] != 1:
        raise ValueError(f"sampling decodes one source at a time: src must be (1, S), got {tuple(src.shape)}")
    limit = max_output_len(model)
    steps = limit if max_new_tokens is None else min(max_new_tokens, limit)
    masks = replace(masks or MaskSpec(), decoder_padding=False)
    src_n = src.expand(n_samples, -1)
    memory = model.encode(src_n, masks, head_gates).memory
    caches = [LayerCache() for _ in model.decoder_layers]
    token = torch.full((n_samples, 1), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(n_samples, dtype=torch.bool, device=src.device)
    scores = torch.zeros(n_samples, dtype=torch.float64, device=src.device)
    out, steps_lp = [], []
    for pos in range(steps):
        if on_step is not None:
            on_step(pos)
        hidden = model.decode(token, memory, src_n, masks, head_gates, q_pos=pos, caches=caches).hidden
        log_probs = choosable(model.log_probs(hidden[:, -1]), n_tokens).double()  # (N, V)
        probs = filtered_distribution(log_probs, config)
        token = torch.multinomial(probs, 1, generator=generator)  # (N, 1)
        chosen = log_probs.gather(1, token)[:, 0].masked_fill(done, 0.0)
        scores += chosen
        token = token.masked_fill(done[:, None], PAD)
        out.append(token)
        steps_lp.append(chosen)
        done |= token[:, 0] == EOS
        if bool(done.all()):
            break
    ids = torch.cat(out, dim=1).tolist() if out else [[] for _ in range(n_samples)]
    per_token = torch.stack(steps_lp, dim=1).tolist() if steps_lp else [[] for _ in range(n_samples)]  # (N, T)
    hyps = []
    for row, lps, score in zip(ids, per_token, scores.tolist()):
        toks = tuple(row[: row.index(EOS) + 1]) if EOS in row else tuple(row)  # PAD only fills after <eos>
        hyps.append(Hypothesis(toks, score, EOS in toks, token_log_probs=tuple(lps[: len(toks)])))
    return tuple(hyps)
