"""Beam search beside `greedy_decode`: K hypotheses, a key/value cache per hypothesis, and the whole search tree.

Scoring and length (Graves 2012; Sutskever et al. 2014, §3.4): a hypothesis scores the sum of the model's
log-probabilities of its tokens (softmax over the whole vocabulary, as a teacher-forced pass gives them); the
candidates are the task symbols and <eos> only (`decoding.choosable`). There is no length penalty, so a longer
hypothesis never scores higher than its prefix. Finished hypotheses (ending in <eos>) keep their slot in the beam
and compete with the live ones by score; the search stops when all K slots hold finished hypotheses, or at the
length limit (the live ones are then returned unfinished). Width 1 is greedy decoding exactly.

Only a beam's own top-K continuations can ever enter the next beam, so those are the candidates expanded per beam;
every candidate becomes a node of the tree, kept or pruned. Beam search may still return a worse hypothesis than
greedy when greedy's prefix is pruned early (scores are not monotone in K); `test_core_beam_search` shows one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import torch
from torch import Tensor

from .config import check_int
from .decoding import choosable, max_output_len
from .inputs import decoder_input
from .layers import LayerCache
from .masks import MaskSpec
from .model import HeadGates, Seq2SeqTransformer
from .vocab import BOS, EOS

ROOT = -1  # parent of the first tokens (the <bos> root is not a node)
MAX_BEAM_WIDTH = 64  # hypotheses kept per step; each step scores width x vocabulary candidates


@dataclass(frozen=True)
class BeamNode:
    """One expanded candidate: `token` appended to the hypothesis ending at node `parent` (ROOT = <bos>)."""

    parent: int
    token: int
    step: int  # 0-based output position of `token`
    log_prob: float  # the model's log p(token | prefix)
    score: float  # cumulative log-probability of the hypothesis ending here
    kept: bool  # entered the beam (False: pruned)


@dataclass(frozen=True)
class Hypothesis:
    """A decoded sequence: tokens after <bos> (ending in <eos> when finished) and its summed log-probability."""

    tokens: tuple[int, ...]
    log_prob: float
    finished: bool
    node: int = ROOT  # the tree node of its last token (ROOT when empty or not from a tree)
    token_log_probs: tuple[float, ...] = ()  # each token's log p as the decoder saw it; they add up to log_prob


@dataclass(frozen=True)
class BeamResult:
    """Final hypotheses, best first, and every node expanded on the way."""

    hypotheses: tuple[Hypothesis, ...]
    nodes: tuple[BeamNode, ...]
    width: int

    @property
    def best(self) -> Hypothesis:
        return self.hypotheses[0]

    def path(self, node: int) -> list[int]:
        """Node indices from the first token to `node`."""
        out = []
        while node != ROOT:
            out.append(node)
            node = self.nodes[node].parent
        return out[::-1]


class Scorer(Protocol):
    """Next-token log-probabilities for live hypotheses; `rows` picks which previous rows they continue."""

    def __call__(self, rows: Tensor, tokens: Tensor, position: int) -> Tensor:  # (n,), (n,) -> (n, V)
        ...


class CachedScorer:
    """The model as a Scorer: encodes once, keeps one KV cache row per hypothesis and reorders it on selection.

    Tokens a decoder never chooses (`decoding.choosable`; `n_tokens` is the task vocabulary's size) score -inf.
    """

    def __init__(
        self,
        model: Seq2SeqTransformer,
        src: Tensor,
        masks: MaskSpec | None = None,
        head_gates: HeadGates | None = None,
        n_tokens: int | None = None,
    ) -> None:
        if src.dim() != 2 or src.shape[0] != 1:
            raise ValueError(f"beam search decodes one source at a time: src must be (1, S), got {tuple(src.shape)}")
        self.model, self.src, self.gates, self.n_tokens = model, src, head_gates, n_tokens
        self.masks = replace(masks or MaskSpec(), decoder_padding=False)  # as greedy_decode: generated, no padding
        self.memory = model.encode(src, self.masks, head_gates).memory  # (1, S, d)
        self.caches = [LayerCache() for _ in model.decoder_layers]

    def __call__(self, rows: Tensor, tokens: Tensor, position: int) -> Tensor:
        for cache in self.caches:  # row i of the new batch continues row rows[i] of the previous one
            if cache.self_kv is not None and cache.cross_kv is not None:  # the decoder sets both at once
                cache.self_kv = _kv_rows(cache.self_kv, rows)
                cache.cross_kv = _kv_rows(cache.cross_kv, rows)
        n = tokens.shape[0]
        memory, src = self.memory.expand(n, -1, -1), self.src.expand(n, -1)
        hidden = self.model.decode(
            tokens[:, None], memory, src, self.masks, self.gates, q_pos=position, caches=self.caches
        ).hidden  # (n, 1, d)
        return choosable(self.model.log_probs(hidden)[:, -1], self.n_tokens)  # (n, V)


def _kv_rows(kv: tuple[Tensor, Tensor], rows: Tensor) -> tuple[Tensor, Tensor]:
    """Keys and values of the chosen batch rows, in the order of `rows`."""
    return kv[0].index_select(0, rows), kv[1].index_select(0, rows)


@dataclass
class _Slot:
    tokens: tuple[int, ...]
    score: float
    node: int
    row: int  # row in the scorer's batch (live slots only)
    steps: tuple[float, ...] = ()  # each token's log-probability

    @property
    def finished(self) -> bool:
        return bool(self.tokens) and self.tokens[-1] == EOS


@torch.no_grad()
def beam_search_with(
    scorer: Scorer,
    width: int,
    max_new_tokens: int,
    device: torch.device | str = "cpu",
    on_step: Callable[[int], None] | None = None,
) -> BeamResult:
    """Beam search over any Scorer (the model's, or a table in a test); see the module docstring for the rules.

    `on_step(position)` runs before each step: a front end reports progress there, or raises to cancel.
    A candidate the scorer gives -inf (a token never chosen) is neither expanded nor put in the tree.
    """
    if width < 1:
        raise ValueError(f"width must be >= 1, got {width}")
    nodes: list[BeamNode] = []
    beam = [_Slot((), 0.0, ROOT, 0)]
    rows = torch.zeros(1, dtype=torch.long, device=device)
    for pos in range(max_new_tokens):
        live = [s for s in beam if not s.finished]
        if not live:
            break
        if on_step is not None:
            on_step(pos)
        last = torch.tensor([s.tokens[-1] if s.tokens else BOS for s in live], device=device)
        log_probs = scorer(rows, last, pos).double()  # (n_live, V), row i = live[i]
        top_lp, top_ids = log_probs.topk(min(width, log_probs.shape[1]), dim=-1)  # per-beam candidates
        pool = [s for s in beam if s.finished]
        first = len(nodes)
        for i, slot in enumerate(live):
            for lp, tok in zip(top_lp[i].tolist(), top_ids[i].tolist()):
                if lp == float("-inf"):
                    continue
                nodes.append(BeamNode(slot.node, tok, pos, lp, slot.score + lp, False))
                pool.append(_Slot(slot.tokens + (tok,), slot.score + lp, len(nodes) - 1, i, slot.steps + (lp,)))
        beam = sorted(pool, key=lambda s: -s.score)[:width]  # stable: ties keep the earlier candidate
        for s in beam:
            if s.node >= first:
                nodes[s.node] = replace(nodes[s.node], kept=True)
        live_next = [s for s in beam if not s.finished]
        rows = torch.tensor([s.row for s in live_next], dtype=torch.long, device=device)
        for i, s in enumerate(live_next):
            s.row = i
    hyps = tuple(
        Hypothesis(s.tokens, s.score, s.finished, s.node, s.steps) for s in sorted(beam, key=lambda s: -s.score)
    )
    return BeamResult(hyps, tuple(nodes), width)


def beam_search(
    model: Seq2SeqTransformer,
    src: Tensor,
    width: int,
    max_new_tokens: int | None = None,
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
    on_step: Callable[[int], None] | None = None,
    n_tokens: int | None = None,
) -> BeamResult:
    """Beam search of width K for one source (1, S); K = 1 equals `greedy_decode` (with the same `n_tokens`).

    Returns every final hypothesis (best first, summed log-probabilities) and the search tree for the view;
    `n_tokens` is the task vocabulary's size (larger ids are never chosen).
    """
    check_int("width", width, 1, MAX_BEAM_WIDTH)
    limit = max_output_len(model)
    steps = limit if max_new_tokens is None else min(max_new_tokens, limit)
    with torch.no_grad():
        scorer = CachedScorer(model, src, masks, head_gates, n_tokens)
        return beam_search_with(scorer, width, steps, src.device, on_step)


def sequence_log_prob(
    model: Seq2SeqTransformer,
    src: Tensor,
    tokens: list[int] | tuple[int, ...],
    masks: MaskSpec | None = None,
    head_gates: HeadGates | None = None,
) -> tuple[float, ...]:
    """Teacher-forced log-probability of each token of one output (after <bos>): one full forward pass."""
    if not tokens:
        return ()
    masks = replace(masks or MaskSpec(), decoder_padding=False)
    tgt = torch.tensor([decoder_input(tokens[:-1])], device=src.device)
    with torch.no_grad():
        lp = model(src, tgt, masks, head_gates).log_probs[0]  # (T, V)
    return tuple(float(lp[i, t]) for i, t in enumerate(tokens))
