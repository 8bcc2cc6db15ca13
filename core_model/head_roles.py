"""What each attention head does, scored against the task's known answer (teacher forced, default masks).

Every task knows, for every output token, where its answer comes from (its ground truth `reads`, core_model.task),
so a cross attention head can be scored against the truth instead of being judged by eye. Self-attention heads are
scored on simple positional patterns, in the spirit of the head taxonomies of Voita et al. (2019) and Clark et al.
(2019).

Definitions (every score is a mean over query positions, each (sequence, position) pair counting once, pooled
over all N sequences; maps are the post-softmax weights of a teacher-forced pass with causal + padding masks):

- cross `alignment` ("reads where the answer comes from"): over every decoder position t that must produce an output
  symbol (not the one producing <eos>), the total weight its query puts on the task's `reads` positions for output
  t (source positions, one further right when the source is anchored by <bos>). For a task that copies (copy,
  reverse, sort, rotate, dedupe, ...) those are the positions holding the symbol due, all of them when it repeats,
  so ties count; for a task that computes (addition, running_sum, dyck_depth) they are what its algorithm reads at
  that step (a place's two digits and the place below, the new term, the bracket). Maps scored without their task
  (a training probe's recorded maps) fall back to the positions holding the symbol, the reads of every copying task.
- cross `first`: weight on source position 0; cross `broad`: normalised entropy (below), same queries.
- self attention (encoder and decoder) over every real query position q >= 1 (position 0 would make `self`,
  `previous` and `first` the same key): `self` = weight on key q, `previous` = weight on key q - 1, `first` =
  weight on key 0 (<bos> in the decoder), `eos_pad` = total weight on keys holding <eos> or <pad> (0 under the
  default padding mask; it flags a head parked on filler when masks are off), `broad` = the row's entropy over the
  keys the mask allows divided by log(number of those keys): 1 = uniform, 0 = one key.

A head's role is its highest-scoring one (first in the order above on a tie), except that a head is `other` when
that is `broad` with a score under BROAD_MIN, or when even its best score is under ROLE_MIN. Its rows are focused,
but on keys none of the patterns names (content, another offset, <eos>): "broad" would call a sharp map spread
out, and a pattern that holds a few percent of its weight would name a head that looks elsewhere. An `other`
head's score is its `broad` score. A score with no query to average over (e.g. an encoder given only one-symbol
sources) is 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from .model import ATTENTION_KINDS, Seq2SeqTransformer
from .tasks import Batch, TaskSpec, make_batch
from .vocab import BOS, EOS, N_SPECIALS, PAD

RoleName = Literal["alignment", "self", "previous", "first", "eos_pad", "broad", "other"]
SELF_ROLES: tuple[RoleName, ...] = ("self", "previous", "first", "eos_pad", "broad")
CROSS_ROLES: tuple[RoleName, ...] = ("alignment", "first", "broad")
ROLE_LABELS: dict[str, str] = {
    "alignment": "reads",  # the weight put where the task's answer comes from
    "self": "self",
    "previous": "prev",
    "first": "first/<bos>",
    "eos_pad": "<eos>/pad",
    "broad": "broad",
    "other": "other",
}
BROAD_MIN = 0.5  # normalised entropy a head's rows need, on average, for it to be called broad
ROLE_MIN = 0.25  # the least a head's best score may be for its pattern to name it (under it: other)


@dataclass(frozen=True)
class HeadRole:
    """One head's best role and every candidate score (role order as in SELF_ROLES / CROSS_ROLES)."""

    kind: str
    layer: int
    head: int
    role: RoleName
    score: float
    scores: tuple[tuple[RoleName, float], ...]

    @property
    def alignment(self) -> float | None:
        """The cross-attention alignment score; None for self attention."""
        return dict(self.scores).get("alignment") if self.kind == "cross" else None


