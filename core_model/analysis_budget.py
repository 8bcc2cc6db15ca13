"""The budget of the analyses: what each would hold at its peak and how much arithmetic it does, from the model's
config and the inputs alone, checked before anything is allocated.

Every option has its range and every model size its cap (config.MAX_*), yet their products can still ask for
gigabytes or hours: circuits over a 1,024-token vocabulary, patching on a 4,094-symbol source, attribution at 254
symbols with 512 integrated-gradient steps. Each `check_*` here estimates its analysis (memory in bytes, work in
multiply-adds), refuses with BudgetError when either is over its cap, and says the numbers and the largest values of
the knobs that fit. The headless verbs and the window's states call the same function, so both refuse the same
inputs in the same sentence; `Knobs` names the knobs as the caller's user knows them ("--source" or "the source"),
and a knob without a name is never suggested.

The estimates follow the arithmetic of one pass (`pass_cost`): per row, every projection, feed-forward and attention
product of each layer, plus the output layer; memory is one layer's transient attention maps and activations (no
gradient) or every layer's kept for the backward pass. They are deliberately round: their job is to tell a run of
seconds from one of many minutes, and hundreds of megabytes from many gigabytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .config import ModelConfig
from .vocab import EOS, N_SPECIALS

if TYPE_CHECKING:
    from .model import Seq2SeqTransformer

MAX_BYTES = 1_000_000_000  # peak memory an analysis may ask for: 1 GB beside the app and the model itself
MAX_WORK = 500_000_000_000  # multiply-adds: about a minute on one CPU thread (~9 billion a second measured here)
FLOAT = 4  # bytes of one float32 activation
DOUBLE = 8  # bytes of one float64 circuit entry
# One entry of a circuit table, as `circuits` prints it: the float64 array, the raw and centred copies as Python lists
# of floats (8 + 24 bytes each) and their JSON text (~20 characters each).
TABLE_ENTRY_BYTES = 2 * DOUBLE + 4 * 32 + 4 * 20
LINK_BYTES = 800  # one composition score: its record, its dict of two head dicts and its JSON line
UNLINKED_BYTES = 3 * 32  # one unlinked pair: a float per composition type in a Python list
EIGEN_WORK = 10  # multiply-adds per n^3 of one general eigenvalue decomposition (Hessenberg QR, roughly)
# What one layer's call costs beyond its arithmetic (a few dozen tensor operations, ~1 ms measured here), in
# multiply-adds at the rate MAX_WORK assumes: it is what a narrow model's token-by-token decoding spends its time on.
LAYER_CALL_WORK = 10_000_000


class BudgetError(ValueError):
    """An analysis that would need more memory or work than an analysis may: one sentence with the numbers and
    what fits, for a command's stderr or under the field a person typed in."""

    @property
    def sentence(self) -> str:
        """The message as a window shows it: capitalised, with a full stop."""
        text = str(self)
        return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


@dataclass(frozen=True)
class Cost:
    """Peak memory in bytes and work in multiply-adds."""

    bytes: int
    work: int

    def __add__(self, other: Cost) -> Cost:
        """Two parts whose results are held together: both memory and work add up."""
        return Cost(self.bytes + other.bytes, self.work + other.work)

    def then(self, other: Cost) -> Cost:
        """Two parts run one after the other: work adds up, memory is the larger peak."""
        return Cost(max(self.bytes, other.bytes), self.work + other.work)

    @property
    def fits(self) -> bool:
        return self.bytes <= MAX_BYTES and self.work <= MAX_WORK


@dataclass(frozen=True)
class Knobs:
    """The knobs a caller lets its user turn, as that user knows them; None: not offered, never suggested."""

    source: str | None = None  # "--source", "--clean", "the source"
    ig_steps: str | None = None  # "--ig-steps", "IG steps"
    positions: str | None = None  # "--positions"
    samples: str | None = None  # "--baseline-samples"


