"""One source taken apart for the question "does attention explain the output?": the model's own greedy output,
three attributions of it to the source symbols, five attention views of the same run, and how far each attribution
agrees with each view (Spearman's rho and top-1 agreement), with the logit lens when asked for.

The baseline and occlusion range over the task's source alphabet (core_model.attribution), and occlusion tries only
the edits that keep the source one the task takes (`occlusion_edits`): replacing the "+" of an addition, giving a
recall two equal keys, or flipping one bracket of a balanced string is skipped, so a position no valid edit reaches
(every bracket of a dyck_depth source) has occlusion 0.

`analyse_source` is the one entry `attention-playground attribute` and the Causal tab's attribution both call, so
neither assembles the core calls itself and their numbers cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .analysis_budget import NO_KNOBS, Knobs, analysis_output, check_attribute
from .analysis_cost import attribution_cost_for, occlusion_chunk
from .attribution import Attribution, attribute
from .attribution_agreement import agreement, attention_views, top1_agreement
from .config import ModelConfig
from .logit_lens import LogitLens, logit_lens
from .model import Seq2SeqTransformer
from .tasks import TaskSpec, expected_output
from .vocab import N_SPECIALS

Progress = Callable[[int, int], None]  # (done, total); raising from it stops the work there


@dataclass(frozen=True)
class SourceAnalysis:
    """What `analyse_source` found for one source."""

    source: list[int]  # the encoder input, anchors included
    output: list[int]  # the model's greedy output, <eos> included where it wrote one
    attribution: Attribution
    views: dict[str, np.ndarray]  # attention view name -> (output positions, source positions)
    agreement: dict[str, dict[str, list[float | None]]]  # method -> view -> rho per output position
    top1: dict[str, dict[str, list[bool | None]]]  # method -> view -> same top symbol, per output position
    lens: LogitLens | None = None


def source_symbol_ids(task: TaskSpec) -> list[int]:
    """The ids of the task's source alphabet, in its order: what a source position may hold."""
    return task.vocabulary.encode(task.definition.source_alphabet(task.n_symbols))


def occlusion_edits(task: TaskSpec, source: Sequence[int]) -> list[list[int]]:
    """Per position of the encoder input `source` (anchors included), the source symbols occlusion puts there: every
    other symbol of the source alphabet that leaves a source the task takes (none at a special token)."""
    definition, n, vocab = task.definition, task.n_symbols, task.vocabulary
    alphabet = definition.source_alphabet(n)
    where = [j for j, t in enumerate(source) if t >= N_SPECIALS]  # encoder position of each source symbol
    tokens = vocab.tokens([source[j] for j in where])
    edits: list[list[int]] = [[] for _ in source]
    for i, j in enumerate(where):
        before, after = "".join(tokens[:i]), "".join(tokens[i + 1 :])
        kept = [s for s in alphabet if s != tokens[i] and definition.problem(before + s + after, n) is None]
        edits[j] = vocab.encode("".join(kept))
    return edits


def occlusion_passes(model: Seq2SeqTransformer, task: TaskSpec, source: Sequence[int], output_len: int) -> int:
    """How many batched passes occlusion makes on the encoder input `source`: every valid edit (`occlusion_edits`),
    in chunks the budget allows."""
    edits = sum(len(e) for e in occlusion_edits(task, source))
    return -(-edits // occlusion_chunk(model.config, len(source), output_len))


def check_source_analysis(
    config: ModelConfig, task: TaskSpec, ids: Sequence[int], ig_steps: int, knobs: Knobs = NO_KNOBS
) -> None:
    """BudgetError when the analysis of the source symbols `ids` is over the analysis budget: `analyse_source`'s
    own first check, for a front end that refuses the input where it was typed before it starts anything."""
    expected = len(expected_output(task, list(ids))) + 1  # with <eos>
    check_attribute(config, len(ids), len(task.source_ids(list(ids))), expected, ig_steps, knobs)


def analyse_source(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    ids: Sequence[int],
    ig_steps: int,
    *,
    lens: bool = False,
    knobs: Knobs = NO_KNOBS,
    decoding: Progress | None = None,
    progress: Progress | None = None,
    decoded: Callable[[list[int]], None] | None = None,
) -> SourceAnalysis:
    """Decode `ids` (the source's symbols) greedily, attribute the output to the source and compare with attention.

    Refused with BudgetError before any work when the analysis is over budget (`knobs` names what to lower), and
    during decoding when the model writes past what fits. `decoding(written, most)` after each decoded token;
    `decoded(output)` once the output is known; `progress(done, total)` after each output position's gradients and
    each occlusion pass (attribute's own counting). lens: add the logit lens of the same output."""
    vocab = task.vocabulary
    src = task.source_ids(list(ids))
    check_source_analysis(model.config, task, ids, ig_steps, knobs)
    expected = len(expected_output(task, list(ids))) + 1  # with <eos>
    cost_for = attribution_cost_for(model.config, len(src), len(ids), ig_steps)
    output = analysis_output(model, src, len(vocab), cost_for, expected, "attribution", knobs, decoding)
    if decoded is not None:
        decoded(output)
    found_lens = logit_lens(model, src, output, n_tokens=len(vocab)) if lens else None
    chunk = occlusion_chunk(model.config, len(src), len(output))
    result = attribute(
        model,
        src,
        output,
        source_symbol_ids(task),
        ig_steps=ig_steps,
        progress=progress,
        occlusion_chunk=chunk,
        replacements=occlusion_edits(task, src),
    )
    views = attention_views(model, src, output)
    symbols = [j for j, token in enumerate(src) if token in vocab.symbol_ids]
    return SourceAnalysis(
        src,
        output,
        result,
        views,
        agreement(result, views, symbols),
        top1_agreement(result, views, symbols),
        found_lens,
    )
