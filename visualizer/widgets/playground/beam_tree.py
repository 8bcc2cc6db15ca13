"""The search tree of a beam search (or of samples): tokens in boxes, the step log-probability on each edge.

Render only. Columns are output positions, <bos> first; a node's first child continues on its row, children on
the way to a final hypothesis first (best first), so the final hypotheses take the top rows, the best one first.
Branches that left the beam are grey; candidates that never entered it are shown on request (dashed grey, at most
MAX_PRUNED per parent, the rest counted as "+n"). The best path is thick and blue, the hypothesis shown in the grids
is outlined in orange. Final hypotheses carry their summed log-probability.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QToolTip, QWidget

from visualizer.state.playground_beam import BeamOutcome

ROOT = -1
MAX_PRUNED = 2
MARGIN, COL_W, ROW_H, BOX_W, BOX_H = 10, 80, 26, 42, 20
SCORE_W = 96  # room right of the deepest column for a leaf's summed log-probability
COLOURS = {
    "kept": QColor("#444444"),
    "pruned": QColor("#b8b8b8"),
    "best": QColor("#1f6fd1"),
    "shown": QColor("#e07b00"),
    "box": QColor("#f4f4f4"),
    "text": QColor("#111111"),
}


@dataclass(frozen=True)
class DrawnText:
    """One piece of text the tree paints, where, and what it is ("token", "edge", "score" or "more")."""

    text: str
    rect: QRectF
    role: str
    node: int


def fixed(value: float, digits: int) -> str:
    """`value` with `digits` decimals; one that rounds to zero reads 0.00, never -0.00 beside a 0.00."""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0.0 else text


def edge_text(log_prob: float) -> str:
    """Two decimals; one from -10 down, so the label fits between two columns."""
    return fixed(log_prob, 2) if log_prob > -9.995 else fixed(log_prob, 1)


def score_text(log_prob: float) -> str:
    return fixed(log_prob, 4)


class BeamTree(QWidget):
    """Paints a BeamOutcome's nodes; a click on a node emits node_clicked(index)."""

    node_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._outcome: BeamOutcome | None = None
        self._shown = ROOT
        self._rows: dict[int, int] = {}
        self._texts: list[DrawnText] = []
        self._edges: list[tuple[int, int]] = []  # (parent, child) visible
        self._best: set[int] = set()
        self._alive: set[int] = set()  # nodes on the path of a final hypothesis
        self._candidates = False
        self._size = QSize(200, 60)
        self.setMouseTracking(True)
        self.setToolTip("Click a node: the grids show the decoder attention of that hypothesis")

    # ----- data -----
    def set_outcome(self, outcome: BeamOutcome | None) -> None:
        """Show a BeamOutcome (None clears)."""
        self._outcome = outcome
        self._shown = ROOT
        self._lay_out()
        self.update()

    def set_show_candidates(self, on: bool) -> None:
        """Also draw the candidates that were expanded but never entered the beam."""
        self._candidates = on
        self._lay_out()
        self.update()

    def set_shown(self, node: int) -> None:
        self._shown = node
        self.update()

    def drawn_texts(self, role: str | None = None) -> list[DrawnText]:
        """The texts the tree paints now, in paint order; only those of one role (DrawnText.role) when given."""
        return [t for t in self._texts if role is None or t.role == role]

    def node_rect(self, node: int) -> QRectF:
        assert self._outcome is not None  # nodes are laid out only for an outcome
        row, step = self._rows[node], self._outcome.nodes[node].step
        return QRectF(MARGIN + (step + 1) * COL_W, MARGIN + row * ROW_H, BOX_W, BOX_H)

    def node_at(self, pos: QPointF) -> int:
        for node in self._rows:
            if node != ROOT and self.node_rect(node).contains(pos):
                return node
        return ROOT

    def sizeHint(self) -> QSize:  # Qt's name
        return self._size

    # ----- layout -----
    def _visible_children(self, out: BeamOutcome) -> tuple[dict[int, list[int]], dict[int, int]]:
        children: dict[int, list[int]] = {}
        for i, node in enumerate(out.nodes):
            children.setdefault(node.parent, []).append(i)
        shown, hidden = {}, {}
        for parent, kids in children.items():
            kids.sort(key=lambda i: (i not in self._alive, -out.nodes[i].score))  # finals' rows on top
            kept = [i for i in kids if out.nodes[i].kept]
            pruned = [i for i in kids if not out.nodes[i].kept] if self._candidates else []
            if not kept + pruned:
                continue
            shown[parent] = kept + pruned[:MAX_PRUNED]
            hidden[parent] = len(pruned) - len(pruned[:MAX_PRUNED])
        return shown, hidden

    def _lay_out(self) -> None:
        self._rows, self._texts, self._edges, self._best, self._alive = {}, [], [], set(), set()
        if self._outcome is None or not self._outcome.nodes:
            self._size = QSize(200, 60)
            self.setMinimumSize(self._size)
            return
        out = self._outcome
        self._alive = {i for h in out.hypotheses for i in out.path(h.node)}
        shown, hidden = self._visible_children(out)
        next_row = 0

        def place(node: int) -> int:
            nonlocal next_row
            kids = shown.get(node, [])
            if not kids:
                self._rows[node] = next_row
                next_row += 1
                return self._rows[node]
            rows = [place(k) for k in kids]
            self._edges.extend((node, k) for k in kids)
            self._rows[node] = rows[0]
            return rows[0]

        place(ROOT)
        self._best = set(out.path(out.hypotheses[0].node)) if out.hypotheses else set()
        finals = {h.node: h for h in out.hypotheses}
        depth = max(n.step for n in out.nodes) + 1
        for node in self._rows:
            if node == ROOT:
                continue
            n, rect = out.nodes[node], self.node_rect(node)
            self._texts.append(DrawnText(out.labels[n.token], rect, "token", node))
            px = MARGIN + n.step * COL_W + BOX_W + 4  # the elbow: the label sits over the child's own row
            self._texts.append(
                DrawnText(edge_text(n.log_prob), QRectF(px, rect.top() - 11, rect.left() - px, 12), "edge", node)
            )
            if node in finals:
                self._texts.append(
                    DrawnText(
                        score_text(finals[node].log_prob),
                        QRectF(rect.right() + 6, rect.top(), SCORE_W, BOX_H),
                        "score",
                        node,
                    )
                )
        for parent, count in hidden.items():
            if count and shown.get(parent):
                last = self.node_rect(shown[parent][-1])
                self._texts.append(
                    DrawnText(f"+{count}", QRectF(last.right() + 4, last.top(), 30, BOX_H), "more", parent)
                )
        width = MARGIN * 2 + (depth + 1) * COL_W + SCORE_W
        self._size = QSize(width, MARGIN * 2 + next_row * ROW_H + 6)
        self.setMinimumSize(self._size)
        self.updateGeometry()

    # ----- painting and input -----
    def paintEvent(self, event) -> None:  # Qt's name
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(self.rect(), QColor("white"))
        if not self._rows:
            painter.setPen(COLOURS["kept"])
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "Press Run to search")
            return
        out = self._outcome
        assert out is not None  # nodes are laid out only for an outcome
        root = QRectF(MARGIN, MARGIN + self._rows[ROOT] * ROW_H, BOX_W, BOX_H)
        for parent, child in self._edges:
            a = root if parent == ROOT else self.node_rect(parent)
            b = self.node_rect(child)
            kept, alive = out.nodes[child].kept, child in self._alive
            colour = COLOURS["best"] if child in self._best else COLOURS["kept" if alive else "pruned"]
            pen = QPen(colour, 2.5 if child in self._best else 1.2)
            pen.setStyle(Qt.PenStyle.SolidLine if kept else Qt.PenStyle.DashLine)
            painter.setPen(pen)
            elbow = a.right() + 4  # down the parent's side, then along the child's row
            painter.drawPolyline(
                [
                    QPointF(a.right(), a.center().y()),
                    QPointF(elbow, a.center().y()),
                    QPointF(elbow, b.center().y()),
                    QPointF(b.left(), b.center().y()),
                ]
            )
        self._draw_box(painter, root, "<bos>", True, True, False)
        shown_path = set(out.path(self._shown)) if self._shown != ROOT else set()
        small = QFont(self.font())
        small.setPointSizeF(max(6.5, self.font().pointSizeF() * 0.8))
        for text in self._texts:
            n = text.node
            if text.role == "token":
                self._draw_box(painter, text.rect, text.text, n in self._alive, n in self._best, n in shown_path)
                continue
            painter.setFont(small)
            kept = text.role != "more" and n in self._alive
            painter.setPen(
                COLOURS["best"] if n in self._best and text.role != "more" else COLOURS["text" if kept else "pruned"]
            )
            align = Qt.AlignmentFlag.AlignVCenter | (
                Qt.AlignmentFlag.AlignHCenter if text.role == "edge" else Qt.AlignmentFlag.AlignLeft
            )
            painter.drawText(text.rect, align, text.text)
            painter.setFont(self.font())

    def _draw_box(self, painter: QPainter, rect: QRectF, label: str, kept: bool, best: bool, shown: bool) -> None:
        border = COLOURS["shown"] if shown else COLOURS["best"] if best else COLOURS["kept" if kept else "pruned"]
        painter.setPen(QPen(border, 2.5 if (shown or best) else 1))
        painter.setBrush(COLOURS["box"] if kept else QColor("white"))
        painter.drawRoundedRect(rect, 4, 4)
        painter.setPen(COLOURS["text"] if kept else COLOURS["pruned"])
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)

    def mousePressEvent(self, event) -> None:  # Qt's name
        node = self.node_at(event.position())
        if node != ROOT and event.button() == Qt.MouseButton.LeftButton:
            self.node_clicked.emit(node)

    def event(self, event) -> bool:  # Qt's name: a tooltip per node
        if event.type() == event.Type.ToolTip and self._outcome is not None:
            node = self.node_at(QPointF(event.pos()))
            if node != ROOT:
                n = self._outcome.nodes[node]
                QToolTip.showText(
                    event.globalPos(),
                    f"{self._outcome.labels[n.token]!r} at position {n.step}: "
                    f"log p = {fixed(n.log_prob, 4)}, sum so far {fixed(n.score, 4)}"
                    f"{'' if n.kept else ' (never entered the beam)'}"
                    f"{'' if node in self._alive or not n.kept else ' (its branch left the beam later)'}"
                    ". Click to show it in the grids.",
                    self,
                )
                return True
        return super().event(event)
