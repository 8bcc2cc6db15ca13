"""The events that complete a lesson step, each heard on a real signal of the app, with the numbers it shows.

`connect(app, params, emit)` starts listening and returns what stops it; `emit(payload)` is called for each
occurrence that matches the step's parameters. A payload holds exactly the names vocabulary.EVENTS declares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QPointF

from core_model.vocab import SPECIALS

Payload = dict[str, Any]
Emit = Callable[[Payload], None]
Connect = Callable[[Any, dict, Emit], Callable[[], None]]


def _wanted(value: int | str | None, actual: int, count: int) -> bool:
    """Whether a 0-based layer or head is the one a file asks for (1-based, or "last"; absent: any)."""
    if value is None:
        return True
    return actual == (count - 1 if value == "last" else int(value) - 1)


def _map_payload(layer: int, head: int) -> Payload:
    """How the grid's readout names a map: "L2 H1", or "L2 avg" for the head-average column (head -1)."""
    head_text = "avg" if head < 0 else str(head + 1)
    label = "avg" if head < 0 else f"H{head + 1}"
    return {"map": f"L{layer + 1} {label}", "layer": layer + 1, "head": head_text}


def _matches(params: dict, layer: int, head: int, shape: tuple[int, ...]) -> bool:
    n_layers, n_heads = shape[0], shape[1]
    head_ok = params.get("head") is None or (head >= 0 and _wanted(params.get("head"), head, n_heads))
    return _wanted(params.get("layer"), layer, n_layers) and head_ok


def hovered_cell(grid: Any, cell: tuple[int, int, int, int]) -> Payload | None:
    """The payload of a hovered cell from what the grid shows (None for a masked, blank cell)."""
    layer, head, i, j = cell
    maps, matrix = grid.current_maps(), grid.displayed_matrix(layer, head)  # (Tq, Tk), NaN where blank
    if maps is None or np.isnan(matrix[i, j]):
        return None
    return {
        **_map_payload(layer, head),
        "query": i,
        "key": j,
        "query_token": maps.query_labels[i],
        "key_token": maps.key_labels[j],
        "weight": float(matrix[i, j]),
        "row_sum": float(np.nansum(matrix[i], dtype=np.float64)),
        "readout": grid.tooltip_text_at(layer, head, i, j),
    }


def cell_hovered(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """The mouse moved onto a cell of a Playground grid, or of that grid's large view (where small cells are easier
    to rest on); the same scene signals the readouts follow."""
    grid = app.playground.grids[params["kind"]]
    last: list[tuple[int, int, int, int] | None] = [None]
    stops: list[Callable[[], None]] = []

    def entered(cell: tuple[int, int, int, int] | None) -> None:
        if cell == last[0]:
            return  # the same cell: one occurrence per cell entered
        last[0] = cell
        maps = grid.current_maps()
        if cell is None or maps is None or not _matches(params, cell[0], cell[1], maps.values.shape):
            return
        offset = params.get("key_minus_query")
        if offset is not None and cell[3] - cell[2] != offset:
            return
        if params.get("query_token") == "symbol" and maps.query_labels[cell[2]] in SPECIALS:
            return  # a <bos> or <pad> query row: the step asks about a symbol being copied
        if (payload := hovered_cell(grid, cell)) is not None:
            emit(payload)

    def on_grid(pos: QPointF) -> None:
        entered(grid.cell_at(pos))

    def hook_large_view(*_args: object) -> None:
        """Listen to the large view's scene too, once the grid has made its dialog (on the first map click)."""
        dialog, large = grid.large_view.dialog, grid.large_view
        if dialog is None or hooked:
            return
        hooked.append(dialog)

        def on_dialog(pos: QPointF) -> None:
            at, target = dialog.cell_at(pos), large.target
            entered(None if at is None or target is None or not dialog.isVisible() else (*target, *at))

        dialog.graphics.scene().sigMouseMoved.connect(on_dialog)
        stops.append(lambda: dialog.graphics.scene().sigMouseMoved.disconnect(on_dialog))

    hooked: list[object] = []
    grid.graphics.scene().sigMouseMoved.connect(on_grid)
    stops.append(lambda: grid.graphics.scene().sigMouseMoved.disconnect(on_grid))
    hook_large_view()
    grid.map_clicked.connect(hook_large_view)
    stops.append(lambda: grid.map_clicked.disconnect(hook_large_view))

    def stop_all() -> None:
        for stop in stops:
            stop()

    return stop_all


def map_clicked(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """A map of a Playground grid was clicked (the grid's own map_clicked, which opens the large view)."""
    grid = app.playground.grids[params["kind"]]

    def clicked(_kind: str, layer: int, head: int) -> None:
        maps = grid.current_maps()
        if maps is not None and _matches(params, layer, head, maps.values.shape):
            emit(_map_payload(layer, head))

    grid.map_clicked.connect(clicked)
    return lambda: grid.map_clicked.disconnect(clicked)


def live_values(app: Any) -> Payload:
    """The values every explanation may quote (vocabulary.LIVE_VALUES): the model's file and the source used."""
    path = app.hub.path
    return {"model": path.name if path is not None else app.hub.origin, "source": app.session.source_text}
