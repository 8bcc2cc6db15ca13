"""What the Circuits tab says: how to read each table, what the circuits include, and each cell's tooltip.

The included/left-out line follows core_model/circuits.py's module docstring; keep the two in step.
"""

from __future__ import annotations

from core_model.circuits import HeadRef
from core_model.head_composition import CompositionBaseline

from .head_list import head_label

INTRO = (
    "Read each head's algorithm from its weights: QK says which token a query prefers to attend to, OV what "
    "attending to a token writes into the output logits, and composition which heads feed later heads. No input is run."
)
INCLUDED = (
    "Included: token embeddings × √d_model, the pre-norm gains folded in, the output layer. Left out: biases, "
    "positions (RoPE or sinusoids), the norms' centring and scaling. Encoder heads are read through the output "
    "layer as a lens."
)
COMPOSITION_CAPTION = (
    "Composition (Elhage et al. 2021): how much one head's output feeds a later head's query (Q), key (K) or value "
    "(V). × baseline = the score over the same score for random heads: near 1× is what random heads give."
)
SIDES = {  # (query tokens, key tokens) of each kind
    "encoder_self": ("source", "source"),
    "decoder_self": ("output", "output"),
    "cross": ("output", "source"),
}


def qk_caption(ref: HeadRef, scale: float) -> str:
    query, key = SIDES[ref.kind]
    return (
        f"<b>QK of {head_label(ref)}</b>: rows = query token ({query}), columns = key token ({key}); each cell the "
        f"score before softmax (hover for the exact value). Green = that query attends to that key more, red = less "
        f"(darkest ±{scale:.1f})."
    )


def ov_caption(ref: HeadRef, scale: float) -> str:
    attended = SIDES[ref.kind][1]
    return (
        f"<b>OV of {head_label(ref)}</b>: rows = token attended to ({attended}), columns = output token; each cell the "
        f"logit the head adds. A green diagonal = it copies the token it attends to, red = it suppresses it "
        f"(darkest ±{scale:.1f})."
    )


def qk_tip(ref: HeadRef, query: str, key: str, value: float) -> str:
    return f"{head_label(ref)} QK: query {query!r} gives key {key!r} the score {value:+.4f} (before softmax)"


def ov_tip(ref: HeadRef, attended: str, output: str, value: float) -> str:
    return f"{head_label(ref)} OV: attending to {attended!r} adds {value:+.4f} to the logit of {output!r}"


def composition_note(shown: int, links: int, above: int, baseline: CompositionBaseline) -> str:
    scores = ", ".join(f"{kind} {value:.3f}" for kind, value in baseline.scores.items())
    return (
        f"The {shown} strongest of {links} links ({above} above their baseline). Random baseline ({baseline.samples} "
        f"pairs of random heads, seed {baseline.seed}): {scores}. Select a link to see the head it feeds."
    )
