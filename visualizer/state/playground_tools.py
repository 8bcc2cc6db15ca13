"""The Playground's state beside its session: what its large views and its source field's note work with.

The composition root builds these with the task layer's slot factory, so a cell's decomposition runs off the GUI
thread; tests and scripts build them inline. The view receives them and only draws and forwards.
"""

from __future__ import annotations

from dataclasses import dataclass

from .playground import PlaygroundSession
from .playground_cell_tools import CellInspector, cell_inspectors
from .playground_mask_painter import MaskPainter
from .source_check import TrainedNote
from .worker_api import SlotFactory


@dataclass(frozen=True)
class PlaygroundTools:
    """A cell inspector per kind of map (each large view follows its own cell), the painter whose strokes edit the
    session's masks (one undo history for all three kinds), and where the source stands to the trained lengths."""

    inspectors: dict[str, CellInspector]
    painter: MaskPainter
    trained_note: TrainedNote


def playground_tools(session: PlaygroundSession, make_slot: SlotFactory | None = None) -> PlaygroundTools:
    """The tools for `session`; without `make_slot` each inspection runs at once, on the caller's thread."""
    return PlaygroundTools(
        cell_inspectors(session.cell_inputs, make_slot),
        MaskPainter(lambda: session.masks, session.set_masks),
        TrainedNote(session.hub),
    )
