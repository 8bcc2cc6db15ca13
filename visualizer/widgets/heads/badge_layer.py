"""One graphics item that draws every role badge of a grid: a small filled label just above a map's top-right corner,
in the blank strip the grid keeps over each row of maps while badges show (AtlasLayout.strip), so no badge covers a
cell.

Why one item and not a pyqtgraph TextItem per badge: a TextItem recomputes its own transform whenever its parent's
transform changes, and the atlas rescales with every keystroke that changes the input length, so each badge would
add work to that frame. This item stores each corner in its parent's (atlas) coordinates and maps it through
the painter's transform only when it paints, so a new scale costs nothing until the one paint that follows anyway.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QTransform
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

BADGE_FILL = QColor(20, 60, 120, 170)  # translucent blue: the map's colours stay readable around the text
BADGE_TEXT = QColor(255, 255, 255)
PAD_X, PAD_Y = 3.0, 1.0  # screen pixels around the text
CLEARANCE = 1.0  # screen pixels between a badge and the top of its map


class BadgeLayer(QGraphicsItem):
    """Labels standing on points in the parent's coordinates (their bottom-right corner just above the point, in a
    strip of blank rows), drawn in screen pixels."""

    def __init__(self) -> None:
        super().__init__()
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)  # atlas-sized, drawn over the maps: clicks go to them
        self._badges: tuple[tuple[QPointF, str], ...] = ()
        self._bounds = QRectF()
        self._map_width = math.inf  # one map's width in parent coordinates: a badge never spills past it
        self._strip = 0.0  # the blank strip's height above each map in parent coordinates: a badge stays inside it
        self._font = QFont()
        self._metrics = QFontMetricsF(self._font)
        self._widths: dict[str, float] = {}  # text -> advance: a handful of distinct texts, measured once
        self._placed: tuple = ()  # the badges and map width as plain values
        self._fitted: dict[tuple, tuple[tuple[QRectF, str], ...]] = {}  # (placed, device transform) -> `fitted`

    def set_badges(
        self, badges: list[tuple[QPointF, str]], bounds: QRectF, map_width: float = math.inf, strip: float = 0.0
    ) -> None:
        """Badges as (their map's top-right corner in parent coordinates, text), each drawn in the `strip` above that
        corner (parent coordinates); nothing is drawn outside `bounds` (the atlas), and no badge is wider on screen
        than its map (`map_width` in parent coordinates)."""
        self.prepareGeometryChange()
        self._badges, self._bounds, self._map_width, self._strip = tuple(badges), QRectF(bounds), map_width, strip
        self._placed = (map_width, strip, *((c.x(), c.y(), text) for c, text in self._badges))  # `fitted`'s key
        self.update()

    def strip_height(self) -> int:
        """Screen pixels a badge needs above its map: the strip the grid keeps blank there while badges show."""
        return math.ceil(self._metrics.height() + 2 * PAD_Y + CLEARANCE)

    def badges(self) -> tuple[tuple[QPointF, str], ...]:
        """What is placed: (its map's top-right corner in parent coordinates, text) per badge."""
        return self._badges

    def fitted(self, transform: QTransform) -> tuple[tuple[QRectF, str], ...]:
        """(filled rectangle in device pixels, text drawn) per badge: the whole text where its map is wide enough,
        else the first shorter form that fits (`shorter`: the score kept while it can be), else the role elided;
        never wider than the map and never taller than the strip above it ("" where the strip is too short), so a
        badge covers no cell. The last few answers are kept: a paint per frame asks again, and typing then deleting
        a symbol switches between two shapes."""
        t = transform
        key = (self._placed, t.m11(), t.m12(), t.m13(), t.m21(), t.m22(), t.m23(), t.m31(), t.m32(), t.m33())
        drawn = self._fitted.get(key)
        if drawn is None:
            if len(self._fitted) >= 4:
                self._fitted.clear()
            drawn = self._fitted[key] = self._fit_all(transform)
        return drawn

    def _fit_all(self, transform: QTransform) -> tuple[tuple[QRectF, str], ...]:
        """`fitted`, worked out."""
        height = self._metrics.height() + 2 * PAD_Y
        drawn = []
        for corner, text in self._badges:
            at = transform.map(corner)
            room = at.x() - transform.map(QPointF(corner.x() - self._map_width, corner.y())).x() - 2 * PAD_X
            strip_top = transform.map(QPointF(corner.x(), corner.y() - self._strip)).y()
            bottom = at.y() - CLEARANCE
            text = self._fit(text, room) if bottom - height >= strip_top - 0.5 else ""  # else on the maps above
            width = self._advance(text) + 2 * PAD_X if text else 0.0
            drawn.append((QRectF(at.x() - width, bottom - height, width, height), text))
        return tuple(drawn)

    def _advance(self, text: str) -> float:
        if text not in self._widths:
            self._widths[text] = self._metrics.horizontalAdvance(text)
        return self._widths[text]

    def _fit(self, text: str, room: float) -> str:
        """The first of `shorter(text)` that fits `room` pixels, else the role elided ("" when nothing fits)."""
        candidates = shorter(text)
        for candidate in candidates:
            if self._advance(candidate) <= room:
                return candidate
        role = candidates[-1]
        elided = self._metrics.elidedText(role, Qt.TextElideMode.ElideRight, max(room, 0.0))
        return elided if elided and self._advance(elided) <= room else ""

    def boundingRect(self) -> QRectF:  # Qt's name
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        """Badges keep their on-screen pixel size; an export drawn larger scales them with everything else."""
        if not self._badges:
            return
        views = self.scene().views() if self.scene() is not None else []
        screen = self.deviceTransform(views[0].viewportTransform()) if views else painter.transform()
        to_target = screen.inverted()[0] * painter.transform()  # screen pixels -> this painter's device (identity
        painter.save()  # on screen, the export's scale in an export)
        painter.setClipRect(self._bounds, Qt.ClipOperation.IntersectClip)  # within the view's own clip
        # exactly the identity on screen: rounding noise would send the text down Qt's slow transformed path
        painter.setWorldTransform(QTransform() if _near_identity(to_target) else to_target)
        painter.setFont(self._font)
        painter.setPen(BADGE_TEXT)
        flags = Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextDontClip
        for rect, text in self.fitted(screen):
            if not text:
                continue
            painter.fillRect(rect, BADGE_FILL)
            painter.drawText(rect, int(flags), text)
        painter.restore()


def shorter(text: str) -> tuple[str, ...]:
    """A badge's text from whole to least, keeping the score as long as any form of the role fits beside it:
    "first/<bos> 0.74", "first/<bos> .74", "first .74", "first/<bos>", "first" (a role alone has no score)."""
    role, _, score = text.rpartition(" ")
    if not role or not score[:1].isdigit():
        return (text,) if "/" not in text else (text, text.split("/", 1)[0])
    brief = score[1:] if score.startswith("0.") else score
    word = role.split("/", 1)[0]
    forms = (text, f"{role} {brief}", f"{word} {brief}", role, word)
    return tuple(dict.fromkeys(forms))  # a role without "/" has no shorter word: each form once


def _near_identity(t: QTransform, eps: float = 1e-6) -> bool:
    """Whether `t` is the identity up to rounding (a screen paint's transform composed with its own inverse)."""
    return (
        abs(t.m11() - 1) < eps
        and abs(t.m22() - 1) < eps
        and abs(t.m12()) < eps
        and abs(t.m21()) < eps
        and abs(t.dx()) < eps
        and abs(t.dy()) < eps
        and abs(t.m13()) < eps
        and abs(t.m23()) < eps
        and abs(t.m33() - 1) < eps
    )
