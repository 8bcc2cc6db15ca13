"""What the Circuits tab says: how to read each table, what the circuits include, and each cell's tooltip.

The included/left-out line follows core_model/circuits.py's module docstring; keep the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core_model.circuits import HeadRef
from core_model.head_composition import CompositionScore

from .head_list import head_label

if TYPE_CHECKING:
    from visualizer.state.circuits import CircuitsFrame

INTRO = (
    "Read each head's algorithm from its weights: QK says which token a query prefers to attend to, OV what "
    "attending to a token writes into the output logits, and composition which heads feed later heads. No input is run."
)
INCLUDED = (
    "Direct path: each head on embeddings alone (× √d_model, pre-norm gains folded in). Left out: biases, the norms' "
    "centring and scaling, and what earlier layers write. Encoder heads' OV is a lens through the output layer."
)
COMPOSITION_CAPTION = (
    "Composition (Elhage et al. 2021): how much one head's output feeds a later head's query (Q), key (K) or value "
    "(V). Listed: links above 95 % of random heads' scores, sorted by × baseline (the score over random heads' mean "
    "score; near 1× is what random heads give)."
)
CENTRE_QK_TIP = (
    "Subtract from each QK row its mean over the symbol keys. Softmax ignores a constant added to a row, so what is "
    "left is what decides where the query looks"
)
CENTRE_OV_TIP = (
    "Subtract from each OV column its mean over the attended symbols, then from each row its mean over the output "
    "symbols. A column high whatever the head attends to is a constant push towards that output, not a reading of "
    "the attended token; a row's constant is ignored by the output softmax. The copying scores then score this table"
)
READING_TIP = (
    "Green = more, red = less, darkest at the largest size among the symbols (cells beyond it are drawn at full "
    "colour). Bold: each row's highest cell, the one softmax favours. <pad> is grey: the padding mask always hides it. "
    "Hover a cell for its exact value"
)
SIDES = {  # (query tokens, key tokens) of each kind
    "encoder_self": ("source", "source"),
    "decoder_self": ("output", "output"),
    "cross": ("output", "source"),
}


COMPACT_NOTE = " Too narrow for the numbers: hover a cell (● = row winner)."


def qk_caption(ref: HeadRef, scale: float, centred: bool = False, compact: bool = False) -> str:
    query, key = SIDES[ref.kind]
    what = "score before softmax, minus the row's mean" if centred else "score before softmax"
    return (
        f"<b>QK of {head_label(ref)}</b>: row = query token ({query}), column = key token ({key}), cell = {what} "
        f"(±{scale:.1f} darkest). Bold: each row's winner." + (COMPACT_NOTE if compact else "")
    )


def ov_caption(ref: HeadRef, scale: float, centred: bool = False, compact: bool = False) -> str:
    attended = SIDES[ref.kind][1]
    what = "logit the head adds, less its column's and row's means" if centred else "logit the head adds"
    return (
        f"<b>OV of {head_label(ref)}</b>: row = token attended to ({attended}), column = output token, cell = {what} "
        f"(±{scale:.1f} darkest). A bold green diagonal: the head copies what it reads."
        + (COMPACT_NOTE if compact else "")
    )


def position_caption(ref: HeadRef, scale: float, compact: bool) -> str:
    query, key = SIDES[ref.kind]
    hidden = " Grey: hidden by the causal mask." if ref.kind == "decoder_self" else ""
    numbers = COMPACT_NOTE if compact else ""
    return (
        f"<b>QK by position of {head_label(ref)}</b>: row = query position ({query}), column = key position ({key}), "
        f"cell = score averaged over the symbols (±{scale:.1f} darkest). 0 is &lt;bos&gt;; under RoPE each diagonal "
        f"is constant. On embeddings alone: in a real pass the offset a head prefers can differ (Show in Playground)."
        f"{hidden}{numbers}"
    )


def position_tip(ref: HeadRef, query: str, key: str, value: float) -> str:
    return (
        f"{head_label(ref)} QK by position: a query at position {query} gives a key at position {key} the score "
        f"{value:+.4f} (before softmax, averaged over the symbols)"
    )


def qk_tip(ref: HeadRef, centred: bool, query: str, key: str, value: float) -> str:
    shift = " after subtracting the row's mean" if centred else ""
    return f"{head_label(ref)} QK: query {query!r} gives key {key!r} the score {value:+.4f} (before softmax{shift})"


def ov_tip(ref: HeadRef, centred: bool, attended: str, output: str, value: float) -> str:
    shift = " after subtracting its column's and row's means" if centred else ""
    return f"{head_label(ref)} OV: attending to {attended!r} adds {value:+.4f} to the logit of {output!r}{shift}"


def composition_note(shown: Sequence[CompositionScore], frame: CircuitsFrame, only: HeadRef | None) -> str:
    baseline = frame.baseline
    kinds = baseline.scores
    random = ", ".join(
        f"{kind} {kinds[kind]:.3f} (95 %: {baseline.p95[kind]:.3f}, spread {baseline.spread[kind]:.3f})"
        for kind in kinds
    )
    which = f"{head_label(only)}'s links" if only is not None else "links"
    count = sum(1 for link in frame.composition if only in (None, link.source, link.target))
    return (
        f"The {len(shown)} strongest of {count} {which}; {frame.above_p95} of all {len(frame.composition)} lie above "
        f"95 % of random heads' scores. Random heads ({baseline.samples} pairs, seed {baseline.seed}), mean: "
        f"{random}. Select a link to see the head it feeds."
    )
