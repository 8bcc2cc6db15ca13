"""The large map view's two tools as view models: inspecting one cell and painting masks by hand.

CellInspector recomputes one cell with `core_model.cell_decomposition.decompose_cell` on the inputs of the
playground's pass and emits a numpy copy (the session boundary). MaskPainter turns strokes over a map into painted
cells of the session's MaskSpec, one undo step per stroke. Neither holds a widget.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

import torch
from PySide6.QtCore import QObject, Signal

from core_model.cell_decomposition import CellDecomposition, decompose_cell
from core_model.masks import PAINTED_FIELDS, Cells, MaskSpec
from core_model.model import HeadGates, Seq2SeqTransformer

log = logging.getLogger(__name__)
# run(job, on_done, on_error): inline by default; the app passes the task layer's run_task
Runner = Callable[[Callable[[], Any], Callable[[Any], None], Callable[[str], None]], Any]


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


def run_inline(job: Callable[[], Any], on_done: Callable[[Any], None], on_error: Callable[[str], None]) -> None:
    """The default runner: the job at once, on this thread (tests, scripts)."""
    try:
        result = job()
    except Exception as exc:  # noqa: BLE001 - shown to the user as a sentence
        log.warning("cell decomposition failed", exc_info=True)
        on_error(str(exc) or type(exc).__name__)
        return
    on_done(result)


class CellInspector(QObject):
    """The cell a large view inspects; recomputed on request and whenever a new pass arrives (latest wins)."""

    cell_changed = Signal(object)  # CellDecomposition[np.ndarray], or None when nothing is inspected
    failed = Signal(str)  # why the cell could not be taken apart (e.g. the input got shorter)

    def __init__(self, inputs: Callable[[], CellInputs | None], runner: Runner | None = None) -> None:
        super().__init__()
        self._inputs, self._runner = inputs, runner or run_inline
        self.request: CellRequest | None = None
        self.last: CellDecomposition | None = None
        self._serial = 0
        self._busy = False  # a job is running: further refreshes wait and run once after it (no pile-up)
        self._again = False

    def set_runner(self, runner: Runner) -> None:
        self._runner = runner

    def inspect(self, kind: str, layer: int, head: int, query: int, key: int) -> None:
        """Take cell (query, key) of map (kind, layer, head) apart."""
        self.request = CellRequest(kind, layer, head, query, key)
        self._serial += 1  # a job still running for another cell is now stale
        self.refresh()

    def clear(self) -> None:
        self.request, self.last, self._again = None, None, False
        self._serial += 1
        self.cell_changed.emit(None)

    def refresh(self) -> None:
        """Recompute the inspected cell on the current inputs (a cheap pass, off the GUI thread in the app)."""
        if self._busy:
            self._again = True
            return
        request, inputs = self.request, self._inputs()
        if request is None or inputs is None:
            return
        self._busy = True
        self._serial += 1
        serial = self._serial
        model = inputs.model

        def job() -> CellDecomposition:
            cell = decompose_cell(
                model,
                inputs.src,
                inputs.tgt,
                request.kind,
                request.layer,
                request.head,
                request.query,
                request.key,
                masks=inputs.masks,
                head_gates=inputs.gates,
            )
            return cell.to_numpy()

        self._runner(job, lambda cell: self._deliver(serial, cell), lambda msg: self._fail(serial, msg))

    def _deliver(self, serial: int, cell: CellDecomposition) -> None:
        if serial == self._serial:  # an older request finishing late is dropped
            self.last = cell
            self.cell_changed.emit(cell)
        self._finished()

    def _fail(self, serial: int, message: str) -> None:
        if serial == self._serial:
            self.failed.emit(message)
        self._finished()

    def _finished(self) -> None:
        self._busy = False
        if self._again:  # inputs changed while it ran: once more, on the newest
            self._again = False
            self.refresh()


PaintedState = tuple[Cells, Cells, Cells]  # encoder_self, decoder_self, cross


class MaskPainter(QObject):
    """Strokes over a map hide (or show again) cells; each stroke is one undo step."""

    history_changed = Signal(bool)  # whether there is a stroke to undo

    def __init__(self, get_spec: Callable[[], MaskSpec], set_spec: Callable[[MaskSpec], None]) -> None:
        super().__init__()
        self._get, self._set = get_spec, set_spec
        self._history: list[PaintedState] = []
        self._stroke_open = False

    @property
    def can_undo(self) -> bool:
        return bool(self._history)

    def painted(self, kind: str) -> Cells:
        return self._get().painted(kind)

    def paint(self, kind: str, cells: Iterable[tuple[int, int]], erase: bool = False) -> None:
        """Add (or, erasing, remove) cells of `kind`; calls within one stroke share one undo step."""
        spec = self._get()
        current = spec.painted(kind)
        cells = frozenset(cells)
        new = current - cells if erase else current | cells
        if new == current:
            return
        if not self._stroke_open:
            self._stroke_open = True
            self._push(_painted_state(spec))
        self._set(spec.with_painted(kind, new))

    def end_stroke(self) -> None:
        self._stroke_open = False

    def undo(self) -> None:
        """Back to the painted cells before the last stroke (the other mask settings stay as they are)."""
        if not self._history:
            return
        state = self._history.pop()
        self._stroke_open = False
        self.history_changed.emit(self.can_undo)
        fields = dict(zip(PAINTED_FIELDS.values(), state))
        self._set(replace(self._get(), **fields))

    def forget(self) -> None:
        """Drop the history (Reset masks cleared the painting)."""
        self._history.clear()
        self._stroke_open = False
        self.history_changed.emit(False)

    def _push(self, state: PaintedState) -> None:
        self._history.append(state)
        self.history_changed.emit(True)


def _painted_state(spec: MaskSpec) -> PaintedState:
    return tuple(getattr(spec, name) for name in PAINTED_FIELDS.values())  # type: ignore[return-value]
