"""Position circuits against scores the real attention module computes on streams built here symbol by symbol and
position by position (numpy sinusoids, random norm gains, untied embeddings, biases zeroed on a copy), averaged and
spread with explicit loops; limits, the NaN share, default positions and the shipped models."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.cell_decomposition import attention_module
from core_model.checkpoint import load_checkpoint
from core_model.circuits import head_refs
from core_model.position_circuits import MAX_POSITION_TABLE, default_positions, position_circuits
from core_model.shipped import resource_path
from core_model.tasks import TaskSpec

EXACT = 1e-10
N_HEADS, D_MODEL, VOCAB, SPECIALS, MAX_LEN = 2, 16, 7, 3, 32


def tiny(positional: str, norm_position: str, seed: int = 4, max_len: int = MAX_LEN):
    """A float64 model with untied embeddings, random norm gains and non-zero biases (which must be left out)."""
    config = ModelConfig(
        vocab_size=VOCAB,
        d_model=D_MODEL,
        n_heads=N_HEADS,
        d_ff=32,
        max_len=max_len,
        n_encoder_layers=2,
        n_decoder_layers=2,
        positional=positional,
        norm_position=norm_position,
        pe_base=50.0,  # a small base turns the sinusoids fast enough to matter over a few positions
        tie_embeddings=False,
    )
    model = build_model(config, seed=seed).to(torch.float64).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) + (0.5 if "weight" in name else 0))
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
    return model


def sinusoids(n: int, d: int, base: float) -> np.ndarray:
    """Paper §3.5 written out: PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i + 1] = cos(the same)."""
    pe = np.zeros((n, d))
    for pos in range(n):
        for i in range(0, d, 2):
            pe[pos, i] = math.sin(pos / base ** (i / d))
            pe[pos, i + 1] = math.cos(pos / base ** (i / d))
    return pe


def streams(model, kind: str, layer: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """x[a, i] = gain * (sqrt(d) * E[a] + PE[i]) for every symbol a and position i, query side and key side."""
    p = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    pre = model.config.norm_position == "pre"
    gain = (lambda name: p[name]) if pre else (lambda name: np.ones(D_MODEL))  # noqa: E731
    slot = {"encoder_self": "sub_attn", "decoder_self": "sub_self", "cross": "sub_cross"}[kind]
    stack = "encoder_layers" if kind == "encoder_self" else "decoder_layers"
    g_q = gain(f"{stack}.{layer}.{slot}.norm.weight")
    g_k = gain("encoder_norm.weight") if kind == "cross" else g_q
    e_q = p["src_embed.weight" if kind == "encoder_self" else "tgt_embed.weight"][SPECIALS:]
    e_k = p["tgt_embed.weight" if kind == "decoder_self" else "src_embed.weight"][SPECIALS:]
    pe = sinusoids(n, D_MODEL, model.config.pe_base) if model.config.positional == "sinusoidal" else np.zeros((n, 1))
    scale = math.sqrt(D_MODEL)
    x_q = np.stack([[g_q * (scale * e_q[a] + pe[i]) for i in range(n)] for a in range(len(e_q))])
    x_k = np.stack([[g_k * (scale * e_k[b] + pe[j]) for j in range(n)] for b in range(len(e_k))])
    return x_q, x_k  # (A, n, d) each


def module_scores(model, kind: str, layer: int, n: int) -> np.ndarray:
    """S[a, b, h, i, j] from the sublayer's own forward pass (biases zeroed on a copy): query a's sequence against
    key b's sequence, every position of each holding that one symbol."""
    attn = copy.deepcopy(attention_module(model, kind, layer))
    with torch.no_grad():
        for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
            proj.bias.zero_()
    x_q, x_k = streams(model, kind, layer, n)
    a = len(x_q)
    pairs_q = torch.from_numpy(np.repeat(x_q, a, axis=0))  # row a * A + b holds query symbol a ...
    pairs_k = torch.from_numpy(np.tile(x_k, (a, 1, 1)))  # ... and key symbol b
    result = attn(pairs_q, pairs_k, need_scores=True)
    return result.scores.numpy().reshape(a, a, N_HEADS, n, n)


