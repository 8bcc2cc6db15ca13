"""What the Circuits tab says: how to read each table, what the circuits include, and each cell's tooltip.

The included/left-out line follows core_model/circuits.py's module docstring; keep the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core_model.circuits import HeadCircuit, HeadRef
from core_model.head_composition import CompositionScore
from core_model.run_agreement import PathAgreement
from visualizer.widgets.causal.effect_tables import signed
from visualizer.widgets.common.styles import WARNING_TEXT

from .head_list import head_label

if TYPE_CHECKING:
    from visualizer.state.circuits import CircuitsFrame

INTRO = (
    "Read each head's algorithm from its weights: QK says which token a query prefers to attend to, OV what "
    "attending to a token writes into the output logits, and composition which heads feed later heads. "
    "No input is run here: QK by position sets the Playground's last run beside it."
)
INCLUDED = (
    "Direct path: each head on embeddings alone (× √d_model, pre-norm gains folded in). Left out: biases, the norms' "
    "centring and scaling (so compare cells within a table, not across), and what earlier layers write. Encoder "
    "heads' OV is a lens through the output layer."
)
COMPOSITION_CAPTION = (
    "Composition (Elhage et al. 2021): how much one head's output feeds a later head's query (Q), key (K) or value "
    "(V). Listed: links that stand out, above 95 % of random heads' scores and of the scores this model's own heads "
    "get where no path joins them; sorted by × baseline (the score over random heads' mean)."
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
    "colour). Bold: each row's highest cell, the one softmax favours. Grey: a token that never stands there (<pad>, "
    "which the padding masks hide; <eos> as a decoder input; <bos> as an output; <bos> and <eos> in a source that is "
    "not anchored). The sizes leave the norms' scaling out, so only comparisons within one table mean anything. "
    "Hover a cell for its exact value"
)
QK_TAB_TIPS = (
    "Which key token each query token prefers (positions left out); in brackets, the share of the head's choice among "
    "keys that moves with the key's symbol",
    "Which key position each query position prefers (symbols averaged), beside the head's map in the Playground's "
    "last run; in brackets, the share of the head's choice among keys that moves with the key's position",
)
SIDES = {  # (query tokens, key tokens) of each kind
    "encoder_self": ("source", "source"),
    "decoder_self": ("output", "output"),
    "cross": ("output", "source"),
}


COMPACT_NOTE = " Hover for numbers (● = row winner)."
UNITS = "one unit: a score of embeddings × √d_model that no norm has divided; compare cells within this table"


def qk_units(circuit: HeadCircuit) -> str:
    """What one unit of a QK table is: the run's norms divide each side, so their product puts a cell on the
    Playground's pre-softmax scale (core_model.circuit_units); UNITS alone where no norm sits before the head."""
    q, k = circuit.query_spread, circuit.key_spread
    if q != q or k != k:
        return UNITS
    return (
        "one unit: a score of embeddings × √d_model that no norm has divided; a run's norms divide a lone embedding "
        f"by about {q:.1f} (query) and {k:.1f} (key), so a cell ÷ {q * k:.0f} is on the Playground's pre-softmax scale"
    )


def ov_units(circuit: HeadCircuit) -> str:
    """What one unit of an OV table is: a logit, with the attended side's division by the norm left out."""
    k = circuit.key_spread
    divided = f" (a run's norm divides it by about {k:.1f})" if k == k else ""
    return (
        f"one unit: one logit, the attended embedding left undivided{divided} and the final norm's division left "
        "out; compare cells within this table"
    )


def heads_legend(centred: bool) -> str:
    table = "the centred OV table" if centred else "the raw OV table (Elhage et al.)"
    return (
        f"Copying: of {table}. Italic: encoder heads, read through the output layer as a lens. By pos.: how much the "
        "head picks keys by position. Click a header to sort."
    )


def qk_caption(ref: HeadRef, scale: float, centred: bool = False, compact: bool = False, units: str = UNITS) -> str:
    query, key = SIDES[ref.kind]
    what = "score before softmax, minus the row's mean over the symbols" if centred else "score before softmax"
    return (
        f"<b>QK of {head_label(ref)}</b>: row = query token ({query}), column = key token ({key}), cell = {what} "
        f"(±{scale:.1f} darkest; {units}). Bold: each row's winner." + (COMPACT_NOTE if compact else "")
    )


def ov_caption(
    ref: HeadRef, scale: float, centred: bool = False, compact: bool = False, diagonal: str = "", units: str = UNITS
) -> str:
    attended = SIDES[ref.kind][1]
    what = "logit the head adds, less its column's and row's means" if centred else "logit the head adds"
    return (
        f"<b>OV of {head_label(ref)}</b>: row = token attended to ({attended}), column = output token, cell = {what} "
        f"(±{scale:.1f} darkest; {units}). A green diagonal: it copies what it reads; red: it suppresses it."
        + (f" {diagonal}" if diagonal else "")
        + (COMPACT_NOTE if compact else "")
    )


