"""Head importance by ablation: switch one head off at a time and measure what the model loses.

Follows the single-head ablation of Michel et al. (2019), "Are Sixteen Heads Really Better than One?": the head's
output is multiplied by 0 through `HeadGates` (before the output projection), every other head stays on, and the
model is scored on the same N seeded task sequences as the baseline, drawn as in training (`probe_sequences`: the
task's runs of repeated symbols included, unlike eval's uniform length sweep; `HeadAnalysis.sequences` says so).
Loss is the teacher-forced token cross-entropy (mean over non-pad labels, <eos> included); exact match is the
fraction of sequences that greedy decoding (among the task's tokens) reproduces exactly. Deltas are ablated minus
baseline, so an important head has delta_loss > 0 and delta_exact_match < 0. Default masks (causal decoder, padding
masked) throughout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .decoding import greedy_decode
from .head_roles import head_roles, probe_description, probe_sequences
from .model import ATTENTION_KINDS, HeadGates, Seq2SeqTransformer
from .tasks import Batch, TaskSpec
from .training import sequence_loss
from .vocab import PAD

MAX_SEQUENCES = 1_000  # every head is ablated on all N sequences at once: the CLI's --n and the Heads tab cap it


@dataclass(frozen=True)
class Score:
    """Teacher-forced loss and greedy exact match on one set of sequences."""

    loss: float
    exact_match: float


@dataclass(frozen=True)
class HeadAblation:
    """The score with one head switched off, and its difference from the baseline (ablated minus baseline)."""

    kind: str
    layer: int
    head: int
    score: Score
    delta_loss: float
    delta_exact_match: float


@dataclass(frozen=True)
class ImportanceReport:
    baseline: Score
    heads: tuple[HeadAblation, ...]  # kinds in ATTENTION_KINDS order, then layer, then head


def head_list(model: Seq2SeqTransformer) -> list[tuple[str, int, int]]:
    """(kind, layer, head) for every head, in report order."""
    cfg = model.config
    layers = {"encoder_self": cfg.n_encoder_layers, "decoder_self": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}
    return [(k, layer, h) for k in ATTENTION_KINDS for layer in range(layers[k]) for h in range(cfg.n_heads)]


def single_head_gates(model: Seq2SeqTransformer, kind: str, layer: int, head: int) -> HeadGates:
    """Every head on except (kind, layer, head)."""
    cfg = model.config
    device = next(model.parameters()).device
    n_layers = cfg.n_encoder_layers if kind == "encoder_self" else cfg.n_decoder_layers
    gates = torch.ones(n_layers, cfg.n_heads, device=device)
    gates[layer, head] = 0.0
    return HeadGates(**{kind: gates})


@torch.no_grad()
def score_model(
    model: Seq2SeqTransformer, batch: Batch, gates: HeadGates | None = None, n_tokens: int | None = None
) -> Score:
    """Loss and exact match of the model (with optional gates) on one batch; the model is left as it was.

    `n_tokens`: the task vocabulary's size, so greedy decoding chooses among the task's tokens (`choosable`).
    """
    was_training = model.training
    model.eval()
    try:
        log_probs = model(batch.src, batch.tgt_in, head_gates=gates).log_probs.float()
        loss = float(sequence_loss(log_probs, batch.tgt_out))
        width = batch.tgt_out.shape[1]
        out = greedy_decode(model, batch.src, width, head_gates=gates, n_tokens=n_tokens)
        out = F.pad(out, (0, max(0, width - out.shape[1])), value=PAD)[:, :width]
        keep = batch.tgt_out != PAD
        exact = int(((out == batch.tgt_out) | ~keep).all(dim=1).sum()) / batch.src.shape[0]
    finally:
        model.train(was_training)
    return Score(loss, exact)


def head_importance(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    *,
    n: int = 200,
    seed: int = 1234,
    device: torch.device | str = "cpu",
    progress: Callable[[int, int], None] | None = None,
) -> ImportanceReport:
    """Ablate each head in turn on N seeded sequences; progress(done, total) after each (raising Stop there ends
    the run with no report: core_model.stopping)."""
    batch = probe_sequences(task, n, seed).to(device)
    heads = head_list(model)
    total = len(heads) + 1
    n_tokens = len(task.vocabulary)
    baseline = score_model(model, batch, n_tokens=n_tokens)
    if progress is not None:
        progress(1, total)
    results = []
    for i, (kind, layer, head) in enumerate(heads):
        s = score_model(model, batch, single_head_gates(model, kind, layer, head), n_tokens)
        results.append(HeadAblation(kind, layer, head, s, s.loss - baseline.loss, s.exact_match - baseline.exact_match))
        if progress is not None:
            progress(i + 2, total)
    return ImportanceReport(baseline, tuple(results))


@dataclass(frozen=True)
class HeadSummary:
    """One head's role (head_roles) and ablation deltas together: one row of the CLI's and the GUI's table."""

    kind: str
    layer: int
    head: int
    role: str
    role_score: float
    alignment: float | None
    delta_loss: float
    delta_exact_match: float

    def to_dict(self) -> dict[str, object]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


@dataclass(frozen=True)
class HeadAnalysis:
    baseline: Score
    heads: tuple[HeadSummary, ...]
    sequences: dict[str, object] = field(default_factory=dict)  # probe_description: what every number is scored on

    def to_dict(self) -> dict[str, object]:
        """The `heads` verb's JSON object."""
        return {
            "baseline": {"loss": self.baseline.loss, "exact_match": self.baseline.exact_match},
            "sequences": dict(self.sequences),
            "heads": [h.to_dict() for h in self.heads],
        }


def analyse_heads(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    *,
    n: int = 200,
    seed: int = 1234,
    device: torch.device | str = "cpu",
    progress: Callable[[int, int], None] | None = None,
) -> HeadAnalysis:
    """Roles and importance of every head on the same N seeded sequences (what the CLI prints, the GUI draws)."""
    roles = {(r.kind, r.layer, r.head): r for r in head_roles(model, task, n=n, seed=seed, device=device)}
    report = head_importance(model, task, n=n, seed=seed, device=device, progress=progress)
    rows = []
    for a in report.heads:
        r = roles[(a.kind, a.layer, a.head)]
        rows.append(
            HeadSummary(a.kind, a.layer, a.head, r.role, r.score, r.alignment, a.delta_loss, a.delta_exact_match)
        )
    return HeadAnalysis(report.baseline, tuple(rows), probe_description(task, n, seed))
