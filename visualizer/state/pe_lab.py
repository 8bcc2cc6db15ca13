"""View model of the positional-encoding lab: parameters in, immutable numpy curves out (widgets never see torch).

The curves come from core_model.pe_analysis; this module adds what the tab needs on top: text parsing of the
dimension and pair lists, the loaded model's PE, and a QObject that emits a fresh PELabData after every accepted change.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import replace

from PySide6.QtCore import QObject, Signal

from core_model.pe_analysis import (
    MAX_D_MODEL,
    MAX_DIMS,
    ModelPE,
    PELabData,
    PELabParams,
    check_int,
    compute_pe_lab,
    default_head_dim,
)

log = logging.getLogger(__name__)


def parse_dims(text: str, what: str = "dimension") -> tuple[int, ...]:
    """'4,5,6,7', '4 5 6 7' or '4-7' -> (4, 5, 6, 7); anything else raises ValueError with a hint.

    `what` names the numbers in the messages ("dimension", or "pair" for the RoPE pairs)."""
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise ValueError(f"enter at least one {what}, e.g. 4,5,6,7 or 4-7")
    dims: list[int] = []
    for part in parts:
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if match is None:
            raise ValueError(f"'{part}' is not a {what} number (use e.g. 4,5,6,7 or 4-7)")
        lo, hi = int(match.group(1)), int(match.group(2) or match.group(1))
        if hi < lo:
            raise ValueError(f"range '{part}' runs backwards")
        if hi - lo >= MAX_DIMS:
            raise ValueError(f"range '{part}' is longer than {MAX_DIMS} {what}s")
        dims.extend(range(lo, hi + 1))
    return tuple(dims)


def parse_pairs(text: str) -> tuple[int, ...]:
    """The RoPE pairs field: like the dimensions, or empty (or "auto") for the default spread."""
    return () if text.strip().lower() in ("", "auto") else parse_dims(text, "pair")


def format_dims(dims: Sequence[int]) -> str:
    """The text the dimensions line edit shows."""
    return ",".join(str(d) for d in dims)


def _pairs_for(pairs: Sequence[int], head_dim: int) -> tuple[int, ...]:
    """Keep the chosen pairs that a smaller head still has; none left: the default spread."""
    return tuple(i for i in pairs if i < head_dim // 2)


def _dims_for(dims: Sequence[int], d_model: int) -> tuple[int, ...]:
    """Keep the dimensions that still exist in a narrower table; fall back to the first few."""
    kept = tuple(d for d in dims if d < d_model)
    return kept or tuple(range(min(4, d_model)))


class PELabState(QObject):
    """Holds the lab's parameters and the loaded model's PE; emits a fresh PELabData after every accepted change."""

    changed = Signal(object)  # PELabData

    def __init__(
        self,
        d_model: int = 64,
        n_positions: int = 100,
        base: float = 10000.0,
        dims: Sequence[int] = (4, 5, 6, 7),
        head_dim: int | None = None,
        references: tuple[int, int] = (0, 50),
        rope_vectors: str = "q = k",
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        check_int("d_model", d_model, 2, MAX_D_MODEL, even=True)
        self._params = PELabParams(
            d_model,
            n_positions,
            float(base),
            _dims_for(tuple(dims), d_model),
            default_head_dim(d_model) if head_dim is None else head_dim,
            (int(references[0]), int(references[1])),
            rope_vectors,
        )
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
        check_int("d_model", d_model, 2, MAX_D_MODEL, even=True)
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
        """A smaller head drops chosen pairs that no longer exist."""
        check_int("head_dim", head_dim, 2, MAX_D_MODEL, even=True)
        pairs = _pairs_for(self._params.pairs, head_dim)
        self._update(replace(self._params, head_dim=head_dim, pairs=pairs), self._model_pe)

    def set_pairs_text(self, text: str) -> None:
        """Parse '0,3,7' or '0-3' (empty or 'auto': the default spread) and apply it."""
        self._update(replace(self._params, pairs=parse_pairs(text)), self._model_pe)

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
        check_int("d_model", d_model, 2, MAX_D_MODEL, even=True)
        if kind == "rope" or (head_dim % 2 == 0 and 2 <= head_dim <= MAX_D_MODEL):
            new_head_dim = head_dim
        else:
            new_head_dim = self._params.head_dim
        params = replace(
            self._params,
            d_model=d_model,
            base=float(base),
            head_dim=new_head_dim,
            dims=_dims_for(self._params.dims, d_model),
            pairs=_pairs_for(self._params.pairs, new_head_dim),
        )
        self._update(params, model_pe)