def probe_sequences(task: TaskSpec, n: int, seed: int) -> Batch:
    """The N seeded task sequences every head analysis uses: the training distribution, runs of repeated symbols
    included (the same draw as `training.evaluate` with the same seed; `length_eval` draws uniform sources)."""
    return make_batch(task, n, torch.Generator().manual_seed(seed))


def probe_description(task: TaskSpec, n: int, seed: int) -> dict[str, object]:
    """Which sequences `probe_sequences` draws, stated with every number a head analysis reports."""
    if task.task in ("copy", "reverse", "sort"):  # their hard cases are runs of repeated symbols
        runs = f"{task.runs:.0%} of them runs of repeated symbols" if task.runs > 0 else "no runs of repeated symbols"
    else:  # docs/TASKS.md says what each task's hard cases are
        runs = f"{task.runs:.0%} of them the task's hard cases" if task.runs > 0 else "none of the task's hard cases"
    text = (
        f"{n} {task.task} sequences (seed {seed}), lengths {task.min_len} to {task.max_len}, drawn as in "
        f"training: {runs}; eval's length sweep draws uniform sources instead"
    )
    return {
        "n": n,
        "seed": seed,
        "task": task.task,
        "min_len": task.min_len,
        "max_len": task.max_len,
        "runs": task.runs,
        "anchored": task.anchored,
        "description": text,
    }


@torch.no_grad()
def head_roles(
    model: Seq2SeqTransformer, task: TaskSpec, *, n: int = 200, seed: int = 1234, device: torch.device | str = "cpu"
) -> tuple[HeadRole, ...]:
    """Score every head (kinds in ATTENTION_KINDS order, then layer, head) on N seeded sequences."""
    batch = probe_sequences(task, n, seed).to(device)
    was_training = model.training
    model.eval()
    try:
        maps = model(batch.src, batch.tgt_in, return_attention=True).attention.to_numpy()
    finally:
        model.train(was_training)
    stacked: dict[str, np.ndarray] = {kind: np.stack(maps.kind(kind)) for kind in ATTENTION_KINDS}  # (L, B, H, Tq, Tk)
    src, tgt_in, tgt_out = (t.cpu().numpy() for t in (batch.src, batch.tgt_in, batch.tgt_out))
    return roles_from_maps(stacked, src, tgt_in, tgt_out, reads=reads_mask(task, src, tgt_out))


def reads_mask(task: TaskSpec, src: np.ndarray, tgt_out: np.ndarray) -> np.ndarray:
    """(B, T, S) bool: True where encoder column s is one of the task's `reads` positions for output t of row b.

    src (B, S) encoder ids (anchors and padding included), tgt_out (B, T) labels. A row's source is its symbol ids
    (specials dropped); its reads are shifted by one when the task is anchored (<bos> takes column 0).
    """
    mask = np.zeros((*tgt_out.shape, src.shape[1]), dtype=bool)
    shift = 1 if task.anchored else 0
    for b, row in enumerate(src):
        symbols = [int(x) for x in row if x >= N_SPECIALS]
        for t, positions in enumerate(task.reads(symbols)):
            mask[b, t, [p + shift for p in positions]] = True
    return mask


def roles_from_maps(
    maps: Mapping[str, np.ndarray],
    src: np.ndarray,
    tgt_in: np.ndarray,
    tgt_out: np.ndarray,
    *,
    reads: np.ndarray | None = None,
) -> tuple[HeadRole, ...]:
    """Roles from raw maps, so recorded maps (training probes) can be scored without the model.

    Shape: maps[kind] (L, B, H, Tq, Tk) post-softmax weights; src (B, S), tgt_in / tgt_out (B, T) token ids;
    reads (B, T, S) the task's ground truth (`reads_mask`), or None for the source positions holding each output's
    symbol (a copying task's reads).
    """
    out: list[HeadRole] = []
    for kind in ATTENTION_KINDS:
        if kind not in maps:
            continue
        w = np.asarray(maps[kind], dtype=np.float64)
        table = (
            _cross_scores(w, src, tgt_out, reads)
            if kind == "cross"
            else _self_scores(w, src if kind == "encoder_self" else tgt_in, kind)
        )
        names = CROSS_ROLES if kind == "cross" else SELF_ROLES
        for layer in range(w.shape[0]):
            for head in range(w.shape[2]):
                scores = tuple((name, float(table[name][layer, head])) for name in names)
                best = max(scores, key=lambda item: item[1])  # max keeps the first on a tie
                if best[1] < ROLE_MIN or (best[0] == "broad" and best[1] < BROAD_MIN):
                    out.append(HeadRole(kind, layer, head, "other", dict(scores).get("broad", 0.0), scores))
                else:
                    out.append(HeadRole(kind, layer, head, best[0], best[1], scores))
    return tuple(out)


