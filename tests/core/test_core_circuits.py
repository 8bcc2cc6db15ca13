"""QK and OV circuits and copying scores against tables built here token by token from the raw parameters (numpy,
float64), with random norm gains and untied embeddings so every fold and every choice of table shows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from circuit_reference import direct_path_accuracy

from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint
from core_model.circuits import copying_score, head_refs, token_circuits
from core_model.shipped import resource_path

EXACT = 1e-10
N_HEADS, D_MODEL = 2, 16


def tiny(norm_position: str, norm: str, seed: int = 3):
    """A float64 model with untied embeddings and every norm gain random (they start at 1, which hides a fold)."""
    config = ModelConfig(
        vocab_size=9,
        d_model=D_MODEL,
        n_heads=N_HEADS,
        d_ff=32,
        max_len=32,
        n_encoder_layers=2,
        n_decoder_layers=2,
        norm_position=norm_position,
        norm=norm,
        tie_embeddings=False,
    )
    model = build_model(config, seed=seed).to(torch.float64).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:  # gains around 1 with both signs present, biases non-zero (they must be left out)
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) + (0.5 if "weight" in name else 0))
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
    return model


def raw(model) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def sides(p: dict[str, np.ndarray], kind: str, layer: int, pre: bool):
    """(prefix of the attention's weights, query embedding, query gain, key embedding, key gain) by hand."""
    ones = np.ones(D_MODEL)
    gain = (lambda name: p[name]) if pre else (lambda name: ones)
    if kind == "encoder_self":
        g = gain(f"encoder_layers.{layer}.sub_attn.norm.weight")
        return f"encoder_layers.{layer}.self_attn", p["src_embed.weight"], g, p["src_embed.weight"], g
    if kind == "decoder_self":
        g = gain(f"decoder_layers.{layer}.sub_self.norm.weight")
        return f"decoder_layers.{layer}.self_attn", p["tgt_embed.weight"], g, p["tgt_embed.weight"], g
    g_q, g_k = gain(f"decoder_layers.{layer}.sub_cross.norm.weight"), gain("encoder_norm.weight")
    return f"decoder_layers.{layer}.cross_attn", p["tgt_embed.weight"], g_q, p["src_embed.weight"], g_k


def tables_by_hand(model, kind: str, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
    """QK[a, b] and OV[b, c] one token (pair) at a time, from the parameters and the module docstring's formulas."""
    p, pre = raw(model), model.config.norm_position == "pre"
    prefix, e_q, g_q, e_k, g_k = sides(p, kind, layer, pre)
    dh = D_MODEL // N_HEADS
    rows = slice(head * dh, (head + 1) * dh)
    w_q, w_k = p[f"{prefix}.q_proj.weight"][rows], p[f"{prefix}.k_proj.weight"][rows]
    w_v, w_o = p[f"{prefix}.v_proj.weight"][rows], p[f"{prefix}.out_proj.weight"][:, rows]
    g_f = p["decoder_norm.weight"] if pre else np.ones(D_MODEL)
    vocab, scale = e_q.shape[0], math.sqrt(D_MODEL)
    qk, ov = np.zeros((vocab, vocab)), np.zeros((vocab, vocab))
    for a in range(vocab):
        for b in range(vocab):
            q = w_q @ (g_q * e_q[a] * scale)
            k = w_k @ (g_k * e_k[b] * scale)
            qk[a, b] = float(np.dot(q, k)) / math.sqrt(dh)
    for b in range(vocab):
        written = w_o @ (w_v @ (g_k * e_k[b] * scale))  # what the head adds to the stream
        for c in range(vocab):
            ov[b, c] = float(np.dot(p["generator.weight"][c], g_f * written))
    return qk, ov


@pytest.mark.parametrize(("norm_position", "norm"), [("pre", "layernorm"), ("pre", "rmsnorm"), ("post", "layernorm")])
def test_every_table_equals_the_one_built_token_by_token(norm_position, norm):
    model = tiny(norm_position, norm)
    circuits = token_circuits(model)
    assert [c.ref for c in circuits] == head_refs(model.config)
    assert [(c.ref.kind, c.ref.layer, c.ref.head) for c in circuits] == [
        (kind, layer, head)
        for kind in ("encoder_self", "decoder_self", "cross")
        for layer in range(2)
        for head in range(N_HEADS)
    ]
    for circuit in circuits:
        qk, ov = tables_by_hand(model, circuit.ref.kind, circuit.ref.layer, circuit.ref.head)
        assert circuit.qk.shape == circuit.ov.shape == (9, 9)
        np.testing.assert_allclose(circuit.qk, qk, rtol=0, atol=EXACT * max(1.0, np.abs(qk).max()))
        np.testing.assert_allclose(circuit.ov, ov, rtol=0, atol=EXACT * max(1.0, np.abs(ov).max()))
        eigenvalues = np.linalg.eigvals(ov)
        expected = np.trace(ov) / np.abs(eigenvalues).sum()  # the sum of the eigenvalues is the trace
        assert circuit.copying_score == pytest.approx(expected, abs=EXACT)
        assert -1.0 <= circuit.copying_score <= 1.0


def test_the_tables_are_the_real_scores_where_the_norm_has_nothing_to_take_away():
    """With every projection bias 0, post-norm and a one-token sinusoid-free stream, the model's own pre-softmax
    score of layer 0's encoder head is the QK table's entry; RoPE at position 0 rotates nothing."""
    model = tiny("post", "layernorm")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "proj.bias" in name:
                p.zero_()
    circuit = token_circuits(model)[0]
    for a in range(1, 9):  # <pad> (0) is masked as a key
        out = model(torch.tensor([[a]]), torch.tensor([[1]]), return_scores=True)
        assert out.scores is not None
        assert float(out.scores.encoder_self[0][0, 0, 0, 0]) == pytest.approx(circuit.qk[a, a], abs=EXACT)


@pytest.mark.parametrize(
    ("eigenvalues", "score"),
    [
        ([3.0, 2.0, 1.0], 1.0),
        ([-1.0, -4.0], -1.0),
        ([3.0, -1.0], 0.5),
        ([1 + 1j, 1 - 1j, -2.0], (2.0 - 2.0) / (2 * math.sqrt(2) + 2.0)),
        ([2j, -2j], 0.0),
    ],
)
def test_the_copying_score_of_a_matrix_with_a_known_spectrum(eigenvalues, score):
    """A real matrix similar to the block diagonal of the given spectrum (complex ones as a rotation-scaling block)."""
    blocks, i = [], 0
    while i < len(eigenvalues):
        lam = complex(eigenvalues[i])
        if lam.imag:
            blocks.append(np.array([[lam.real, -lam.imag], [lam.imag, lam.real]]))
            i += 2
        else:
            blocks.append(np.array([[lam.real]]))
            i += 1
    n = sum(b.shape[0] for b in blocks)
    diagonal, at = np.zeros((n, n)), 0
    for b in blocks:
        diagonal[at : at + b.shape[0], at : at + b.shape[0]] = b
        at += b.shape[0]
    basis = np.random.default_rng(0).normal(size=(n, n))
    assert copying_score(basis @ diagonal @ np.linalg.inv(basis)) == pytest.approx(score, abs=1e-9)


def test_a_head_that_writes_nothing_has_no_copying_score():
    assert math.isnan(copying_score(np.zeros((4, 4))))


def last_cross_scores(name: str) -> list[float]:
    model = load_checkpoint(resource_path(name)).build().eval()
    last = model.config.n_decoder_layers - 1
    return [c.copying_score for c in token_circuits(model) if c.ref.kind == "cross" and c.ref.layer == last]


@pytest.mark.parametrize("name", ["reverse_rope.pt", "sort_rope.pt"])
def test_the_shipped_reverse_and_sort_models_last_cross_heads_copy(name):
    """Their last-layer cross heads write the token they read: every copying score is well above 0."""
    assert min(last_cross_scores(name)) > 0.8


def test_the_shipped_reverse_models_last_cross_heads_map_every_symbol_to_itself():
    model = load_checkpoint(resource_path("reverse_rope.pt")).build().eval()
    for c in token_circuits(model):
        if c.ref.kind == "cross" and c.ref.layer == 1:
            symbols = np.arange(3, 13)
            assert (c.ov[3:, 3:].argmax(axis=1) + 3 == symbols).all()


def test_the_copy_models_last_cross_heads_copy_once_their_constant_push_is_taken_out():
    """Raw, a constant push towards a few outputs dominates the spectrum (every score < 0); centred, each symbol's
    row is won by that symbol and the scores are near +1. What docs/CLI.md reports."""
    model = load_checkpoint(resource_path("copy_rope.pt")).build().eval()
    last = [c for c in token_circuits(model) if c.ref.kind == "cross" and c.ref.layer == 1]
    assert max(c.copying_score for c in last) < 0
    assert min(c.centred_copying_score for c in last) > 0.9
    symbols = np.arange(3, 13)
    for c in last:
        if c.ref.head != 2:  # H3's row for one symbol goes to its neighbour
            assert (c.ov_centred[3:, 3:].argmax(axis=1) + 3 == symbols).all(), c.ref


def test_centred_tables_and_score_equal_loops_over_the_symbols():
    model = load_checkpoint(resource_path("sort_rope.pt")).build().eval()
    for c in token_circuits(model)[::5]:
        n = c.qk.shape[0]
        qk, ov = np.empty_like(c.qk), np.empty_like(c.ov)
        for i in range(n):
            row_mean = sum(c.qk[i, j] for j in range(3, n)) / (n - 3)
            for j in range(n):
                qk[i, j] = c.qk[i, j] - row_mean
        grand = sum(c.ov[i, j] for i in range(3, n) for j in range(3, n)) / (n - 3) ** 2
        for j in range(n):
            column_mean = sum(c.ov[i, j] for i in range(3, n)) / (n - 3)
            for i in range(n):
                row_mean = sum(c.ov[i, k] for k in range(3, n)) / (n - 3)
                ov[i, j] = c.ov[i, j] - column_mean - row_mean + grand
        np.testing.assert_allclose(c.qk_centred, qk, rtol=0, atol=1e-10)
        np.testing.assert_allclose(c.ov_centred, ov, rtol=0, atol=1e-10)
        block = ov[3:, 3:]
        eigenvalues = np.linalg.eigvals(block)
        assert c.centred_copying_score == pytest.approx(eigenvalues.real.sum() / np.abs(eigenvalues).sum(), abs=1e-10)


def wins_by_hand(table: np.ndarray) -> int:
    """Symbol rows (ids 3..) whose largest cell among <eos> (id 2) and the symbols sits on the row's own symbol."""
    wins = 0
    for row in range(3, table.shape[0]):
        best = 2
        for column in range(3, table.shape[1]):
            if table[row, column] > table[row, best]:
                best = column
        wins += best == row
    return wins


@pytest.mark.parametrize("name", ["copy_rope.pt", "reverse_rope.pt"])
def test_diagonal_wins_count_the_symbol_rows_the_tables_own_symbol_wins(name):
    """The figure beside the copying score that the OV table confirms: the copy model's cross L2 H3 copies (+0.99)
    yet loses 2 of its 10 rows; <eos> competes for a row as the tab's bold cells let it."""
    model = load_checkpoint(resource_path(name)).build().eval()
    for c in token_circuits(model):
        assert c.symbol_rows == 10
        assert c.diagonal_wins == wins_by_hand(c.ov), c.ref
        assert c.centred_diagonal_wins == wins_by_hand(c.ov_centred), c.ref
    if name == "copy_rope.pt":
        h3 = next(c for c in token_circuits(model) if (c.ref.kind, c.ref.layer, c.ref.head) == ("cross", 1, 2))
        assert (round(h3.centred_copying_score, 2), h3.centred_diagonal_wins) == (0.99, 8)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_each_sides_spread_is_what_its_norm_divides_a_lone_symbol_embedding_by(norm):
    """The divisor the QK caption names: numpy's std (LayerNorm) or root mean square (RMSNorm) of each symbol's
    embedding × √d_model, eps added as torch does, averaged over the symbols; NaN for post-norm."""
    model = tiny("pre", norm)
    p = raw(model)
    eps = 1e-6  # layers.NORM_EPS, both kinds
    for c in token_circuits(model):
        _prefix, e_q, _g_q, e_k, _g_k = sides(p, c.ref.kind, c.ref.layer, True)
        by_hand = []
        for table in (e_q, e_k):
            x = table[3:] * math.sqrt(D_MODEL)
            power = x.var(axis=1) if norm == "layernorm" else (x**2).mean(axis=1)
            by_hand.append(float(np.sqrt(power + eps).mean()))
        assert (c.query_spread, c.key_spread) == pytest.approx(by_hand, rel=1e-12), c.ref
    assert all(math.isnan(c.query_spread) and math.isnan(c.key_spread) for c in token_circuits(tiny("post", norm)))


def test_the_copy_models_answer_takes_the_last_cross_layers_direct_path():
    """What docs/CIRCUITS.md reports: keep the last cross layer's output out of the residual stream while the
    feed-forward layer still reads it, and the copy model's token accuracy falls from 1.00 to well under 0.6."""
    accuracy = direct_path_accuracy("copy_rope.pt")
    assert accuracy[True] == 1.0 and accuracy[False] < 0.6
