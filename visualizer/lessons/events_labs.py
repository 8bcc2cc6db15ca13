"""Lesson events of the other tabs: a tab shown, the Heads analysis, the Length lab's probe, a training run, patching
and attribution.

Each is heard on the signal the tab itself draws from; the payload is what the tab shows once it has drawn it (read
on the next turn of the event loop when a lazily built tab may connect after the lesson did).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QTimer

from visualizer.lessons.actions import listen
from visualizer.lessons.events import Emit, _map_payload

log = logging.getLogger(__name__)


def _head_index(params: dict, n_layers: int, n_heads: int) -> tuple[int, int]:
    """The 0-based (layer, head) a step names (1-based or "last")."""
    layer = n_layers - 1 if params["layer"] == "last" else int(params["layer"]) - 1
    head = n_heads - 1 if params["head"] == "last" else int(params["head"]) - 1
    return layer, head


def _named_head(params: dict, rows: list[Any]) -> tuple[int, int, Any] | None:
    """(layer, head, its row) of the head a step names among one kind's rows; None, logged, when this model has no
    such head (a lesson written for a larger model): the step then waits."""
    n_layers, n_heads = 1 + max(r.layer for r in rows), 1 + max(r.head for r in rows)
    layer, head = _head_index(params, n_layers, n_heads)
    row = next((r for r in rows if (r.layer, r.head) == (layer, head)), None)
    if row is None:
        log.warning(
            "a lesson step waits for %s L%d H%d, which this model does not have", params["kind"], layer + 1, head + 1
        )
        return None
    return layer, head, row


def tab_shown(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """The learner brought a tab to the front (its title as the tab bar shows it, without the & of its key)."""
    tabs = app.window.tabs

    def changed(index: int) -> None:
        title = tabs.tabText(index).replace("&", "")
        if title == params["tab"]:
            emit({"tab": title})

    return listen([(tabs.currentChanged, changed)])


def heads_analysed(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """The Heads tab's analysis finished: one head's Δ exact match and Δ loss and the baseline, rounded as shown, and
    the head of that kind whose removal costs the most exact match (its heads may all align; they differ in this)."""

    def changed(analysis: Any) -> None:
        if analysis is None:
            return
        mine = [r for r in analysis.heads if r.kind == params["kind"]]
        found = _named_head(params, mine)
        if found is None:
            return
        layer, head, row = found
        top = min(mine, key=lambda r: (r.delta_exact_match, -r.delta_loss))  # the darkest red cell of the table
        emit(
            {
                **_map_payload(layer, head),
                "top_map": f"L{top.layer + 1} H{top.head + 1}",
                "top_delta_exact_match": round(top.delta_exact_match, 3) + 0.0,
                "delta_exact_match": round(row.delta_exact_match, 3) + 0.0,  # the table's {:+.3f}
                "delta_loss": round(row.delta_loss, 4) + 0.0,  # its tooltip's {:+.4f}
                "baseline_exact_match": round(analysis.baseline.exact_match, 3),  # the line above it, {:.3f}
            }
        )

    return listen([(app.heads.frame_changed, changed)])


def length_probe_shown(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """The Length lab drew one length through both models; the caption above its maps as it reads then."""

    def changed(pair: Any) -> None:
        QTimer.singleShot(0, lambda: emit({"length": pair.length, "caption": app.length_lab_tab.selected_label.text()}))

    return listen([(app.length_lab.probe_changed, changed)])


def training_finished(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """A run of the Trainer ended (its steps done, or Stop): the state, status and "formed at" lines it shows."""

    def changed(state: str) -> None:
        if state != "finished":
            return
        tab = app.trainer_tab

        def read() -> None:
            forming = tab.forming
            emit(
                {
                    "state": tab.state_label.text(),
                    "status": tab.status_label.text(),
                    "formed": forming.formed_label.text(),
                }
            )

        QTimer.singleShot(0, read)

    return listen([(app.training.state_changed, changed)])


def patching_done(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """The Causal tab's patching finished: one head's effect, to the two decimals its table shows."""
    patching = app.analysis.patching

    def changed(frame: Any) -> None:
        if frame is None:
            return
        found = _named_head(params, [e for e in frame.result.heads if e.kind == params["kind"]])
        if found is None:
            return
        layer, head, row = found
        effect = row.effect
        emit(
            {
                **_map_payload(layer, head),
                "effect": round(effect, 2) + 0.0,  # effect_tables.signed: two decimals, never -0.00
                "clean": frame.clean,
                "corrupt": frame.corrupt,
            }
        )

    return listen([(patching.frame_changed, changed)])


def attribution_done(app: Any, params: dict, emit: Emit) -> Callable[[], None]:
    """The Lens and attribution page finished: one cell of its agreement table (a method against an attention view),
    read as the table draws it."""
    state = app.analysis.attribution

    def changed(frame: Any) -> None:
        if frame is None or params["view"] not in frame.agreement.get(params["method"], {}):
            return

        def read() -> None:
            table = app.analysis.causal_page.content().source.agreement
            row = list(frame.agreement).index(params["method"])
            col = list(frame.agreement[params["method"]]).index(params["view"])
            item = table.item(row, col)
            if item is not None:
                emit(
                    {
                        "agreement": item.text(),
                        "method_title": table.verticalHeaderItem(row).text(),
                        "view_title": table.horizontalHeaderItem(col).text(),
                        "analysed": frame.text,
                    }
                )

        QTimer.singleShot(0, read)

    return listen([(state.frame_changed, changed)])
