"""Model > Undo and Redo name what they would do ("Undo architecture change"), from the hub's undo stack."""

from __future__ import annotations

from PySide6.QtGui import QAction

from visualizer.state.model_hub import UNDO_DEPTH, ModelHub


def show_history(hub: ModelHub, undo: QAction, redo: QAction) -> None:
    """Set both actions' text, status tip and enabled state for the hub's present undo and redo."""
    kept = f"{hub.undo_depth} of up to {UNDO_DEPTH} kept"
    label = hub.undo_label
    undo.setEnabled(label is not None)
    undo.setText(f"&Undo {label}" if label else "&Undo")
    undo.setStatusTip(
        f"Bring back the model before the last {label}, weights included ({kept})"
        if label
        else "No earlier model to restore"
    )
    label = hub.redo_label
    redo.setEnabled(label is not None)
    redo.setText(f"&Redo {label}" if label else "&Redo")
    redo.setStatusTip(
        f"Bring back the model the last Undo replaced ({label}), weights and training included"
        if label
        else "No undone model change to redo"
    )
