"""One source of a chosen length through a model: its greedy output and where the decoder looked (cross-attention).

The length lab shows this for the length a user clicks: past the trained positions a sinusoidal model's
alignment (the diagonal of a copy) breaks, while RoPE's relative offsets keep it, and a source of one repeated
symbol shows what a position-free encoder cannot tell apart (Press et al. 2022, ALiBi, Figure 1, made inspectable).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from .config import check_int
from .decoding import greedy_decode
from .inputs import decoder_input
from .length_eval import decode_steps, repeated_symbol_sources
from .model import Seq2SeqTransformer
from .tasks import TaskSpec, expected_output, make_batch
from .vocab import EOS, N_SPECIALS, PAD

SourceKind = str  # "random" or "repeated"
SOURCE_KINDS = ("random", "repeated")


def probe_source(task: TaskSpec, length: int, seed: int, kind: SourceKind = "random") -> list[int]:
    """Symbol ids of one valid source of `length` symbols: the task's random draw with `seed` (the first row of a
    batch drawn as evaluate_lengths draws), or its first hard source (`repeated_symbol_sources`: "0000" for copy,
    "999+100" for addition). A length the task does not take is a ValueError naming its rule."""
    check_int("length", length, 1)
    if kind not in SOURCE_KINDS:
        raise ValueError(f"source kind must be one of {list(SOURCE_KINDS)}, got {kind!r}")
    problem = task.definition.length_problem(length, task.n_symbols)
    if problem:
        raise ValueError(problem)
    if kind == "repeated":
        return repeated_symbol_sources(task, [length])[0]
    batch = make_batch(replace(task, runs=0.0), 1, torch.Generator().manual_seed(seed), length)
    return [int(t) for t in batch.src[0] if t >= N_SPECIALS]


@dataclass(frozen=True)
class LengthProbe:
    """A source, what the model should and did answer, and its cross-attention while answering."""

    source: tuple[int, ...]  # symbol ids
    encoder_input: tuple[int, ...]  # what the encoder reads: the symbols, or <bos> symbols <eos> when anchored
    expected: tuple[int, ...]  # target ids, without <eos>
    output: tuple[int, ...]  # greedy ids up to and including <eos> when it came
    cross: np.ndarray  # (n_layers, n_heads, T, S) float32: row t produced output[t]; columns: encoder_input

    @property
    def correct(self) -> bool:
        """Exact match: the expected tokens, then <eos>."""
        return self.output == (*self.expected, EOS)


@torch.no_grad()
def run_probe(
    model: Seq2SeqTransformer, task: TaskSpec, source: list[int], device: torch.device | str = "cpu"
) -> LengthProbe:
    """Greedy-decode `source`, then one teacher-forced pass over <bos> + that output to read the cross-attention.

    The maps are those of the model's own answer (not of the right one), so a wrong alignment shows where it went.
    """
    was_training = model.training
    model.eval()
    try:
        encoder_input = task.source_ids(list(source))
        src = torch.tensor([encoder_input], dtype=torch.long, device=device)  # (1, S)
        steps = decode_steps(task, len(source))
        out = greedy_decode(model, src, steps, n_tokens=len(task.vocabulary))[0]  # (T,)
        out = out[out != PAD]
        tgt = torch.tensor([decoder_input(out.tolist()[:-1])], device=device) if len(out) else None  # (1, T)
        if tgt is None:
            cross = np.zeros((len(model.decoder_layers), model.config.n_heads, 0, len(encoder_input)), np.float32)
        else:
            maps = model(src, tgt, return_attention=True).attention.cross  # per layer (1, H, T, S)
            cross = torch.stack([m[0] for m in maps]).to("cpu", torch.float32).numpy().copy()  # (L, H, T, S)
    finally:
        model.train(was_training)
    return LengthProbe(
        tuple(source),
        tuple(encoder_input),
        tuple(expected_output(task, list(source))),
        tuple(int(t) for t in out),
        cross,
    )
