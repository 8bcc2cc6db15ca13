"""Greedy decoding and a step-by-step DecodeSession with a key/value cache.

Incremental decoding is causal by construction and generated targets hold no padding, so both decoders drop the
target padding mask; with the causal mask on, results equal full recomputation under the same MaskSpec.

Every decoder (greedy, the stepper, beam search, sampling) chooses among the task symbols and <eos> only:
`choosable` takes <pad> and <bos> out before the choice (as fairseq's generator does for <pad>), and with
`n_tokens` (the task vocabulary's size) also the spare ids of a model whose vocabulary is larger than its task's.
The model is never trained to emit any of them (the loss ignores <pad> labels; the others are never labels), yet its
softmax gives them some mass. Scores stay the model's own log-probabilities (softmax over its whole vocabulary,
not renormalised over the choices), so a decoder's score equals a teacher-forced pass over the same tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch
from torch import Tensor

from .layers import LayerCache
from .masks import MaskSpec
from .model import HeadGates, Seq2SeqTransformer
from .vocab import BOS, EOS, PAD

NEVER_CHOSEN = (PAD, BOS)  # token ids no decoder emits


def choosable(log_probs: Tensor, n_tokens: int | None = None) -> Tensor:
    """(..., V) log-probabilities with <pad>, <bos> and ids >= n_tokens at -inf: what a decoder chooses among."""
    out = log_probs.index_fill(-1, torch.tensor(NEVER_CHOSEN, device=log_probs.device), float("-inf"))
    if n_tokens is not None:
        out[..., n_tokens:] = float("-inf")
    return out


def max_output_len(model: Seq2SeqTransformer) -> int:
    """Most tokens a decoder may generate: <bos> plus the output must fit the model's max_len positions."""
    return model.config.max_len - 1


@torch.no_grad()
def greedy_decode(
    model: Seq2SeqTransformer,
    src: Tensor,
    max_new_tokens: int,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
    n_tokens: int | None = None,
    on_token: Callable[[int], None] | None = None,
) -> Tensor:
    """Argmax decoding with a KV cache, batched. src (B, S) -> (B, T) ids after <bos>, PAD after each <eos>.

    `n_tokens`: the task vocabulary's size; larger ids are never chosen (see `choosable`). `on_token(written)` after
    each step, for a caller that shows progress.
    """
    masks = replace(masks or MaskSpec(), decoder_padding=False)
    memory = model.encode(src, masks, head_gates).memory
    caches = [LayerCache() for _ in model.decoder_layers]
    token = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    out = []
    for pos in range(min(max_new_tokens, max_output_len(model))):
        hidden = model.decode(token, memory, src, masks, head_gates, q_pos=pos, caches=caches).hidden
        token = choosable(model.log_probs(hidden[:, -1:]), n_tokens).argmax(-1)  # (B, 1)
        token = token.masked_fill(done[:, None], PAD)
        out.append(token)
        done |= token[:, 0] == EOS
        if on_token is not None:
            on_token(pos + 1)
        if bool(done.all()):
            break
    return torch.cat(out, dim=1) if out else src.new_zeros((src.shape[0], 0))


def greedy_output(
    model: Seq2SeqTransformer,
    src: Sequence[int],
    n_tokens: int | None = None,
    max_new_tokens: int | None = None,
    on_token: Callable[[int], None] | None = None,
) -> list[int]:
    """What greedy decoding writes for one source (encoder ids), up to and including its <eos>; at most
    `max_new_tokens` tokens (default: as many as the model's positions allow), so an analysis bounds its work."""
    device = next(model.parameters()).device
    most = max_output_len(model) if max_new_tokens is None else max_new_tokens
    src_t = torch.tensor([list(src)], device=device)
    written = greedy_decode(model, src_t, most, n_tokens=n_tokens, on_token=on_token)
    tokens = written[0].tolist()
    return tokens[: tokens.index(EOS) + 1] if EOS in tokens else tokens


@dataclass(frozen=True)
class StepRecord:
    """One decoding step: the query at `position` (input token tokens[position]) chose `token`."""

    position: int
    token: int
    forced: bool
    log_probs: Tensor  # (V,)
    self_attention: tuple[Tensor, ...]  # per layer (H, position + 1): the new query's row
    cross_attention: tuple[Tensor, ...]  # per layer (H, S)

    def top_k(self, k: int, n_tokens: int | None = None) -> list[tuple[int, float]]:
        """The k most likely next tokens a decoder may choose (`choosable`), as (id, the model's probability)."""
        log_probs = choosable(self.log_probs, n_tokens)
        values, ids = log_probs.exp().topk(min(k, int(log_probs.isfinite().sum())))
        return [(int(i), float(p)) for i, p in zip(ids, values)]


