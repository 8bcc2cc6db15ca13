"""What each analysis costs: the memory it would hold at its peak and the multiply-adds it does, from the model's
config and the inputs alone, and the caps an analysis may use (MAX_BYTES, MAX_WORK).

The estimates follow the arithmetic of one pass (`pass_cost`): per row, every projection, feed-forward and attention
product of each layer, plus the output layer; memory is one layer's transient attention maps and activations (no
gradient) or every layer's kept for the backward pass. They are deliberately round: their job is to tell a run of
seconds from one of many minutes, and hundreds of megabytes from many gigabytes. analysis_budget refuses with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .config import ModelConfig
from .vocab import N_SPECIALS

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


# ---- patching and occlusion ----


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


def attribute_cost(config: ModelConfig, src_len: int, tgt_len: int, ig_steps: int, n_symbols: int) -> Cost:
    """Decoding, integrated gradients (one batch of m + 1 rows, a backward pass per output position), occlusion
    (every symbol position with each other symbol, passes of occlusion_chunk rows) and the attention views, the
    last three in float64.

    `n_symbols` here is how many symbols the source holds. Each is counted as occluded by every other symbol of the
    model's vocabulary: a bound on occlusion's real edits, which range over the task's source alphabet and skip
    those that break its grammar (source_analysis.occlusion_edits)."""
    task_symbols = config.vocab_size - N_SPECIALS
    forward = pass_cost(config, ig_steps + 1, src_len, tgt_len, grad=True)
    ig = Cost(forward.bytes, forward.work // 3 * (1 + 2 * tgt_len))  # one forward, a backward per output
    edits = n_symbols * max(0, task_symbols - 1)
    chunk = pass_cost(config, min(max(edits, 1), occlusion_chunk(config, src_len, tgt_len)), src_len, tgt_len)
    occlusion = Cost(chunk.bytes, edits * pass_cost(config, 1, src_len, tgt_len).work)
    views = pass_cost(config, 1, src_len, tgt_len, grad=True)  # the maps kept, as the capture path keeps them
    wide = DOUBLE // FLOAT  # these run on a float64 copy of the model (float64.in_float64)
    ig, occlusion, views = (Cost(c.bytes * wide, c.work) for c in (ig, occlusion, views))
    return decode_cost(config, src_len, tgt_len).then(ig).then(occlusion).then(views)


def attribution_cost_for(config: ModelConfig, src_len: int, n_symbols: int, ig_steps: int) -> Callable[[int], Cost]:
    """Attribution and the lens beside it, as a function of the output's length: what `analysis_output` caps."""
    return lambda tokens: attribute_cost(config, src_len, tokens, ig_steps, n_symbols).then(
        lens_cost(config, src_len, tokens)
    )


# ---- circuits ----


def _sublayers(config: ModelConfig) -> list[tuple[str, int]]:
    """Every attention sublayer as (kind, layer) in head_refs order."""
    return (
        [("encoder_self", layer) for layer in range(config.n_encoder_layers)]
        + [("decoder_self", layer) for layer in range(config.n_decoder_layers)]
        + [("cross", layer) for layer in range(config.n_decoder_layers)]
    )


def attention_heads(config: ModelConfig) -> int:
    """Every head of every attention sublayer: what the circuits read one by one."""
    return len(_sublayers(config)) * config.n_heads


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
    heads = attention_heads(config)
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