def by_loops(s: np.ndarray, causal: bool) -> tuple[np.ndarray, float, float]:
    """(mean table, position spread, token spread) of one head's S[a, b, i, j] with explicit loops."""
    a_count, _, n, _ = s.shape
    table = np.array([[s[:, :, i, j].mean() for j in range(n)] for i in range(n)])
    position_stds, token_stds = [], []
    for a in range(a_count):
        for i in range(n):
            keys = range(i + 1) if causal else range(n)
            position_stds.append(np.std([s[a, :, i, j].mean() for j in keys]))
            token_stds.append(np.std([np.mean([s[a, b, i, j] for j in keys]) for b in range(a_count)]))
    return table, float(np.mean(position_stds)), float(np.mean(token_stds))


@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_every_head_equals_the_attention_modules_own_scores_averaged_by_hand(positional, norm_position):
    model, n = tiny(positional, norm_position), 5
    circuits = position_circuits(model, n)
    assert [c.ref for c in circuits] == head_refs(model.config) and len(circuits) == 12
    scores = {}
    for c in circuits:
        key = (c.ref.kind, c.ref.layer)
        if key not in scores:
            scores[key] = module_scores(model, *key, n)
        table, position_spread, token_spread = by_loops(scores[key][:, :, c.ref.head], c.ref.kind == "decoder_self")
        assert c.scores.shape == (n, n)
        np.testing.assert_allclose(c.scores, table, rtol=0, atol=EXACT * max(1.0, np.abs(table).max()))
        assert c.position_spread == pytest.approx(position_spread, abs=EXACT)
        assert c.token_spread == pytest.approx(token_spread, abs=EXACT)
        assert c.position_share == pytest.approx(position_spread / (position_spread + token_spread), abs=EXACT)


def test_decoder_self_attention_counts_only_the_keys_a_query_can_see():
    """The causal rule matters: with every key counted the decoder heads' spreads differ; its table is full.

    RoPE, because under sinusoids the positions add a term the same for every key symbol, which the token spread's
    std over symbols removes whichever keys are averaged."""
    model, n = tiny("rope", "pre"), 5
    circuit = next(c for c in position_circuits(model, n) if c.ref.kind == "decoder_self")
    s = module_scores(model, "decoder_self", 0, n)[:, :, 0]
    _, causal_position, causal_token = by_loops(s, causal=True)
    _, all_position, all_token = by_loops(s, causal=False)
    assert circuit.position_spread == pytest.approx(causal_position, abs=EXACT)
    assert circuit.token_spread == pytest.approx(causal_token, abs=EXACT)
    assert abs(causal_position - all_position) > 1e-3 and abs(causal_token - all_token) > 1e-3
    assert np.all(circuit.scores[np.triu_indices(n, 1)] != 0)  # the cells a query cannot see are still there