def diagonal_line(circuit: HeadCircuit, centred: bool) -> str:
    """The OV figure a reader confirms on the table (its row winners) beside the copying score, which weighs the
    eigenvalues and so can be near +1 while a few rows are won elsewhere."""
    wins = circuit.centred_diagonal_wins if centred else circuit.diagonal_wins
    score = circuit.centred_copying_score if centred else circuit.copying_score
    return (
        f"Its own symbol wins {wins} of {circuit.symbol_rows} symbol rows; the copying score ({signed(score)}) weighs "
        "the eigenvalues, so large diagonal cells can outweigh rows won elsewhere."
    )


def first_position(side: str, anchored: bool) -> str:
    """What position 0 holds on a side: the decoder's input starts with <bos>, a source only when anchored."""
    return "&lt;bos&gt;" if side == "output" or anchored else "the first symbol"


def position_caption(
    ref: HeadRef,
    scale: float,
    compact: bool,
    anchored: bool = True,
    centred: bool = True,
    positional: str = "rope",
    units: str = UNITS,
    agreement: PathAgreement | None = None,
) -> str:
    query, key = SIDES[ref.kind]
    firsts = {first_position(query, anchored), first_position(key, anchored)}
    zero = (
        f"0 = {firsts.pop()}"
        if len(firsts) == 1
        else f"0 = {first_position(query, anchored)} (rows), {first_position(key, anchored)} (columns)"
    )
    what = "score, symbols averaged" + (", less the row's mean" if centred else "")
    diagonal = ""
    if positional == "rope":
        diagonal = (
            " RoPE: raw scores are constant along each diagonal." if centred else " Constant along each diagonal."
        )
    hidden = " Grey: causal mask." if ref.kind == "decoder_self" else ""
    numbers = " Hover for numbers." if compact else ""
    first = agreement_line(agreement) if agreement is not None else position_warning(ref)
    return (
        f"{first}<b>QK by position of {head_label(ref)}</b>: row = query position ({query}), column = "
        f"key position ({key}), {zero}; cell = {what} (±{scale:.1f}; {units}).{diagonal}{hidden}{numbers}"
    )


WARNING_STYLE = f"color: {WARNING_TEXT};"


def position_warning(ref: HeadRef) -> str:
    """What the position table leaves out, first and in amber: a row's strongest cell reads as "this head attends
    there", which a head whose inputs are not the embeddings need not do at all."""
    left_out = []
    if ref.kind == "cross":
        left_out.append("its keys here are symbol embeddings, whereas in a run they are the encoder's output")
    if ref.layer > 0:
        left_out.append("what earlier layers write is left out")
    if not left_out:
        return (
            "<p>It shows how much the head goes by position on the embeddings, norms and biases left out; its map "
            "on an input: Show in Playground.</p>"
        )
    return (
        f'<p style="{WARNING_STYLE}"><b>Not where this head looks in a run:</b> {"; ".join(left_out)}. A row\'s '
        "strongest cell need not be the position it attends; its real map: Show in Playground.</p>"
    )


def agreement_line(agreement: PathAgreement) -> str:
    """Which of the run's choices the direct path reproduces (core_model.run_agreement), first: a row's strongest
    cell here need not be where the head looks in a run."""
    return (
        f"<p><b>The direct path picks the run's key on {agreement.matched} of {agreement.queries} query "
        "positions</b> (bold in the run's map beside it); the rest comes from what it leaves out: earlier layers, "
        "the norms and biases.</p>"
    )


def position_tip(ref: HeadRef, centred: bool, query: str, key: str, value: float) -> str:
    shift = ", less the row's mean" if centred else ""
    return (
        f"{head_label(ref)} QK by position: a query at position {query} gives a key at position {key} the score "
        f"{value:+.4f} (before softmax, averaged over the symbols{shift})"
    )


def qk_tip(ref: HeadRef, centred: bool, query: str, key: str, value: float) -> str:
    shift = " after subtracting the row's mean over the symbols" if centred else ""
    return f"{head_label(ref)} QK: query {query!r} gives key {key!r} the score {value:+.4f} (before softmax{shift})"


def ov_tip(ref: HeadRef, centred: bool, attended: str, output: str, value: float) -> str:
    shift = " after subtracting its column's and row's means" if centred else ""
    return f"{head_label(ref)} OV: attending to {attended!r} adds {value:+.4f} to the logit of {output!r}{shift}"


def composition_note(shown: Sequence[CompositionScore], frame: CircuitsFrame, only: HeadRef | None) -> str:
    baseline, unlinked = frame.baseline, frame.unlinked
    random = ", ".join(f"{kind} {mean:.3f} (95 %: {baseline.p95[kind]:.3f})" for kind, mean in baseline.scores.items())
    own = ", ".join(f"{kind} {mean:.3f} (95 %: {unlinked.p95[kind]:.3f})" for kind, mean in unlinked.mean.items())
    mine, standing = frame.counts(only)
    which = f"{head_label(only)}'s {mine} links" if only is not None else f"all {mine} links"
    listed = f"the {len(shown)} strongest listed" if len(shown) < standing else "all listed"
    return (
        f"{standing} of {which} stand out ({listed}). Random heads ({baseline.samples} pairs, seed {baseline.seed}), "
        f"mean: {random}. This model's heads where no path joins them ({unlinked.pairs} pairs), mean: {own}. Select "
        "a link to see the head it feeds."
    )
