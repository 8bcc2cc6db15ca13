"""What a person sees cut or squeezed on a page: plots whose data area is a strip, labels, buttons, drop-down lists
and progress texts drawn past their edges, tables that hide rows behind their own scroll bar.

Each function walks the widgets a page shows and names the ones that fail, so a test's message says which."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QAbstractButton, QComboBox, QLabel, QProgressBar, QTableWidget, QWidget

PLOT_MIN_PX = 120  # the data area a plot needs to be read: about six rows of a map, or a curve's shape
TABLE_ROWS_SHOWN = (
    20  # a table with up to this many rows shows them all (the page scrolls); a longer one scrolls itself
)


def _shown(root: QWidget, kind: type) -> list:
    return [w for w in root.findChildren(kind) if w.isVisible() and w.width() > 0]


def _name(widget: QWidget) -> str:
    text = widget.text() if hasattr(widget, "text") and callable(widget.text) else ""
    return f"{type(widget).__name__} {widget.objectName() or ''} {str(text)[:50]!r}"


def plot_data_heights(root: QWidget) -> dict[str, float]:
    """Each drawn plot's data area (its view box) in pixels, named by its title or the widget holding it."""
    heights = {}
    for view in _shown(root, pg.GraphicsView):
        for k, item in enumerate(view.scene().items()):
            if isinstance(item, pg.PlotItem) and item.isVisible():
                title = item.titleLabel.text if item.titleLabel.isVisible() else ""
                name = f"{type(view).__name__} {view.objectName()} {title[:40]!r} #{k}"
                heights[name] = item.getViewBox().sceneBoundingRect().height()
    return heights


def plot_texts_cut(root: QWidget) -> list[str]:
    """Plot titles wider than their plot, and legend entries drawn outside their plot's data area."""
    cut = []
    for view in _shown(root, pg.GraphicsView):
        for item in view.scene().items():
            if not (isinstance(item, pg.PlotItem) and item.isVisible()):
                continue
            title = item.titleLabel
            if title.isVisible() and title.text:
                if title.item.boundingRect().width() > item.sceneBoundingRect().width() + 1:
                    cut.append(f"title {title.text!r}: wider than its plot ({item.sceneBoundingRect().width():.0f} px)")
            legend = item.legend
            if legend is None or not legend.isVisible():
                continue
            area = legend.parentItem().sceneBoundingRect()  # the data area, or the room kept for it above the plot
            for sample, label in legend.items:
                for part in (sample, label):
                    if not area.contains(part.sceneBoundingRect()):
                        cut.append(f"legend {label.text!r} of {title.text!r}: outside the data area")
    return cut


def squeezed_plots(root: QWidget, least: float = PLOT_MIN_PX) -> dict[str, float]:
    """The plots whose data area is under `least` pixels high."""
    return {name: h for name, h in plot_data_heights(root).items() if h < least}


def clipped_texts(root: QWidget) -> list[str]:
    """Labels, buttons, drop-down lists and progress texts that cannot show all of their text where they are."""
    cut = []
    for label in _shown(root, QLabel):
        if not label.text():
            continue
        if label.wordWrap():
            if label.height() + 1 < label.heightForWidth(label.width()):
                cut.append(f"{_name(label)}: {label.height()} px high of {label.heightForWidth(label.width())}")
        else:
            need = label.sizeHint()
            if need.width() > label.width() + 1 or need.height() > label.height() + 1:
                cut.append(f"{_name(label)}: {label.width()}x{label.height()} of {need.width()}x{need.height()}")
    for button in _shown(root, QAbstractButton):
        if button.text() and button.sizeHint().width() > button.width() + 1:
            cut.append(f"{_name(button)}: {button.width()} px wide of {button.sizeHint().width()}")
    for combo in _shown(root, QComboBox):
        text = combo.currentText()
        room = combo.width() - 28  # the frame and the arrow
        if text and combo.fontMetrics().horizontalAdvance(text) > room:
            cut.append(f"QComboBox {combo.objectName()} {text!r}: {combo.width()} px wide")
    for bar in _shown(root, QProgressBar):
        if bar.isTextVisible() and bar.text():
            if bar.fontMetrics().horizontalAdvance(bar.text()) > bar.width() - 8:
                cut.append(f"QProgressBar {bar.text()!r}: {bar.width()} px wide")
    return cut


def tables_hiding_rows(root: QWidget, most: int = TABLE_ROWS_SHOWN) -> list[str]:
    """Tables of at most `most` rows that need their own scroll bar to show them."""
    hiding = []
    for table in _shown(root, QTableWidget):
        if 0 < table.rowCount() <= most and table.verticalScrollBar().maximum() > 0:
            seen = table.viewport().height()
            hiding.append(f"{type(table).__name__} {table.objectName()}: {table.rowCount()} rows in {seen} px")
    return hiding
