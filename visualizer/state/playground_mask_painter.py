"""Painting masks by hand in the large map view: strokes over a map hide cells of the session's MaskSpec.

Each stroke is one command on the painter's QUndoStack, so Ctrl+Z takes a whole stroke back and redo repaints it.
The painter holds no widget: the view sends it cells and stroke ends, and shows what `history_changed` says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from core_model.masks import PAINTED_FIELDS, Cells, MaskSpec


@dataclass(frozen=True)
class Painting:
    """The hand-painted cells of every attention kind: what a stroke changes, and what its undo puts back."""

    encoder_painted: Cells
    decoder_painted: Cells
    cross_painted: Cells

    @classmethod
    def of(cls, spec: MaskSpec) -> Painting:
        return cls(**{name: getattr(spec, name) for name in PAINTED_FIELDS.values()})

    def onto(self, spec: MaskSpec) -> MaskSpec:
        """`spec` with these painted cells; its other mask settings stay as they are."""
        return replace(spec, **{name: getattr(self, name) for name in PAINTED_FIELDS.values()})


class Stroke(QUndoCommand):
    """One stroke: the painting before it and after it (grown while the stroke is still being drawn)."""

    def __init__(self, before: Painting, after: Painting, apply: Callable[[Painting], None]) -> None:
        super().__init__("paint stroke")
        self.before, self.after, self._apply = before, after, apply

    def redo(self) -> None:  # Qt's name; QUndoStack.push calls it first, which paints the stroke's first cells
        self._apply(self.after)

    def undo(self) -> None:  # Qt's name
        self._apply(self.before)


class MaskPainter(QObject):
    """Strokes over a map hide (or show again) cells; each stroke is one undo step, and undone ones can be redone."""

    history_changed = Signal(bool)  # a stroke was made, undone, redone or forgotten; whether one can be undone

    def __init__(self, get_spec: Callable[[], MaskSpec], set_spec: Callable[[MaskSpec], None]) -> None:
        super().__init__()
        self._get, self._set = get_spec, set_spec
        self.undo_stack = QUndoStack(self)
        self.undo_stack.indexChanged.connect(self._said)
        self._stroke: Stroke | None = None  # the stroke being drawn: later cells of it join its command

    @property
    def can_undo(self) -> bool:
        return self.undo_stack.canUndo()

    @property
    def can_redo(self) -> bool:
        return self.undo_stack.canRedo()

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
        after = Painting.of(spec.with_painted(kind, new))
        if self._stroke is None:
            self._stroke = Stroke(Painting.of(spec), after, self._apply)
            self.undo_stack.push(self._stroke)  # its redo paints these cells
        else:
            self._stroke.after = after
            self._apply(after)

    def end_stroke(self) -> None:
        self._stroke = None

    def undo(self) -> None:
        """Back to the painted cells before the last stroke (the other mask settings stay as they are)."""
        self._stroke = None
        self.undo_stack.undo()

    def redo(self) -> None:
        """Paint the last undone stroke again (the other mask settings stay as they are)."""
        self._stroke = None
        self.undo_stack.redo()

    def forget(self) -> None:
        """Drop the history (Reset masks cleared the painting)."""
        self._stroke = None
        self.undo_stack.clear()
        self._said()  # clearing only undone strokes moves no index

    def _apply(self, painting: Painting) -> None:
        self._set(painting.onto(self._get()))

    def _said(self, *_args: object) -> None:
        self.history_changed.emit(self.can_undo)