@dataclass
class DecodeSession:
    """Walk the decoder one token at a time for a single source: step, force, back, run."""

    model: Seq2SeqTransformer
    src: Tensor  # (1, S)
    masks: MaskSpec = field(default_factory=MaskSpec)
    head_gates: HeadGates | None = None
    max_new_tokens: int | None = None
    n_tokens: int | None = None  # the task vocabulary's size: larger ids are never chosen (see `choosable`)

    def __post_init__(self) -> None:
        if self.src.dim() != 2 or self.src.shape[0] != 1:
            raise ValueError(
                f"DecodeSession decodes one source at a time: src must be (1, S), got {tuple(self.src.shape)}"
            )
        self.masks = replace(self.masks, decoder_padding=False)
        limit = max_output_len(self.model)
        self.max_new_tokens = limit if self.max_new_tokens is None else min(self.max_new_tokens, limit)
        with torch.no_grad():
            enc = self.model.encode(self.src, self.masks, self.head_gates, need_weights=True)
        self.memory, self.encoder_attention = enc.memory, enc.weights
        self.tokens: list[int] = [BOS]
        self.steps: list[StepRecord] = []
        self._caches = [LayerCache() for _ in self.model.decoder_layers]
        self._pending: StepRecord | None = None

    @property
    def finished(self) -> bool:
        """True after <eos> or once the length limit is reached."""
        limit = self.max_new_tokens  # an int once __post_init__ has resolved it
        return (len(self.tokens) > 1 and self.tokens[-1] == EOS) or (limit is not None and len(self.steps) >= limit)

    @property
    def output(self) -> list[int]:
        """Tokens chosen so far (without <bos>)."""
        return self.tokens[1:]

    @torch.no_grad()
    def peek(self) -> StepRecord:
        """The model's prediction for the next position without appending it (computed once, then reused).

        The returned record's `token` is the argmax over the choosable tokens; `forced` is False.
        """
        if self.finished:
            raise RuntimeError("decoding has finished; go back or reset first")
        pos = len(self.tokens) - 1
        if self._pending is not None and self._pending.position == pos:
            return self._pending
        inp = torch.tensor([[self.tokens[-1]]], device=self.src.device)
        dec = self.model.decode(
            inp, self.memory, self.src, self.masks, self.head_gates, need_weights=True, q_pos=pos, caches=self._caches
        )
        log_probs = self.model.log_probs(dec.hidden)[0, -1]  # (V,)
        self._pending = StepRecord(
            pos,
            int(choosable(log_probs, self.n_tokens).argmax()),
            False,
            log_probs,
            tuple(w[0, :, -1] for w in dec.self_weights),
            tuple(w[0, :, -1] for w in dec.cross_weights),
        )
        return self._pending

    def step(self, token: int | None = None) -> StepRecord:
        """Append the model's choice for the next position (or `token`, when forcing)."""
        pending = self.peek()
        if token is not None:
            vocab = pending.log_probs.shape[0]
            if not 0 <= int(token) < vocab:
                raise ValueError(f"token id {token} outside vocabulary of size {vocab}")
            pending = replace(pending, token=int(token), forced=True)
        self.tokens.append(pending.token)
        self.steps.append(pending)
        self._pending = None
        return pending

    def force(self, token: int) -> StepRecord:
        """Append `token` instead of the model's choice; decoding continues from it."""
        return self.step(token)

    def back(self) -> None:
        """Undo the last step (no-op at the start)."""
        if not self.steps:
            return
        self.steps.pop()
        self.tokens.pop()
        self._pending = None
        keep = len(self.tokens) - 1  # cached positions still valid: all but the new last input token
        for cache in self._caches:
            if cache.self_kv is not None:
                k, v = cache.self_kv
                cache.self_kv = (k[:, :, :keep], v[:, :, :keep]) if keep else None

    def run(self) -> list[StepRecord]:
        """Step until <eos> or the length limit."""
        new = []
        while not self.finished:
            new.append(self.step())
        return new

    def decoder_self_matrix(self, layer: int) -> Tensor:
        """Rows of every step stacked into (H, T, T), zeros above the diagonal."""
        t = len(self.steps)
        h = self.model.config.n_heads
        out = torch.zeros(h, t, t)
        for i, rec in enumerate(self.steps):
            out[:, i, : i + 1] = rec.self_attention[layer].float().cpu()
        return out

    def cross_matrix(self, layer: int) -> Tensor:
        """Cross-attention rows of every step: (H, T, S)."""
        if not self.steps:
            return torch.zeros(self.model.config.n_heads, 0, self.src.shape[1])
        return torch.stack([rec.cross_attention[layer].float().cpu() for rec in self.steps], dim=1)
