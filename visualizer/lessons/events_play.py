"""Lesson events of the Playground's tools: a head ablated, a mask switched, cells painted, a cell taken apart.

Each is heard on the signal the app itself acts on, and its payload is read back from what the window then shows:
the Prediction line, the expected output under Input, the Masks section and the large view's cell panel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from PySide6.QtCore import QTimer

from core_model.vocab import SPECIALS
from visualizer.lessons.actions import listen, when_maps_drawn
from visualizer.lessons.events import Emit, Payload, _map_payload, _matches

EOS = SPECIALS[2]  # how the Prediction line writes <eos>
CELL_DIGITS = {"dot": 4, "sqrt_d": 4, "scaled": 4, "weight": 6}  # as the cell panel rounds them (cell_panel.fmt)


def up_to_eos(text: str) -> str:
    """A written output up to and including its first <eos>: the app dims what the model writes after it."""
    tokens = text.split()
    return " ".join(tokens[: tokens.index(EOS) + 1] if EOS in tokens else tokens)


def output_payload(app: Any) -> Payload:
    """The Prediction line up to its first <eos>, the expected output, and how many expected positions differ."""
    prediction = up_to_eos(app.playground.output_slot.full_text())
    expected = app.playground.input_panel.expected_slot.full_text()
    said, wanted = prediction.split(), expected.split()
    wrong = sum(1 for i, token in enumerate(wanted) if i >= len(said) or said[i] != token)
    return {"prediction": prediction, "expected": expected, "wrong": wrong}


def after_drawn(app: Any, emit: Emit, payload: Callable[[], Payload]) -> None:
    """Emit `payload()` once the maps of the change are drawn (the Prediction line shows the new pass then).

    Asked on the next turn of the event loop: the session announces a change before it submits the pass."""

    def drawn(problem: str | None) -> None:
        if problem is None:
            emit(payload())

    QTimer.singleShot(0, lambda: when_maps_drawn(app, drawn))


def source_typed(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """The learner edited the Source field (typing, not the lesson's own set_source), once its maps are drawn: the
    Prediction line then shows what the model writes for it."""
    panel = app.playground.input_panel

    def typed(text: str) -> None:
        if params.get("text") is None or text == params["text"]:
            after_drawn(app, still(text), lambda: {"typed": text, **output_payload(app)})

    def still(text: str) -> Emit:
        """Done only if the field still holds `text` once its maps are drawn: typed on meanwhile, the Prediction
        line would describe another source than the explanation names (the next matching edit is done instead)."""
        return lambda payload: emit(payload) if panel.source.text() == text else None

    panel.source_edited.connect(typed)
    return lambda: panel.source_edited.disconnect(typed)


def head_ablated(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """A head newly switched off (a map's Ablate entry, or a Heads table click) once its maps are drawn."""
    session = app.session
    before = [session.gates()]

    def changed(gates: Any) -> None:
        old, new = before[0], {kind: np.asarray(g) for kind, g in gates.items()}
        before[0] = new
        kind = params["kind"]
        if kind not in old or old[kind].shape != new[kind].shape:
            return  # another model: nothing was switched off by hand
        switched_off = [(int(layer), int(head)) for layer, head in zip(*np.nonzero(old[kind] & ~new[kind]))]
        hit = next((cell for cell in switched_off if _matches(params, *cell, new[kind].shape)), None)
        if hit is not None:
            found = _map_payload(*hit)
            after_drawn(app, emit, lambda: {**found, **output_payload(app)})

    return listen([(session.gates_changed, changed)])


def mask_toggled(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """A checkbox of the Masks section was switched by the learner; `hidden` counts the blank cells of the first
    map of the grid it masks (the decoder self grid for the causal mask), as drawn after the change."""
    box = app.playground.mask_panel.flag_boxes[params["mask"]]
    kind = {"encoder_padding": "encoder_self", "cross_padding": "cross"}.get(params["mask"], "decoder_self")

    def payload() -> Payload:
        matrix = app.playground.grids[kind].displayed_matrix(0, 0)
        hidden = int(np.isnan(matrix).sum())
        return {"state": "on" if box.isChecked() else "off", "hidden": hidden, **output_payload(app)}

    def clicked(_checked: bool) -> None:
        after_drawn(app, emit, payload)

    return listen([(box.clicked, clicked)])  # clicked: the learner, not the lesson's or a reset's setChecked


def cell_painted(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """A paint stroke in a large view added cells of `kind` to the painted mask, once the maps are drawn."""
    session, kind = app.session, params["kind"]
    before = [len(session.masks.painted(kind))]

    def changed(spec: Any) -> None:
        count = len(spec.painted(kind))
        grew, before[0] = count > before[0], count
        if grew:
            after_drawn(app, emit, lambda: {"painted": len(session.masks.painted(kind)), **output_payload(app)})

    return listen([(session.masks_changed, changed)])


def cell_opened(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """The large view's cell panel took a clicked cell apart; the numbers rounded as the panel prints them."""
    inspector = app.playground.tools.inspectors[params["kind"]]

    def shown(cell: Any) -> None:
        if cell is None or (params.get("cell") == "visible" and not cell.visible):
            return  # a masked cell's weight is 0 before any softmax: a step about the softmax waits for another
        numbers = {name: round(float(getattr(cell, name)), digits) for name, digits in CELL_DIGITS.items()}
        emit(
            {
                **_map_payload(cell.layer, cell.head),
                **numbers,
                "query": int(cell.query),
                "key": int(cell.key),
                "hidden": int(np.size(cell.row_visible) - np.count_nonzero(cell.row_visible)),
                "row_keys": int(np.size(cell.row_visible)),
            }
        )

    return listen([(inspector.cell_changed, shown)])
