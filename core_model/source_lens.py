"""The logit lens of one source, from its symbols: the encoder input, the model's greedy output (decoded as far as
the lens's budget allows), the task's expected output and what each decoder layer would write.

`source_lens` is the entry `attention-playground lens` calls; the Causal tab reads the same lens through
`source_analysis.analyse_source(lens=True)`, which calls `logit_lens` on the same greedy output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from .analysis_budget import NO_KNOBS, Knobs, analysis_output, check_lens
from .analysis_cost import lens_cost
from .inputs import encoder_input
from .logit_lens import LogitLens, logit_lens
from .model import Seq2SeqTransformer
from .tasks import TaskSpec, expected_output


@dataclass(frozen=True)
class SourceLens:
    """What `source_lens` found for one source."""

    source: list[int]  # the encoder input: anchors and pads included
    output: list[int]  # the model's greedy output, <eos> included where it wrote one
    expected: list[int]  # the task's answer for the source's symbols, without <eos>
    lens: LogitLens


def source_lens(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    ids: Sequence[int],
    *,
    pads: int = 0,
    knobs: Knobs = NO_KNOBS,
    decoding: Callable[[int, int], None] | None = None,
) -> SourceLens:
    """The lens of the model's greedy output for the source symbols `ids` (with `pads` <pad> tokens after them).

    Refused with BudgetError before any work when the lens is over budget (`knobs` names what to lower), and during
    decoding when the model writes past what fits; `decoding(written, most)` after each decoded token."""
    src = encoder_input(list(ids), pads, anchored=task.anchored)
    expected = expected_output(task, list(ids))
    n_tokens = len(task.vocabulary)
    check_lens(model.config, len(ids), len(src), len(expected) + 1, knobs)  # + 1: <eos>
    cost_for = partial(lens_cost, model.config, len(src))
    output = analysis_output(model, src, n_tokens, cost_for, len(expected) + 1, "the logit lens", knobs, decoding)
    return SourceLens(src, output, expected, logit_lens(model, src, output, n_tokens=n_tokens))
