"""Per-head QK and OV circuits over tokens and the OV circuit's copying score, read from the weights alone.

Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits": each table is a head's direct path, what it
computes when the residual stream holds one token's embedding and nothing else. What is in and what is left out:

- Embeddings: E[t] = sqrt(d_model) * table.weight[t] (model.scale, paper §3.4), over the model's whole vocabulary
  (specials included). Encoder-side tokens use src_embed (encoder queries, keys, values; cross-attention keys and
  values, which read the memory); decoder-side tokens use tgt_embed (decoder-self queries, keys, values;
  cross-attention queries).
- Norms, pre-norm models: only each norm's gain (its weight) is folded in, as diag(g): the sublayer's own norm
  (sub_attn.norm, sub_self.norm, sub_cross.norm) in front of the queries and in front of self-attention's keys and
  values; model.encoder_norm in front of cross-attention's keys and values (it makes the memory); model.decoder_norm
  in front of the output layer. The centring, the division by the standard deviation (RMS) and the norm's bias are
  left out: they depend on the whole stream, not on the token. Post-norm models have no norm between the embedding
  and an attention sublayer's input on this path, and their final norms are the identity: nothing is folded.
- Biases: all left out, as Elhage et al. do (q, k, v projections and the output layer; out_proj has none). The QK
  table is then a bilinear form and the OV table a linear map of the embeddings, and the copying score is the
  spectrum of the very OV table returned.
- Positions: left out. RoPE rotates q and k by position and the sinusoids add a position vector; neither depends on
  the token, so the circuits are position-free (core_model.position_circuits reads the same path over positions).

QK[a, b] = (W_Q^h g_q*E_q[a]) . (W_K^h g_k*E_k[b]) / sqrt(head_dim): the score query token a gives key token b.
OV[b, c] = (W_U g_f*(W_O^h W_V^h g_k*E_k[b]))_c, W_U = generator.weight: the logit of output token c the head adds
when it attends wholly to token b. Encoder heads are read through the same output layer, as a lens: the model itself
reads the encoder stream only through cross-attention.
Copying score = sum(lambda) / sum(|lambda|) over the eigenvalues of the OV table (Elhage et al. 2021, "OV circuits",
their summary of the eigenvalue spectrum): complex eigenvalues come in conjugate pairs, so the numerator is real
(it equals the trace). It is 1 for a head whose eigenvalues are all positive (it raises the token it attends to),
-1 when they are all negative, and NaN when every eigenvalue is 0.
Centred tables: `qk_centred` subtracts from each QK row its mean over the symbol keys (softmax over a row ignores a
constant, so this is the part that decides), `ov_centred` from each OV column its mean over the attended symbols (a
logit the head adds whatever it attends to says nothing about the token it read) and then from each row its mean
over the output symbols (the output softmax ignores a logit added to every token). `centred_copying_score` is the
copying score of ov_centred's symbol block: on the shipped copy model the last cross heads' raw scores are -0.6 to
-0.8, dominated by such a constant push, while their centred scores are +0.96 to +0.99 (every row's winner on the
diagonal).
Diagonal wins: how many symbol rows of an OV table are won by their own symbol, each row's highest cell taken over
the outputs the model writes (the symbols and <eos>, as the tab's bold cells are). It is what a reader can check on
the table; the copying score weighs eigenvalues, so a head whose diagonal cells are large can score near +1 while a
few rows are won elsewhere (the copy model's cross L2 H3: +0.99 with 8 of 10 rows).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .cell_decomposition import attention_module
from .circuit_units import norm_spread
from .config import ModelConfig
from .model import ATTENTION_KINDS, AttentionKind, Seq2SeqTransformer
from .vocab import EOS, N_SPECIALS

NORM_SLOTS = {"encoder_self": "sub_attn", "decoder_self": "sub_self", "cross": "sub_cross"}  # layers.NormSlot names


@dataclass(frozen=True)
class HeadRef:
    """One head by attention kind, layer and head index (0-based)."""

    kind: AttentionKind
    layer: int
    head: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "layer": self.layer, "head": self.head}


@dataclass(frozen=True)
class HeadMatrices:
    """One head's slices of its projections, float64 on the CPU, in PyTorch's y = W x convention."""

    w_q: Tensor  # (D, d): rows h*D..(h+1)*D of q_proj.weight
    w_k: Tensor  # (D, d)
    w_v: Tensor  # (D, d)
    w_o: Tensor  # (d, D): columns h*D..(h+1)*D of out_proj.weight

    @property
    def qk(self) -> Tensor:
        """W_QK = W_Q^T W_K (d, d): score(x_q, x_k) = x_q^T W_QK x_k, biases left out."""
        return self.w_q.T @ self.w_k

    @property
    def ov(self) -> Tensor:
        """W_OV = W_O W_V (d, d): what the head writes for a residual x it attends to, W_OV x."""
        return self.w_o @ self.w_v


@dataclass(frozen=True)
class StreamSide:
    """One side of a head's direct path: the embedding table that feeds it and the pre-norm gain folded in."""

    table: nn.Embedding
    gain: Tensor | float  # (d,) float64, or 1.0 where no gain sits before the head
    norm: nn.Module | None = None  # the norm a run divides this side's stream by (pre-norm); None for post-norm


