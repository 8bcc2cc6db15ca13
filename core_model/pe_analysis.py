"""Positional-encoding analysis: sinusoid tables, RoPE angles and similarity-vs-offset curves, as numpy (no Qt).

Sinusoidal PE follows Vaswani et al. 2017 §3.5; RoPE follows RoFormer (Su et al. 2021). Both are computed with
core_model.positional in float64 and converted to numpy once, so a notebook and the app's PE tab share one
implementation: `compute_pe_lab(PELabParams(d_model=128))`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from core_model.positional import apply_rope, rope_angles, sinusoidal_table

PE_KINDS = ("sinusoidal", "rope")
ROPE_VECTORS = ("q = k", "random pair", "ones")  # q, k probed under RoPE: one seeded draw for both (offset 0 is
# then the maximum), two independent draws (a random pair starts anywhere, e.g. about -0.5), or all ones
MAX_D_MODEL = 1024
MAX_POSITIONS = 2048
MAX_DIMS = 12  # more waveforms than this make an unreadable legend
ROPE_SEED = 0
ROPE_PAIRS_SHOWN = 6  # pairs drawn when none are chosen: spread from the fastest to the slowest


def default_head_dim(d_model: int) -> int:
    """d_model // 4 rounded down to an even number, at least 2 (RoPE rotates pairs)."""
    return max(2, (d_model // 4) // 2 * 2)


def check_int(name: str, value: int, lo: int, hi: int, *, even: bool = False) -> None:
    """Raise ValueError naming `name` unless value is an integer in [lo, hi] (and even, when asked)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, got {value}")
    if even and value % 2:
        raise ValueError(f"{name} must be even, got {value}")


@dataclass(frozen=True)
class PELabParams:
    """Everything the lab computes from; invalid values raise ValueError naming the field."""

    d_model: int = 64  # width of the sinusoidal table (even)
    n_positions: int = 100  # positions shown: 0..n_positions-1
    base: float = 10000.0  # the 10000 of §3.5 (RoPE's theta base too)
    dims: tuple[int, ...] = (4, 5, 6, 7)  # table columns drawn as waveforms
    head_dim: int = 16  # RoPE head size (even)
    references: tuple[int, int] = (0, 50)  # two reference positions m0 for the similarity curves
    rope_vectors: str = "q = k"  # which fixed q, k the RoPE similarity uses
    pairs: tuple[int, ...] = ()  # RoPE pairs drawn as angle curves; () = ROPE_PAIRS_SHOWN spread over all

    def __post_init__(self) -> None:
        check_int("d_model", self.d_model, 2, MAX_D_MODEL, even=True)
        check_int("n_positions", self.n_positions, 1, MAX_POSITIONS)
        check_int("head_dim", self.head_dim, 2, MAX_D_MODEL, even=True)
        if not isinstance(self.base, (int, float)) or not math.isfinite(self.base) or self.base <= 1.0:
            raise ValueError(f"base must be a finite number > 1, got {self.base!r}")
        self._check_dims()
        if len(self.references) != 2:
            raise ValueError("references must hold two positions")
        for ref in self.references:
            check_int("reference position", ref, 0, MAX_POSITIONS)
        if self.rope_vectors not in ROPE_VECTORS:
            raise ValueError(f"rope_vectors must be one of {ROPE_VECTORS}, got {self.rope_vectors!r}")
        self._check_pairs()

    def _check_pairs(self) -> None:
        if len(self.pairs) > MAX_DIMS:
            raise ValueError(f"choose at most {MAX_DIMS} pairs, got {len(self.pairs)}")
        for i in self.pairs:
            check_int("pair", i, 0, self.head_dim // 2 - 1)
        if len(set(self.pairs)) != len(self.pairs):
            raise ValueError("each pair may appear once")

    def _check_dims(self) -> None:
        if not self.dims:
            raise ValueError("choose at least one dimension")
        if len(self.dims) > MAX_DIMS:
            raise ValueError(f"choose at most {MAX_DIMS} dimensions, got {len(self.dims)}")
        for d in self.dims:
            check_int("dimension", d, 0, self.d_model - 1)
        if len(set(self.dims)) != len(self.dims):
            raise ValueError("each dimension may appear once")


@dataclass(frozen=True)
class ModelPE:
    """What the app's loaded model uses, for the highlight and the 'Loaded model uses' label."""

    kind: str  # "sinusoidal" | "rope"
    d_model: int
    base: float
    head_dim: int

    def __post_init__(self) -> None:
        if self.kind not in PE_KINDS:
            raise ValueError(f"pe kind must be one of {PE_KINDS}, got {self.kind!r}")

    @property
    def description(self) -> str:
        if self.kind == "rope":
            return f"RoPE (head dim {self.head_dim})"
        return f"sinusoidal PE (d_model {self.d_model})"


@dataclass(frozen=True)
class PELabData:
    """One immutable snapshot of every curve the PE tab draws; arrays are float64 and read-only.

    P = n_positions, D = d_model, K = len(dims), R = head_dim // 2.
    """

    params: PELabParams
    model_pe: ModelPE | None
    positions: np.ndarray  # (P,) 0..P-1
    waveforms: np.ndarray  # (P, K) PE[:, dims]
    matrix: np.ndarray  # (P, D) the full sinusoidal table
    rope_angles: np.ndarray  # (P, R) m * theta_i
    rope_angles_wrapped: np.ndarray  # (P, R) the same wrapped to (-pi, pi]
    rope_pairs: tuple[int, ...]  # pair indices worth drawing as curves (spread over 0..R-1)
    offsets: np.ndarray  # (P,) k = 0..P-1
    similarity_sin: np.ndarray  # (P,) PE(m0) . PE(m0 + k), m0 = references[0]
    similarity_sin_second: np.ndarray  # (P,) the same from m0 = references[1]
    similarity_rope: np.ndarray  # (P,) R(m0) q . R(m0 + k) k, m0 = references[0]
    similarity_rope_second: np.ndarray  # (P,) the same from m0 = references[1]
    sin_norm: float  # |PE(m)|^2 (= D / 2), divides similarity_sin into a cosine
    rope_norm: float  # |q| |k| (rotations keep norms), divides similarity_rope into a cosine

    @property
    def pe_kind(self) -> str | None:
        return self.model_pe.kind if self.model_pe else None


def _frozen(array: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(array, dtype=np.float64)
    out.flags.writeable = False
    return out


def _probe_vectors(head_dim: int, kind: str) -> torch.Tensor:
    """The fixed q and k, stacked -> (2, head_dim) float64."""
    if kind == "ones":
        return torch.ones(2, head_dim, dtype=torch.float64)
    gen = torch.Generator().manual_seed(ROPE_SEED)
    if kind == "q = k":
        return torch.randn(1, head_dim, generator=gen, dtype=torch.float64).expand(2, head_dim)
    return torch.randn(2, head_dim, generator=gen, dtype=torch.float64)


def _rope_similarity(p: PELabParams, angles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Rotate q at m and k at m + k with apply_rope (a real check, not the closed form) -> two (P,) curves."""
    qk = _probe_vectors(p.head_dim, p.rope_vectors)  # (2, hd)
    t = angles.shape[0]
    x = qk[None, :, None, :].expand(1, 2, t, p.head_dim)  # (1, 2, T, hd): head 0 = q, head 1 = k, at every position
    rotated = apply_rope(x, torch.cos(angles), torch.sin(angles))[0]  # (2, T, hd)
    curves = [rotated[1, m : m + p.n_positions] @ rotated[0, m] for m in p.references]  # (P,) each
    return curves[0], curves[1], float(qk[0].norm() * qk[1].norm())


def spread_pairs(head_dim: int) -> tuple[int, ...]:
    """The pairs drawn when none are chosen: ROPE_PAIRS_SHOWN of them from the fastest (0) to the slowest."""
    n_pairs = head_dim // 2
    return tuple(int(i) for i in np.unique(np.linspace(0, n_pairs - 1, min(n_pairs, ROPE_PAIRS_SHOWN)).round()))


def compute_pe_lab(p: PELabParams, model_pe: ModelPE | None = None) -> PELabData:
    """All curves for one parameter set; torch in, numpy out, once."""
    n, t = p.n_positions, max(p.references) + p.n_positions  # T rows cover every m0 + k
    table = sinusoidal_table(t, p.d_model, p.base, dtype=torch.float64)  # (T, D)
    sims = [table[m : m + n] @ table[m] for m in p.references]  # (P,) each
    angles = rope_angles(t, p.head_dim, p.base)  # (T, R)
    rope_a, rope_b, rope_norm = _rope_similarity(p, angles)
    matrix = table[:n].numpy()
    angles_np = angles[:n].numpy()
    pairs = p.pairs or spread_pairs(p.head_dim)
    return PELabData(
        params=p,
        model_pe=model_pe,
        positions=_frozen(np.arange(n)),
        waveforms=_frozen(matrix[:, list(p.dims)]),
        matrix=_frozen(matrix),
        rope_angles=_frozen(angles_np),
        rope_angles_wrapped=_frozen(np.pi - np.mod(np.pi - angles_np, 2 * np.pi)),
        rope_pairs=tuple(int(i) for i in pairs),
        offsets=_frozen(np.arange(n)),
        similarity_sin=_frozen(sims[0].numpy()),
        similarity_sin_second=_frozen(sims[1].numpy()),
        similarity_rope=_frozen(rope_a.numpy()),
        similarity_rope_second=_frozen(rope_b.numpy()),
        sin_norm=float(table[p.references[0]] @ table[p.references[0]]),
        rope_norm=rope_norm,
    )