def _pooled(values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """values (L, B, H, Tq) averaged over the (b, q) pairs where queries (B, Tq) is True -> (L, H); 0 if none."""
    count = int(queries.sum())
    if count == 0:
        return np.zeros((values.shape[0], values.shape[2]))
    return (values * queries[None, :, None, :]).sum(axis=(1, 3)) / count


def _normalised_entropy(w: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """w (L, B, H, Tq, Tk), allowed (B, Tq, Tk) -> (L, B, H, Tq) entropy / log(#allowed); 0 where < 2 keys."""
    p = np.where(allowed[None, :, None], w, 0.0)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    n_keys = allowed.sum(-1)  # (B, Tq)
    denom = np.where(n_keys >= 2, np.log(np.maximum(n_keys, 2)), np.inf)
    return -plogp.sum(-1) / denom[None, :, None]


def _self_scores(w: np.ndarray, tokens: np.ndarray, kind: str) -> dict[str, np.ndarray]:
    """Self-attention role scores (L, H) for tokens (B, T): queries are real positions q >= 1."""
    _, b, _, t, _ = w.shape
    real = tokens != PAD  # (B, T)
    pos = np.arange(t)
    queries = real & (pos >= 1)[None, :]
    allowed = real[:, None, :] & np.ones((t, t), bool)[None]
    if kind == "decoder_self":
        allowed &= (pos[None, :] <= pos[:, None])[None]  # causal: key k <= query q
    diag = np.diagonal(w, axis1=-2, axis2=-1)  # (L, B, H, T)
    prev = np.concatenate((np.zeros_like(diag[..., :1]), np.diagonal(w, offset=-1, axis1=-2, axis2=-1)), axis=-1)
    filler = np.isin(tokens, (EOS, PAD))  # (B, T) keys holding <eos> or <pad>
    return {
        "self": _pooled(diag, queries),
        "previous": _pooled(prev, queries),
        "first": _pooled(w[..., 0], queries),
        "eos_pad": _pooled((w * filler[None, :, None, None, :]).sum(-1), queries),
        "broad": _pooled(_normalised_entropy(w, allowed), queries & (allowed.sum(-1) >= 2)),
    }


def _cross_scores(
    w: np.ndarray, src: np.ndarray, tgt_out: np.ndarray, reads: np.ndarray | None
) -> dict[str, np.ndarray]:
    """Cross-attention role scores (L, H): queries are decoder positions whose label is an output symbol."""
    queries = (tgt_out != PAD) & (tgt_out != EOS) & (tgt_out != BOS)  # (B, T)
    real_src = src != PAD  # (B, S)
    if reads is None:  # the positions holding the answer: a copying task's reads
        reads = (src[:, None, :] == tgt_out[:, :, None]) & real_src[:, None, :]  # (B, T, S)
    allowed = np.broadcast_to(real_src[:, None, :], reads.shape)
    return {
        "alignment": _pooled((w * reads[None, :, None]).sum(-1), queries),
        "first": _pooled(w[..., 0], queries),
        "broad": _pooled(_normalised_entropy(w, allowed), queries & (allowed.sum(-1) >= 2)),
    }