@dataclass(frozen=True)
class HeadCircuit:
    """One head's circuits over tokens."""

    ref: HeadRef
    qk: np.ndarray  # (V, V): query token x key token, pre-softmax score
    ov: np.ndarray  # (V, V): attended token x output token, logit added
    copying_score: float  # Elhage et al.'s, over the whole OV table
    # The copying score of `ov_centred`'s symbol block: how the head's output depends on the symbol it reads. A head
    # can add the same large logits whatever it attends to (a constant push towards a few outputs, a column of the
    # OV table); its eigenvalue then dominates Elhage et al.'s score and can hide a clean copying diagonal. Computed
    # once with the tables (an eigendecomposition of a V x V table is not for a window to redo on every read).
    centred_copying_score: float = math.nan
    diagonal_wins: int = 0  # symbol rows of `ov` won by their own symbol (`diagonal_wins`)
    centred_diagonal_wins: int = 0  # the same of `ov_centred`
    query_spread: float = math.nan  # what a run's norm divides a lone query-side embedding by (`side_spread`)
    key_spread: float = math.nan  # the same on the key and value side

    @property
    def symbol_rows(self) -> int:
        """How many symbol rows the diagonal wins are counted over: the vocabulary less the specials."""
        return self.ov.shape[0] - N_SPECIALS

    @property
    def qk_centred(self) -> np.ndarray:
        """Each QK row minus its mean over the symbol keys (softmax ignores it): `centred(qk, axis=1)`."""
        return centred(self.qk, axis=1)

    @property
    def ov_centred(self) -> np.ndarray:
        """OV less each column's mean over the attended symbols, then each row's mean over the output symbols."""
        return centred(centred(self.ov, axis=0), axis=1)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.ref.to_dict(),
            "copying_score": self.copying_score,
            "centred_copying_score": self.centred_copying_score,
            "diagonal_wins": self.diagonal_wins,
            "centred_diagonal_wins": self.centred_diagonal_wins,
            "symbol_rows": self.symbol_rows,
            "query_spread": self.query_spread,
            "key_spread": self.key_spread,
            "qk": self.qk.tolist(),
            "ov": self.ov.tolist(),
            "qk_centred": self.qk_centred.tolist(),
            "ov_centred": self.ov_centred.tolist(),
        }


def head_refs(config: ModelConfig) -> list[HeadRef]:
    """Every head of the model: encoder self, decoder self, cross; each by layer, then head."""
    layers = {"encoder_self": config.n_encoder_layers, "decoder_self": config.n_decoder_layers}
    layers["cross"] = config.n_decoder_layers
    return [
        HeadRef(kind, layer, head)
        for kind in ATTENTION_KINDS
        for layer in range(layers[kind])
        for head in range(config.n_heads)
    ]


def head_matrices(model: Seq2SeqTransformer, ref: HeadRef) -> HeadMatrices:
    """The head's W_Q, W_K, W_V (its rows of each projection) and W_O (its columns of out_proj), float64."""
    attn = attention_module(model, ref.kind, ref.layer)
    rows = slice(ref.head * attn.head_dim, (ref.head + 1) * attn.head_dim)
    w_q, w_k, w_v, w_o = (_f64(m.weight) for m in (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj))
    return HeadMatrices(w_q[rows], w_k[rows], w_v[rows], w_o[:, rows])


def token_circuits(model: Seq2SeqTransformer, progress: Callable[[int, int], None] | None = None) -> list[HeadCircuit]:
    """Every head's QK and OV tables over the whole vocabulary, and its copying scores (see the module docstring);
    `progress(done, total)` after each head."""
    unembed = _f64(model.generator.weight) * _gain(model, model.decoder_norm)  # (V, d): W_U diag(g_f)
    out: list[HeadCircuit] = []
    refs = head_refs(model.config)
    n_heads = len(refs)
    for ref in refs:
        w = head_matrices(model, ref)
        e_q, e_k = _token_sides(model, ref)  # (V, d) each, gains folded
        qk = (e_q @ w.w_q.T) @ (e_k @ w.w_k.T).T / math.sqrt(w.w_q.shape[0])  # (V, D) @ (D, V) -> (V, V)
        ov = e_k @ w.ov.T @ unembed.T  # (V, d) @ (d, d) @ (d, V) -> (V, V)
        ov_np = ov.numpy()
        centred_ov = centred(centred(ov_np, axis=0), axis=1)
        scores = copying_score(ov_np), copying_score(centred_ov[N_SPECIALS:, N_SPECIALS:])
        wins = diagonal_wins(ov_np), diagonal_wins(centred_ov)
        spreads = (side_spread(model, side) for side in head_sides(model, ref))
        out.append(HeadCircuit(ref, qk.numpy(), ov_np, *scores, *wins, *spreads))
        if progress is not None:
            progress(len(out), n_heads)
    return out