def pass_cost(config: ModelConfig, rows: int, src_len: int, tgt_len: int, *, grad: bool = False) -> Cost:
    """One forward pass of `rows` sequences (src_len encoder and tgt_len decoder positions); with `grad`, the
    backward pass too (about twice the forward's work) and every layer's activations kept for it."""
    d, ff, h, s, t = config.d_model, config.d_ff, config.n_heads, src_len, tgt_len
    enc_layer = s * (4 * d * d + 2 * d * ff) + 2 * s * s * d  # q, k, v, o and the feed-forward; QK^T and AV
    dec_layer = t * (6 * d * d + 2 * d * ff) + 2 * s * d * d + 2 * t * t * d + 2 * t * s * d  # self, cross, ff
    output = t * d * config.vocab_size  # the output layer
    work = rows * (config.n_encoder_layers * enc_layer + config.n_decoder_layers * dec_layer + output)
    work += (config.n_encoder_layers + config.n_decoder_layers) * LAYER_CALL_WORK
    enc_floats = 2 * h * s * s + s * (6 * d + 2 * ff)  # scores and weights, and the activations around them
    dec_floats = 2 * h * (t * t + t * s) + t * (10 * d + 2 * ff)
    logits = 2 * t * config.vocab_size
    if grad:
        floats = config.n_encoder_layers * enc_floats + config.n_decoder_layers * dec_floats + logits
        return Cost(rows * floats * FLOAT, 3 * work)
    return Cost(rows * max(enc_floats, dec_floats, logits) * FLOAT, work)


def most_that_fit(cost_for: Callable[[int], Cost], low: int, high: int) -> int | None:
    """The largest n in [low, high] whose cost fits (costs grow with n); None when not even `low` does."""
    if high < low or not cost_for(low).fits:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if cost_for(middle).fits else (low, middle - 1)
    return low


def check(cost: Cost, what: str, fixes: list[str], stuck: str = "") -> None:
    """Refuse `cost` when over either cap: "<what> would need ...; <fixes joined by 'or'>" (or `stuck` when no
    knob helps)."""
    if cost.fits:
        return
    fix = ", or ".join(f for f in fixes if f) or stuck or "no smaller input fits"
    raise BudgetError(
        f"{what} would need about {_bytes(cost.bytes)} of memory and {_amount(cost.work)} multiply-adds; an analysis "
        f"may use {_bytes(MAX_BYTES)} and {_amount(MAX_WORK)} (about a minute on one CPU thread): {fix}"
    )