def test_a_head_with_zero_query_weights_has_no_spread_and_a_nan_share():
    model = tiny("rope", "pre")
    with torch.no_grad():
        model.encoder_layers[0].self_attn.q_proj.weight[: D_MODEL // N_HEADS].zero_()  # head 0 only
    first, second = position_circuits(model, 4)[:2]
    assert (first.position_spread, first.token_spread) == (0.0, 0.0) and math.isnan(first.position_share)
    assert np.all(first.scores == 0) and math.isnan(first.to_dict()["position_share"])
    assert 0.0 < second.position_share < 1.0


def test_to_dict_holds_the_head_the_table_and_the_spreads():
    circuit = position_circuits(tiny("sinusoidal", "post"), 3)[-1]
    row = circuit.to_dict()
    assert (row["kind"], row["layer"], row["head"]) == ("cross", 1, N_HEADS - 1)
    assert row["scores"] == circuit.scores.tolist() and np.array(row["scores"]).shape == (3, 3)
    assert (row["position_spread"], row["token_spread"]) == (circuit.position_spread, circuit.token_spread)
    assert row["position_share"] == circuit.position_share
    assert row["scores_centred"] == circuit.scores_centred.tolist()


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_centred_rows_lose_their_mean_over_the_keys_the_query_may_see(kind):
    circuit = next(c for c in position_circuits(tiny("rope", "pre"), 5) if c.ref.kind == kind)
    for i in range(5):
        keys = range(i + 1) if kind == "decoder_self" else range(5)  # the causal mask hides j > i
        mean = sum(circuit.scores[i, j] for j in keys) / len(keys)
        for j in range(5):
            assert circuit.scores_centred[i, j] == pytest.approx(circuit.scores[i, j] - mean, abs=1e-12)


@pytest.mark.parametrize(
    ("n_positions", "max_len", "high"),
    [
        (0, MAX_LEN, MAX_LEN),
        (-1, MAX_LEN, MAX_LEN),
        (MAX_LEN + 1, MAX_LEN, MAX_LEN),  # the model's own positions
        (MAX_POSITION_TABLE + 1, 256, MAX_POSITION_TABLE),  # the table's cap, though the model has more
        (10**12, 256, MAX_POSITION_TABLE),  # refused at once: a table this size could never be allocated
        (True, MAX_LEN, MAX_LEN),
        (2.0, MAX_LEN, MAX_LEN),
    ],
)
def test_position_counts_outside_the_range_are_refused_before_any_work(n_positions, max_len, high):
    model = tiny("rope", "pre", max_len=max_len)
    with pytest.raises(ValueError, match=rf"n_positions must be an integer (>= 1|in \[1, {high}\]), got"):
        position_circuits(model, n_positions)


def test_the_largest_table_the_model_allows_is_computed():
    model = tiny("sinusoidal", "pre")  # max_len 32 < MAX_POSITION_TABLE
    assert {c.scores.shape for c in position_circuits(model, MAX_LEN)} == {(MAX_LEN, MAX_LEN)}
    assert MAX_POSITION_TABLE == 128


@pytest.mark.parametrize(
    ("task_len", "model_len", "expected"), [(16, 256, 18), (16, 10, 10), (500, 4096, MAX_POSITION_TABLE), (1, 256, 3)]
)
def test_default_positions_are_the_longest_source_with_bos_and_eos_within_both_limits(task_len, model_len, expected):
    task = TaskSpec(min_len=1, max_len=task_len)
    assert default_positions(ModelConfig(max_len=model_len), task) == expected


@pytest.mark.parametrize("name", ["copy_rope.pt", "reverse_rope.pt", "sort_rope.pt", "copy_sinusoidal.pt"])
def test_the_shipped_models_tables_follow_their_positional_encoding(name):
    """Under RoPE the mean symbol is rotated by its position on both sides, so a table depends on j - i alone
    (constant along each diagonal); the sinusoids add absolute positions and break that."""
    ckpt = load_checkpoint(resource_path(name))
    model = ckpt.build().eval()
    n = default_positions(model.config, ckpt.task)
    circuits = position_circuits(model, n)
    assert n == 18 and len(circuits) == 24
    assert all(0.0 <= c.position_share <= 1.0 for c in circuits)
    diagonals_constant = [
        all(np.ptp(np.diagonal(c.scores, offset)) <= 1e-9 * np.abs(c.scores).max() for offset in range(1 - n, n))
        for c in circuits
    ]
    assert all(diagonals_constant) if model.rope is not None else not any(diagonals_constant)


def test_the_shipped_copy_models_cross_heads_choose_by_position():
    """The reviewer's case: the copy model's cross heads look like noise in the token tables, yet by position
    they are sharp: most of their spread goes with where the key sits."""
    model = load_checkpoint(resource_path("copy_rope.pt")).build().eval()
    cross = [c for c in position_circuits(model, 18) if c.ref.kind == "cross"]
    assert len(cross) == 8 and min(c.position_share for c in cross) > 0.75