def copying_score(ov: np.ndarray) -> float:
    """sum(lambda) / sum(|lambda|) over the eigenvalues of a square matrix (Elhage et al. 2021); NaN if all are 0."""
    eigenvalues = np.linalg.eigvals(ov)
    magnitude = float(np.abs(eigenvalues).sum())
    return float(eigenvalues.sum().real) / magnitude if magnitude > 0 else math.nan


def diagonal_wins(ov: np.ndarray) -> int:
    """Symbol rows of a (V, V) OV table whose highest cell over the outputs (symbols and <eos>; the first on a tie)
    is the row's own symbol: the count a reader confirms from the table's row winners."""
    outputs = np.r_[EOS, np.arange(N_SPECIALS, ov.shape[1])]  # what the model writes: never <pad> or <bos>
    winners = outputs[ov[N_SPECIALS:][:, outputs].argmax(axis=1)]  # (V - N_SPECIALS,) token ids
    return int((winners == np.arange(N_SPECIALS, ov.shape[0])).sum())


def head_sides(model: Seq2SeqTransformer, ref: HeadRef) -> tuple[StreamSide, StreamSide]:
    """(query side, key/value side) of the head's direct path: which table feeds each, which gain sits before it."""
    layer = (model.encoder_layers if ref.kind == "encoder_self" else model.decoder_layers)[ref.layer]
    own_norm: nn.Module = getattr(layer, NORM_SLOTS[ref.kind]).norm  # the norm in front of this sublayer
    pre = model.config.norm_position == "pre"
    table = model.src_embed if ref.kind == "encoder_self" else model.tgt_embed
    query = StreamSide(table, _gain(model, own_norm), own_norm if pre else None)
    if ref.kind != "cross":
        return query, query
    memory_norm = model.encoder_norm if pre else None
    return query, StreamSide(model.src_embed, _gain(model, model.encoder_norm), memory_norm)  # the memory's tokens


def side_spread(model: Seq2SeqTransformer, side: StreamSide) -> float:
    """What a run's norm divides a lone symbol embedding of this side by, averaged over the symbols (NaN without a
    norm before the head): core_model.circuit_units."""
    if side.norm is None:
        return math.nan
    return norm_spread(scaled_embedding(model, side.table)[N_SPECIALS:], side.norm)


def _token_sides(model: Seq2SeqTransformer, ref: HeadRef) -> tuple[Tensor, Tensor]:
    """(query-side, key/value-side) scaled embeddings of every token, each norm's gain folded in: (V, d) each."""
    query, key = head_sides(model, ref)
    return scaled_embedding(model, query.table) * query.gain, scaled_embedding(model, key.table) * key.gain


def scaled_embedding(model: Seq2SeqTransformer, table: nn.Embedding) -> Tensor:
    """sqrt(d_model) * the table, float64 on the CPU: (V, d); paper §3.4, as the model's _embed scales it."""
    return _f64(table.weight) * model.scale


def _gain(model: Seq2SeqTransformer, norm: nn.Module) -> Tensor | float:
    """The norm's gain (d,) when it sits before the sublayer (pre-norm); 1 for post-norm or a norm without one."""
    weight = getattr(norm, "weight", None)
    if model.config.norm_position != "pre" or weight is None:
        return 1.0
    return _f64(weight)


def _f64(t: Tensor) -> Tensor:
    return t.detach().to("cpu", torch.float64)


def centred(table: np.ndarray, axis: int, first_symbol: int = N_SPECIALS) -> np.ndarray:
    """`table` minus its mean over the symbols along `axis`, the specials' entries left out of the mean.

    QK, axis 1: each row minus its mean over the symbol keys; softmax over a row ignores a constant, so what is left
    is the part that decides. OV, axis 0: each column minus its mean over the attended symbols; a column the head
    raises whatever it attends to is a constant push, not a reading of the token.
    """
    symbols = table[:, first_symbol:] if axis == 1 else table[first_symbol:, :]
    return table - symbols.mean(axis=axis, keepdims=True)
