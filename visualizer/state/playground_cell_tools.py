"""The large map view's cell inspector as a view model (the mask painter is in playground_mask_painter.py).

CellInspector recomputes one cell with `core_model.cell_decomposition.decompose_cell` on the inputs of the
playground's pass, on a coalescing task slot (latest wins), and emits a numpy copy (the session boundary).
It holds no widget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import torch
from PySide6.QtCore import QObject, Signal

from core_model.cell_decomposition import CellDecomposition, decompose_cell
from core_model.masks import MaskSpec
from core_model.model import ATTENTION_KINDS, HeadGates, Seq2SeqTransformer

from .inline_slot import InlineSlot
from .worker_api import SlotFactory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CellInputs:
    """What one playground pass ran on; the decomposition of a cell reruns exactly this."""

    model: Seq2SeqTransformer
    src: torch.Tensor  # (1, S)
    tgt: torch.Tensor  # (1, T)
    masks: MaskSpec
    gates: HeadGates | None


@dataclass(frozen=True)
class CellRequest:
    kind: str
    layer: int
    head: int
    query: int
    key: int


def _decompose(_state: object, inputs: CellInputs, request: CellRequest) -> CellDecomposition:
    """The task: one cell taken apart, as numpy (it may run on a pool thread)."""
    r = request
    cell = decompose_cell(
        inputs.model,
        inputs.src,
        inputs.tgt,
        r.kind,
        r.layer,
        r.head,
        r.query,
        r.key,
        masks=inputs.masks,
        head_gates=inputs.gates,
    )
    return cell.to_numpy()


class CellInspector(QObject):
    """The cell a large view inspects; recomputed on request and whenever a new pass arrives (latest wins)."""

    cell_changed = Signal(object)  # CellDecomposition[np.ndarray], or None when nothing is inspected
    failed = Signal(str)  # why the cell could not be taken apart (e.g. the input got shorter)

    def __init__(self, inputs: Callable[[], CellInputs | None], make_slot: SlotFactory | None = None) -> None:
        """make_slot: the task layer's TaskSlot in the app (off the GUI thread); inline by default."""
        super().__init__()
        self._inputs = inputs
        self.request: CellRequest | None = None
        self.last: CellDecomposition | None = None
        # coalescing: while one cell is computed only the newest request waits, and a result it replaced is dropped
        self._slot = (make_slot or InlineSlot)("Taking the cell apart", self, coalesce=True)
        self._slot.finished.connect(self._deliver)
        self._slot.error_line.connect(self.failed)

    def inspect(self, kind: str, layer: int, head: int, query: int, key: int) -> None:
        """Take cell (query, key) of map (kind, layer, head) apart."""
        self.request = CellRequest(kind, layer, head, query, key)
        self.refresh()

    def clear(self) -> None:
        self.request, self.last = None, None
        self._slot.discard()
        self.cell_changed.emit(None)

    def refresh(self) -> None:
        """Recompute the inspected cell on the current inputs (a cheap pass, off the GUI thread in the app)."""
        request, inputs = self.request, self._inputs()
        if request is not None and inputs is not None:
            self._slot.submit(_decompose, inputs, request)

    def _deliver(self, cell: CellDecomposition) -> None:
        self.last = cell
        self.cell_changed.emit(cell)


def cell_inspectors(
    inputs: Callable[[], CellInputs | None], make_slot: SlotFactory | None = None
) -> dict[str, CellInspector]:
    """One inspector per kind of map (each large view follows its own cell); the composition root passes TaskSlot."""
    return {kind: CellInspector(inputs, make_slot) for kind in ATTENTION_KINDS}
