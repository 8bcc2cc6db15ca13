"""Composition scores against matrices recovered here from what the heads compute (numpy, float64), the pairs
against a hand-written list for 2 + 2 layers, and the random baseline against its expectation 1/sqrt(d_model)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint
from core_model.head_composition import (
    MAX_BASELINE_SAMPLES,
    composition_pairs,
    composition_scores,
    random_baseline,
    unlinked_scores,
)
from core_model.shipped import resource_path

EXACT = 1e-10
N_HEADS, D_MODEL = 2, 16
# Sublayer to sublayer, by hand from the order the model runs in: encoder layers, then per decoder layer its
# self-attention and then its cross-attention (which reads the encoder's memory as keys and values).
SUBLAYER_LINKS = [
    (("encoder_self", 0), ("encoder_self", 1), "QKV"),
    (("encoder_self", 0), ("cross", 0), "KV"),
    (("encoder_self", 0), ("cross", 1), "KV"),
    (("encoder_self", 1), ("cross", 0), "KV"),
    (("encoder_self", 1), ("cross", 1), "KV"),
    (("decoder_self", 0), ("cross", 0), "Q"),
    (("decoder_self", 0), ("decoder_self", 1), "QKV"),
    (("decoder_self", 0), ("cross", 1), "Q"),
    (("cross", 0), ("decoder_self", 1), "QKV"),
    (("cross", 0), ("cross", 1), "Q"),
    (("decoder_self", 1), ("cross", 1), "Q"),
]


def tiny(seed: int = 5):
    config = ModelConfig(d_model=D_MODEL, n_heads=N_HEADS, d_ff=32, max_len=32, n_encoder_layers=2, n_decoder_layers=2)
    return build_model(config, seed=seed).to(torch.float64).eval()


def expected_links() -> set[tuple[tuple[str, int, int], tuple[str, int, int], str]]:
    return {
        ((src[0], src[1], h1), (dst[0], dst[1], h2), kind)
        for src, dst, kinds in SUBLAYER_LINKS
        for h1 in range(N_HEADS)
        for h2 in range(N_HEADS)
        for kind in kinds
    }


def as_tuple(ref) -> tuple[str, int, int]:
    return ref.kind, ref.layer, ref.head


def test_the_pairs_of_a_two_plus_two_layer_model_are_the_hand_written_ones():
    pairs = composition_pairs(tiny().config)
    found = [(as_tuple(s), as_tuple(t), kind) for s, t, kind in pairs]
    assert len(found) == len(set(found)) == 84  # 11 links x 4 head pairs, by type: 12 + 32 + 40
    assert set(found) == expected_links()


def head(model, ref: tuple[str, int, int]) -> dict[str, np.ndarray]:
    """The head's four matrices from the raw parameters, y = W x: rows of q/k/v_proj, columns of out_proj."""
    kind, layer, h = ref
    stack = "encoder_layers" if kind == "encoder_self" else "decoder_layers"
    prefix = f"{stack}.{layer}.{'cross_attn' if kind == 'cross' else 'self_attn'}"
    p = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    rows = slice(h * D_MODEL // N_HEADS, (h + 1) * D_MODEL // N_HEADS)
    return {
        "q": p[f"{prefix}.q_proj.weight"][rows],
        "k": p[f"{prefix}.k_proj.weight"][rows],
        "v": p[f"{prefix}.v_proj.weight"][rows],
        "o": p[f"{prefix}.out_proj.weight"][:, rows],
    }


def carried(h1: dict[str, np.ndarray], h2: dict[str, np.ndarray], kind: str) -> np.ndarray:
    """M with M[i, j] = what h2 computes from basis vectors, when h1 writes into its query, key or value stream.

    Q: score(query stream = h1's output for e_i, key stream = e_j); K: score(query e_i, key = h1's output for e_j);
    V: component i of what h2 writes when the stream it moves is h1's output for e_j. No transposes by hand.
    """
    written = lambda x: h1["o"] @ (h1["v"] @ x)  # noqa: E731
    score = lambda xq, xk: float(np.dot(h2["q"] @ xq, h2["k"] @ xk))  # noqa: E731
    basis = np.eye(D_MODEL)
    m = np.zeros((D_MODEL, D_MODEL))
    for i in range(D_MODEL):
        for j in range(D_MODEL):
            if kind == "Q":
                m[i, j] = score(written(basis[i]), basis[j])
            elif kind == "K":
                m[i, j] = score(basis[i], written(basis[j]))
            else:
                m[i, j] = (h2["o"] @ (h2["v"] @ written(basis[j])))[i]
    return m


def test_every_score_is_the_norm_of_what_one_head_carries_into_the_other():
    model = tiny()
    scores = composition_scores(model)
    assert [(s.source, s.target, s.type) for s in scores] == composition_pairs(model.config)
    for s in scores:
        h1, h2 = head(model, as_tuple(s.source)), head(model, as_tuple(s.target))
        w_ov1 = h1["o"] @ h1["v"]
        w2 = h2["o"] @ h2["v"] if s.type == "V" else h2["q"].T @ h2["k"]
        expected = np.linalg.norm(carried(h1, h2, s.type)) / (np.linalg.norm(w2) * np.linalg.norm(w_ov1))
        assert s.score == pytest.approx(expected, abs=EXACT)
        assert 0.0 <= s.score <= 1.0  # the Frobenius norm is submultiplicative


def test_a_head_reading_exactly_what_another_writes_scores_one():
    """Rank-one heads: h1 writes along u, h2 (decoder layer 1) moves and queries with u: V and Q reach 1."""
    model = tiny()
    rng = np.random.default_rng(0)
    u, x, y, z = (rng.normal(size=D_MODEL) for _ in range(4))
    dh = D_MODEL // N_HEADS
    with torch.no_grad():
        for attn, read, write in ((model.decoder_layers[0].self_attn, x, u), (model.decoder_layers[1].self_attn, u, z)):
            for proj in (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj):
                proj.weight.zero_()
            attn.v_proj.weight[0] = torch.from_numpy(read)  # head 0 reads along `read` ...
            attn.out_proj.weight[:, 0] = torch.from_numpy(write)  # ... and writes along `write`
            attn.q_proj.weight[0] = torch.from_numpy(read)
            attn.k_proj.weight[0] = torch.from_numpy(y)
            for proj in (attn.q_proj, attn.k_proj, attn.v_proj):
                proj.weight[dh] = torch.from_numpy(y)  # head 1 of each: something else, so the slices matter
    by_pair = {(as_tuple(s.source), as_tuple(s.target), s.type): s.score for s in composition_scores(model)}
    source, target = ("decoder_self", 0, 0), ("decoder_self", 1, 0)
    assert by_pair[(source, target, "V")] == pytest.approx(1.0, abs=EXACT)
    assert by_pair[(source, target, "Q")] == pytest.approx(1.0, abs=EXACT)
    k_expected = abs(np.dot(y, u)) / (np.linalg.norm(y) * np.linalg.norm(u))  # h2's keys read along y
    assert by_pair[(source, target, "K")] == pytest.approx(k_expected, abs=EXACT)


def test_the_baseline_is_reproducible_and_near_one_over_sqrt_d_model():
    config = tiny().config
    first, again = random_baseline(config, 400, seed=7), random_baseline(config, 400, seed=7)
    other = random_baseline(config, 400, seed=8)
    assert first.scores == again.scores and first.scores != other.scores
    assert (first.samples, first.seed) == (400, 7) and set(first.scores) == {"Q", "K", "V"}
    for value in first.scores.values():  # E||AB||^2 / (E||A||^2 E||B||^2) = 1/d for these shapes
        assert value == pytest.approx(1 / math.sqrt(D_MODEL), rel=0.05)


def test_the_baseline_refuses_a_sample_count_outside_its_range():
    config = tiny().config
    for samples in (0, MAX_BASELINE_SAMPLES + 1):
        with pytest.raises(ValueError, match="samples must be an integer"):
            random_baseline(config, samples)


def test_the_shipped_models_links_are_mostly_at_the_baseline_and_the_strongest_stand_out():
    """On the shipped RoPE models the typical link scores about what random heads score (the baseline is the right
    yardstick), while the strongest is over 1.5 times it."""
    for name in ("copy_rope.pt", "reverse_rope.pt", "sort_rope.pt"):
        model = load_checkpoint(resource_path(name)).build().eval()
        baseline = random_baseline(model.config).scores
        ratios = [s.score / baseline[s.type] for s in composition_scores(model)]
        assert 0.9 < float(np.median(ratios)) < 1.4 and max(ratios) > 1.5, name


def test_the_baselines_percentile_and_spread_are_those_of_the_same_random_heads_scored_here():
    """The same draws as random_baseline (q, k, v, o of the source head, then of the target, per sample), each
    score computed here in numpy, then np.percentile(95) and the population std."""
    config, samples, seed = tiny().config, 60, 11
    generator = torch.Generator().manual_seed(seed)
    hd = D_MODEL // N_HEADS
    scores: dict[str, list[float]] = {"Q": [], "K": [], "V": []}
    for _ in range(samples):
        heads = []
        for _ in range(2):
            q, k, v = (torch.randn(hd, D_MODEL, generator=generator, dtype=torch.float64).numpy() for _ in range(3))
            o = torch.randn(D_MODEL, hd, generator=generator, dtype=torch.float64).numpy()
            heads.append({"qk": q.T @ k, "ov": o @ v})
        one, two = heads
        norm = np.linalg.norm
        scores["Q"].append(norm(two["qk"].T @ one["ov"]) / (norm(two["qk"]) * norm(one["ov"])))
        scores["K"].append(norm(two["qk"] @ one["ov"]) / (norm(two["qk"]) * norm(one["ov"])))
        scores["V"].append(norm(two["ov"] @ one["ov"]) / (norm(two["ov"]) * norm(one["ov"])))
    baseline = random_baseline(config, samples, seed)
    for kind, values in scores.items():
        assert baseline.scores[kind] == pytest.approx(np.mean(values), abs=EXACT)
        assert baseline.p95[kind] == pytest.approx(np.percentile(values, 95), abs=EXACT)
        assert baseline.spread[kind] == pytest.approx(np.std(values), abs=EXACT)
        assert baseline.scores[kind] < baseline.p95[kind] < max(values) and baseline.spread[kind] > 0


def _ov_qk(model, kind: str, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
    """One head's W_OV and W_QK built from the module's weights with numpy, float64."""
    attn = {
        "encoder_self": lambda: model.encoder_layers[layer].self_attn,
        "decoder_self": lambda: model.decoder_layers[layer].self_attn,
        "cross": lambda: model.decoder_layers[layer].cross_attn,
    }[kind]()
    d = attn.head_dim
    rows = slice(head * d, (head + 1) * d)
    weight = lambda m: m.weight.detach().double().numpy()  # noqa: E731
    w_q, w_k, w_v = weight(attn.q_proj)[rows], weight(attn.k_proj)[rows], weight(attn.v_proj)[rows]
    return weight(attn.out_proj)[:, rows] @ w_v, w_q.T @ w_k


def test_unlinked_scores_are_every_pair_without_a_path_scored_with_numpy():
    model = load_checkpoint(resource_path("sort_rope.pt")).build().eval()
    n_layers, n_heads = model.config.n_encoder_layers, model.config.n_heads
    heads = [
        (k, layer, h)
        for k in ("encoder_self", "decoder_self", "cross")
        for layer in range(n_layers)
        for h in range(n_heads)
    ]
    step = lambda k, layer: -1 if k == "encoder_self" else 2 * layer + (k == "cross")  # noqa: E731

    def linked(s, t) -> bool:
        if s[0] == "encoder_self":
            return t[0] == "cross" or (t[0] == "encoder_self" and t[1] > s[1])
        return t[0] != "encoder_self" and step(t[0], t[1]) > step(s[0], s[1])

    pairs = [(s, t) for s in heads for t in heads if s != t and not linked(s, t)]
    fro = np.linalg.norm
    scores = {"Q": [], "K": [], "V": []}
    for s, t in pairs:
        ov1, _ = _ov_qk(model, *s)
        ov2, qk2 = _ov_qk(model, *t)
        scores["Q"].append(fro(qk2.T @ ov1) / (fro(qk2) * fro(ov1)))
        scores["K"].append(fro(qk2 @ ov1) / (fro(qk2) * fro(ov1)))
        scores["V"].append(fro(ov2 @ ov1) / (fro(ov2) * fro(ov1)))
    found = unlinked_scores(model)
    assert found.pairs == len(pairs) == 376  # of 24 * 23 ordered pairs of distinct heads, 176 are linked
    for kind in "QKV":
        assert found.mean[kind] == pytest.approx(np.mean(scores[kind]), abs=1e-10)
        assert found.p95[kind] == pytest.approx(np.percentile(scores[kind], 95), abs=1e-10)
