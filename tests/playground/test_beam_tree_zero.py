"""The beam tree never prints "-0.00" beside "0.00": a log-probability that rounds to zero reads 0.00.

The shipped copy model is sure of its tokens (log p ≈ -0.0001), so its tree, list and tooltips are full of them.
Driven like a user: type a source, press Run, hover a node; read every number the panel draws.
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import QEvent
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QToolTip
from test_beam_panel import open_beam_app, run_search

CKPT = Path(__file__).resolve().parents[2] / "resources" / "copy_rope.pt"
NEGATIVE_ZERO = re.compile(r"-0\.0+(?![0-9])|-0(?![.0-9])")  # "-0.00", "-0.0000", "-0.0", "-0"


def test_no_negative_zero_anywhere_in_the_beam_panel(qtbot):
    view, session, beam, panel = open_beam_app(qtbot, CKPT, "31415926")
    outcome = run_search(qtbot, beam, panel)
    assert any(-0.005 < n.log_prob < 0 for n in outcome.nodes)  # the case: tiny negative log-probabilities
    texts = [t.text for t in panel.tree.drawn_texts()]
    assert "0.00" in texts  # they are drawn, as zero
    shown = texts + [row.text() for row in panel.hyp_rows] + [panel.compare.text()]
    assert not [text for text in shown if NEGATIVE_ZERO.search(text)]
    node = next(i for i, n in enumerate(outcome.nodes) if n.kept and -0.00005 < n.log_prob < 0)
    centre = panel.tree.node_rect(node).center().toPoint()
    qtbot.mouseMove(panel.tree, centre)
    panel.tree.event(QHelpEvent(QEvent.Type.ToolTip, centre, panel.tree.mapToGlobal(centre)))  # the hover's tooltip
    tip = QToolTip.text()
    assert "log p = 0.0000" in tip and not NEGATIVE_ZERO.search(tip)
    QToolTip.hideText()