def _bytes(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def _amount(n: int) -> str:
    for size, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if n >= size:
            return f"{n / size:.1f} {word}"
    return f"{n:,}"


def _shorter(knobs: Knobs, cost_for: Callable[[int], Cost], n_symbols: int) -> str:
    """'use at most N symbols in --source' when a shorter source fits, else ''."""
    if knobs.source is None or n_symbols <= 1:
        return ""
    most = most_that_fit(cost_for, 1, n_symbols - 1)
    return f"use at most {most} symbols in {knobs.source}" if most is not None else ""


def output_len(n_symbols: int, asked_symbols: int, asked_output: int) -> int:
    """The output a shorter source is expected to have: the same ratio of output to source as the one asked."""
    return max(1, math.ceil(asked_output * n_symbols / max(1, asked_symbols)))


# ---- patching ----


def patch_rows(config: ModelConfig, src_len: int) -> int:
    """Patched runs: a row per head and per attention layer, and one per (encoder layer, source position)."""
    modules = config.n_encoder_layers + 2 * config.n_decoder_layers
    return modules * (config.n_heads + 1) + config.n_encoder_layers * src_len


def rows_per_pass(config: ModelConfig, src_len: int, tgt_len: int, most: int) -> int:
    """Rows of one batched pass (patched runs, occluded sources), at most `most`, within half the memory budget
    (the clean run and the results hold the rest); at least one."""
    one = pass_cost(config, 1, src_len, tgt_len).bytes
    return max(1, min(most, (MAX_BYTES // 2) // max(1, one)))


def patch_chunk(config: ModelConfig, src_len: int, tgt_len: int) -> int:
    """Rows per patched pass."""
    return rows_per_pass(config, src_len, tgt_len, patch_rows(config, src_len))


def occlusion_chunk(config: ModelConfig, src_len: int, tgt_len: int) -> int:
    """Occluded sources per pass."""
    from .attribution import OCCLUSION_CHUNK

    return rows_per_pass(config, src_len, tgt_len, OCCLUSION_CHUNK)


def patch_cost(config: ModelConfig, src_len: int, tgt_len: int) -> Cost:
    """The clean run and every patched run, passes of patch_chunk rows."""
    rows = patch_rows(config, src_len)
    chunk = patch_chunk(config, src_len, tgt_len)
    one = pass_cost(config, 1, src_len, tgt_len)
    return Cost(2 * one.bytes + chunk * one.bytes, (rows + 2) * one.work)


def check_patch(config: ModelConfig, n_symbols: int, src_len: int, tgt_len: int, knobs: Knobs) -> None:
    """Refuse patching a source of n_symbols (src_len encoder positions, tgt_len decoder positions) over budget."""
    overhead = src_len - n_symbols

    def cost_for(n: int) -> Cost:
        return patch_cost(config, n + overhead, output_len(n, n_symbols, tgt_len))

    what = f"patching on {n_symbols} symbols ({patch_rows(config, src_len):,} patched runs)"
    check(cost_for(n_symbols), what, [_shorter(knobs, cost_for, n_symbols)])


# ---- the logit lens and attribution ----


def decode_cost(config: ModelConfig, src_len: int, tgt_len: int) -> Cost:
    """Greedy decoding of tgt_len tokens with a key/value cache: about one pass's arithmetic, one token's memory, and
    a call of every decoder layer per token."""
    calls = tgt_len * config.n_decoder_layers * LAYER_CALL_WORK
    return Cost(pass_cost(config, 1, src_len, 1).bytes, pass_cost(config, 1, src_len, tgt_len).work + calls)


def lens_cost(config: ModelConfig, src_len: int, tgt_len: int) -> Cost:
    """Greedy decoding, one teacher-forced pass, and every decoder layer read through the output layer."""
    layers = config.n_decoder_layers
    lens = Cost(3 * layers * tgt_len * config.vocab_size * FLOAT, layers * tgt_len * config.d_model * config.vocab_size)
    return decode_cost(config, src_len, tgt_len).then(pass_cost(config, 1, src_len, tgt_len) + lens)


def check_lens(config: ModelConfig, n_symbols: int, src_len: int, tgt_len: int, knobs: Knobs) -> None:
    """Refuse the lens of a source of n_symbols whose output is expected to be tgt_len tokens, over budget."""
    overhead = src_len - n_symbols

    def cost_for(n: int) -> Cost:
        return lens_cost(config, n + overhead, output_len(n, n_symbols, tgt_len))

    check(cost_for(n_symbols), f"the logit lens on {n_symbols} symbols", [_shorter(knobs, cost_for, n_symbols)])


def attribute_cost(config: ModelConfig, src_len: int, tgt_len: int, ig_steps: int, n_symbols: int) -> Cost:
    """Decoding, integrated gradients (one batch of m + 1 rows, a backward pass per output position), occlusion
    (every symbol position with each other symbol, passes of occlusion_chunk rows) and the attention views.

    `n_symbols` here is how many symbols the source holds (each occluded by every other symbol of the task)."""
    task_symbols = config.vocab_size - N_SPECIALS
    forward = pass_cost(config, ig_steps + 1, src_len, tgt_len, grad=True)
    ig = Cost(forward.bytes, forward.work // 3 * (1 + 2 * tgt_len))  # one forward, a backward per output
    edits = n_symbols * max(0, task_symbols - 1)
    chunk = pass_cost(config, min(max(edits, 1), occlusion_chunk(config, src_len, tgt_len)), src_len, tgt_len)
    occlusion = Cost(chunk.bytes, edits * pass_cost(config, 1, src_len, tgt_len).work)
    views = pass_cost(config, 1, src_len, tgt_len, grad=True)  # the maps kept, as the capture path keeps them
    return decode_cost(config, src_len, tgt_len).then(ig).then(occlusion).then(views)


def attribution_cost_for(config: ModelConfig, src_len: int, n_symbols: int, ig_steps: int) -> Callable[[int], Cost]:
    """Attribution and the lens beside it, as a function of the output's length: what `analysis_output` caps."""
    return lambda tokens: attribute_cost(config, src_len, tokens, ig_steps, n_symbols).then(
        lens_cost(config, src_len, tokens)
    )


def check_attribute(
    config: ModelConfig, n_symbols: int, src_len: int, tgt_len: int, ig_steps: int, knobs: Knobs
) -> None:
    """Refuse attribution (with the lens the window shows beside it) over budget; suggest fewer IG steps and a
    shorter source where either fits."""
    overhead = src_len - n_symbols

    def cost_for(n: int, steps: int = ig_steps) -> Cost:
        return attribution_cost_for(config, n + overhead, n, steps)(output_len(n, n_symbols, tgt_len))

    fixes = [_shorter(knobs, cost_for, n_symbols)]
    if knobs.ig_steps is not None and ig_steps > 1:
        steps = most_that_fit(lambda m: cost_for(n_symbols, m), 1, ig_steps - 1)
        fixes.insert(0, f"use {knobs.ig_steps} {steps} or less" if steps is not None else "")
    what = f"attribution with {ig_steps} IG steps on {n_symbols} symbols"
    check(cost_for(n_symbols), what, fixes)


def output_cap(cost_for: Callable[[int], Cost], expected: int, longest: int) -> int:
    """How many tokens greedy decoding may write for an analysis: the most whose analysis fits, from `expected`
    (what the task's answer needs, already checked) up to `longest` (the model's positions)."""
    return most_that_fit(cost_for, min(expected, longest), longest) or min(expected, longest)


def check_output(written: int, ended: bool, cap: int, longest: int, what: str, knobs: Knobs) -> None:
    """Refuse an analysis whose greedy output ran to `cap` tokens without <eos> where the model had room for more:
    analysing a longer output is over budget."""
    if ended or cap >= longest or written < cap:
        return
    source = f"; use a shorter {knobs.source}" if knobs.source else ""
    raise BudgetError(
        f"the model wrote {written:,} tokens for this source without <eos>; {what} of a longer output would need more "
        f"than an analysis may use ({_bytes(MAX_BYTES)}, {_amount(MAX_WORK)} multiply-adds){source}"
    )


# ---- circuits ----


def _sublayers(config: ModelConfig) -> list[tuple[str, int]]:
    """Every attention sublayer as (kind, layer) in head_refs order."""
    return (
        [("encoder_self", layer) for layer in range(config.n_encoder_layers)]
        + [("decoder_self", layer) for layer in range(config.n_decoder_layers)]
        + [("cross", layer) for layer in range(config.n_decoder_layers)]
    )


def _types(source: tuple[str, int], target: tuple[str, int]) -> int:
    """How many composition types join a head of `source` to a head of `target` (head_composition's rule)."""
    (s_kind, s_layer), (t_kind, t_layer) = source, target
    if s_kind == "encoder_self":
        if t_kind == "cross":
            return 2
        return 3 if t_kind == "encoder_self" and t_layer > s_layer else 0
    if t_kind == "encoder_self":
        return 0
    step = lambda kind, layer: 2 * layer + (kind == "cross")  # noqa: E731
    if step(t_kind, t_layer) <= step(s_kind, s_layer):
        return 0
    return 3 if t_kind == "decoder_self" else 1


def composition_counts(config: ModelConfig) -> tuple[int, int]:
    """(composition links, ordered pairs of distinct heads with no path), counted without listing them."""
    h = config.n_heads
    links = unlinked = 0
    for source in _sublayers(config):
        for target in _sublayers(config):
            pairs = h * h - (h if source == target else 0)
            types = _types(source, target)
            links += pairs * types
            unlinked += 0 if types else pairs
    return links, unlinked


def circuits_cost(config: ModelConfig, n_positions: int, samples: int) -> tuple[Cost, Cost]:
    """(what the model alone costs: token tables and composition; what the options add: positions, baseline)."""
    heads = len(_sublayers(config)) * config.n_heads
    v, d, hd, a = config.vocab_size, config.d_model, config.head_dim, config.vocab_size - N_SPECIALS
    tokens = Cost(heads * v * v * TABLE_ENTRY_BYTES, heads * (2 * EIGEN_WORK * v**3 + v * v * (hd + d) + 3 * v * d * d))
    links, unlinked = composition_counts(config)
    pair = d**3 + 2 * d * d * hd  # one score: the two d x d matrices and their product
    composition = Cost(links * LINK_BYTES + unlinked * UNLINKED_BYTES, (links + 3 * unlinked) * pair)
    n = n_positions
    positions = Cost(
        heads * n * n * TABLE_ENTRY_BYTES + 4 * a * n * hd * DOUBLE, heads * (2 * a * n * n * hd + a * a * n * hd)
    )
    baseline = Cost(0, samples * 3 * pair)
    return tokens + composition, positions + baseline


def check_circuits(config: ModelConfig, n_positions: int, samples: int, knobs: Knobs) -> None:
    """Refuse reading the circuits over budget; name --positions or --baseline-samples only where lowering them
    fits, and say so when the model alone is too large."""
    fixed, _ = circuits_cost(config, n_positions, samples)
    heads = len(_sublayers(config)) * config.n_heads
    what = f"reading the circuits of {heads:,} heads over {config.vocab_size:,} tokens and {n_positions} positions"
    if not fixed.fits:
        links, _unlinked = composition_counts(config)
        check(
            fixed,
            what,
            [],
            f"the model alone ({heads:,} heads, {config.vocab_size:,} tokens, {links:,} composition links) is over "
            "that, whatever the options",
        )
    fixes = []
    if knobs.positions is not None and n_positions > 1:
        most = most_that_fit(lambda n: _total(circuits_cost(config, n, samples)), 1, n_positions - 1)
        fixes.append(f"use {knobs.positions} {most} or less" if most is not None else "")
    if knobs.samples is not None and samples > 1:
        most = most_that_fit(lambda s: _total(circuits_cost(config, n_positions, s)), 1, samples - 1)
        fixes.append(f"use {knobs.samples} {most} or less" if most is not None else "")
    check(_total(circuits_cost(config, n_positions, samples)), what, fixes)


def _total(parts: tuple[Cost, Cost]) -> Cost:
    return parts[0] + parts[1]


def analysis_output(
    model: Seq2SeqTransformer,
    src: Sequence[int],
    n_tokens: int,
    cost_for: Callable[[int], Cost],
    expected: int,
    what: str,
    knobs: Knobs,
    progress: Callable[[int, int], None] | None = None,
) -> list[int]:
    """The model's greedy output for an analysis of it: decoding stops at the longest output whose analysis
    (`cost_for(output tokens)`) fits, and BudgetError says so when the model had not written <eos> by then.

    `expected`: the output the task's answer needs, <eos> included, which the caller checked fits already.
    `progress(written, most)` after each token."""
    from .decoding import greedy_output, max_output_len

    longest = max_output_len(model)
    cap = output_cap(cost_for, expected, longest)
    on_token = None if progress is None else (lambda written: progress(written, cap))
    output = greedy_output(model, src, n_tokens, max_new_tokens=cap, on_token=on_token)
    check_output(len(output), bool(output) and output[-1] == EOS, cap, longest, what, knobs)
    return output
