"""The Causal tab: does attention explain? Patching (which heads carry the answer) and, for one source, the logit
lens and attribution beside attention."""

from __future__ import annotations

from PySide6.QtWidgets import QTabWidget, QWidget

from core_model.head_roles import HeadRole

from .source_view import SourceView
from .view import PatchingView


class CausalTab(QTabWidget):
    """Two pages over the same model: Patching, and Lens & attribution."""

    def __init__(self, patching: PatchingView, source: SourceView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.patching, self.source = patching, source
        self.addTab(patching, "Patching")
        self.addTab(source, "Lens and attribution")
        self.setTabToolTip(0, "Which heads carry the answer from a clean source into a corrupted one")
        self.setTabToolTip(
            1, "The logit lens, and gradient, integrated-gradient and occlusion attribution beside attention"
        )

    def set_roles(self, roles: tuple[HeadRole, ...] | None) -> None:
        """The Heads tab's roles of the current model, shown beside each head's effect."""
        self.patching.set_roles(roles)

    def follow_source(self, text: str) -> None:
        """The Playground's input, for each page whose source was not edited here."""
        self.patching.follow_source(text)
        self.source.follow_source(text)
