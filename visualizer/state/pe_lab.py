"""View model of the positional-encoding lab: parameters in, immutable numpy curves out (widgets never see torch).

Sinusoidal PE follows Vaswani et al. 2017 §3.5; RoPE follows RoFormer (Su et al. 2021). Both are computed with
core_model.positional, in float64, and converted to numpy once per change.
"""
from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from PySide6.QtCore import QObject, Signal

from core_model.positional import apply_rope, rope_angles, sinusoidal_table

log = logging.getLogger(__name__)

PE_KINDS = ("sinusoidal", "rope")
ROPE_VECTORS = ("random", "ones")  # the fixed q, k probed under RoPE: seeded normal draws, or all ones
MAX_D_MODEL = 1024
MAX_POSITIONS = 2048
MAX_DIMS = 12  # more waveforms than this make an unreadable legend
ROPE_SEED = 0
ROPE_PAIRS_SHOWN = 6


def default_head_dim(d_model: int) -> int:
    """d_model // 4 rounded down to an even number, at least 2 (RoPE rotates pairs)."""
    return max(2, (d_model // 4) // 2 * 2)


def parse_dims(text: str) -> tuple[int, ...]:
    """'4,5,6,7', '4 5 6 7' or '4-7' -> (4, 5, 6, 7); anything else raises ValueError with a hint."""
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise ValueError("enter at least one dimension, e.g. 4,5,6,7 or 4-7")
    dims: list[int] = []
    for part in parts:
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if match is None:
            raise ValueError(f"'{part}' is not a dimension number (use e.g. 4,5,6,7 or 4-7)")
        lo, hi = int(match.group(1)), int(match.group(2) or match.group(1))
        if hi < lo:
            raise ValueError(f"range '{part}' runs backwards")
        if hi - lo >= MAX_DIMS:
            raise ValueError(f"range '{part}' is longer than {MAX_DIMS} dimensions")
        dims.extend(range(lo, hi + 1))
    return tuple(dims)


def format_dims(dims: Sequence[int]) -> str:
    """The text the dimensions line edit shows."""
    return ",".join(str(d) for d in dims)


def _check_int(name: str, value: int, lo: int, hi: int, *, even: bool = False) -> None:
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
    rope_vectors: str = "random"  # which fixed q, k the RoPE similarity uses

    def __post_init__(self) -> None:
        _check_int("d_model", self.d_model, 2, MAX_D_MODEL, even=True)
        _check_int("n_positions", self.n_positions, 1, MAX_POSITIONS)
        _check_int("head_dim", self.head_dim, 2, MAX_D_MODEL, even=True)
        if not isinstance(self.base, (int, float)) or not math.isfinite(self.base) or self.base <= 1.0:
            raise ValueError(f"base must be a finite number > 1, got {self.base!r}")
        self._check_dims()
        if len(self.references) != 2:
            raise ValueError("references must hold two positions")
        for ref in self.references:
            _check_int("reference position", ref, 0, MAX_POSITIONS)
        if self.rope_vectors not in ROPE_VECTORS:
            raise ValueError(f"rope_vectors must be one of {ROPE_VECTORS}, got {self.rope_vectors!r}")

    def _check_dims(self) -> None:
        if not self.dims:
            raise ValueError("choose at least one dimension")
        if len(self.dims) > MAX_DIMS:
            raise ValueError(f"choose at most {MAX_DIMS} dimensions, got {len(self.dims)}")
        for d in self.dims:
            _check_int("dimension", d, 0, self.d_model - 1)
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
    return torch.randn(2, head_dim, generator=gen, dtype=torch.float64)


def _rope_similarity(p: PELabParams, angles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Rotate q at m and k at m + k with apply_rope (a real check, not the closed form) -> two (P,) curves."""
    qk = _probe_vectors(p.head_dim, p.rope_vectors)  # (2, hd)
    t = angles.shape[0]
    x = qk[None, :, None, :].expand(1, 2, t, p.head_dim)  # (1, 2, T, hd): head 0 = q, head 1 = k, at every position
    rotated = apply_rope(x, torch.cos(angles), torch.sin(angles))[0]  # (2, T, hd)
    curves = [rotated[1, m:m + p.n_positions] @ rotated[0, m] for m in p.references]  # (P,) each
    return curves[0], curves[1], float(qk[0].norm() * qk[1].norm())


def compute_pe_lab(p: PELabParams, model_pe: ModelPE | None = None) -> PELabData:
    """All curves for one parameter set; torch in, numpy out, once."""
    n, t = p.n_positions, max(p.references) + p.n_positions  # T rows cover every m0 + k
    table = sinusoidal_table(t, p.d_model, p.base, dtype=torch.float64)  # (T, D)
    sims = [table[m:m + n] @ table[m] for m in p.references]  # (P,) each
    angles = rope_angles(t, p.head_dim, p.base)  # (T, R)
    rope_a, rope_b, rope_norm = _rope_similarity(p, angles)
    matrix = table[:n].numpy()
    angles_np = angles[:n].numpy()
    n_pairs = p.head_dim // 2
    pairs = np.unique(np.linspace(0, n_pairs - 1, min(n_pairs, ROPE_PAIRS_SHOWN)).round().astype(int))
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


def _dims_for(dims: Sequence[int], d_model: int) -> tuple[int, ...]:
    """Keep the dimensions that still exist in a narrower table; fall back to the first few."""
    kept = tuple(d for d in dims if d < d_model)
    return kept or tuple(range(min(4, d_model)))


class PELabState(QObject):
    """Holds the lab's parameters and the loaded model's PE; emits a fresh PELabData after every accepted change."""

    changed = Signal(object)  # PELabData

    def __init__(self, d_model: int = 64, n_positions: int = 100, base: float = 10000.0,
                 dims: Sequence[int] = (4, 5, 6, 7), head_dim: int | None = None,
                 references: tuple[int, int] = (0, 50), rope_vectors: str = "random",
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        _check_int("d_model", d_model, 2, MAX_D_MODEL, even=True)
        self._params = PELabParams(d_model, n_positions, float(base), _dims_for(tuple(dims), d_model),
                                   default_head_dim(d_model) if head_dim is None else head_dim,
                                   tuple(references), rope_vectors)
        self._model_pe: ModelPE | None = None
        self._data = compute_pe_lab(self._params)

    @property
    def params(self) -> PELabParams:
        return self._params

    @property
    def data(self) -> PELabData:
        return self._data

    @property
    def model_pe(self) -> ModelPE | None:
        return self._model_pe

    @property
    def pe_kind(self) -> str | None:
        """Which PE the loaded model uses ('sinusoidal' | 'rope'), None before a model is known."""
        return self._model_pe.kind if self._model_pe else None

    def _update(self, params: PELabParams, model_pe: ModelPE | None) -> None:
        """Recompute and emit, unless nothing changed."""
        if params == self._params and model_pe == self._model_pe:
            return
        self._params, self._model_pe = params, model_pe
        self._data = compute_pe_lab(params, model_pe)
        self.changed.emit(self._data)

    def set_d_model(self, d_model: int) -> None:
        """Narrowing the table drops chosen dimensions that no longer exist."""
        _check_int("d_model", d_model, 2, MAX_D_MODEL, even=True)
        dims = _dims_for(self._params.dims, d_model)
        if dims != self._params.dims:
            log.info("dimensions %s do not all fit d_model %d; showing %s", self._params.dims, d_model, dims)
        self._update(replace(self._params, d_model=d_model, dims=dims), self._model_pe)

    def set_n_positions(self, n_positions: int) -> None:
        self._update(replace(self._params, n_positions=n_positions), self._model_pe)

    def set_base(self, base: float) -> None:
        self._update(replace(self._params, base=base), self._model_pe)

    def set_base_text(self, text: str) -> None:
        """Parse what the user typed ('10000', '1e4')."""
        try:
            base = float(text.strip())
        except ValueError:
            raise ValueError(f"base must be a number > 1, got '{text.strip()}'") from None
        self.set_base(base)

    def set_dims(self, dims: Sequence[int]) -> None:
        self._update(replace(self._params, dims=tuple(dims)), self._model_pe)

    def set_dims_text(self, text: str) -> None:
        """Parse '4,5,6,7' or '4-7' and apply it."""
        self.set_dims(parse_dims(text))

    def set_head_dim(self, head_dim: int) -> None:
        self._update(replace(self._params, head_dim=head_dim), self._model_pe)

    def set_reference(self, position: int) -> None:
        """The first reference position m0 of the similarity curves."""
        self._update(replace(self._params, references=(position, self._params.references[1])), self._model_pe)

    def set_second_reference(self, position: int) -> None:
        """The second m0, whose curves should coincide with the first (dependence on offset only)."""
        self._update(replace(self._params, references=(self._params.references[0], position)), self._model_pe)

    def set_rope_vectors(self, kind: str) -> None:
        self._update(replace(self._params, rope_vectors=kind), self._model_pe)

    def set_model_pe(self, kind: str, d_model: int, base: float, head_dim: int) -> None:
        """Sync the lab to the loaded model and highlight the PE it uses.

        A sinusoidal model's odd head size is not a RoPE size, so then the lab keeps its own head_dim.
        """
        model_pe = ModelPE(kind, int(d_model), float(base), int(head_dim))
        _check_int("d_model", d_model, 2, MAX_D_MODEL, even=True)
        if kind == "rope" or (head_dim % 2 == 0 and 2 <= head_dim <= MAX_D_MODEL):
            new_head_dim = head_dim
        else:
            new_head_dim = self._params.head_dim
        params = replace(self._params, d_model=d_model, base=float(base), head_dim=new_head_dim,
                         dims=_dims_for(self._params.dims, d_model))
        self._update(params, model_pe)
