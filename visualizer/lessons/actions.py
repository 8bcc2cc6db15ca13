"""The set-up actions a lesson step can run, each through the app's own controls and signals.

An action gets the running Application (untyped: that module imports the lessons), the step's parameters and a
`done(problem)` callback, called once: with None when the app is set up, or with a sentence saying why it is not.
Actions that start work (a checkpoint load, a forward pass) return at once and call `done` from the app's signal.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer

Done = Callable[[str | None], None]
Action = Callable[[Any, dict, Done], None]
OPEN_QUESTION = "Save changes to the trained model before the lesson opens another one?"


def listen(pairs: list[tuple[Any, Callable]]) -> Callable[[], None]:
    """Connect each (signal, slot) pair; returns what disconnects them all (safe to call twice)."""
    for signal, slot in pairs:
        signal.connect(slot)

    def disconnect() -> None:
        while pairs:
            signal, slot = pairs.pop()
            signal.disconnect(slot)

    return disconnect


def when_maps_drawn(app: Any, done: Done) -> None:
    """`done` once every forward pass asked for has been answered and drawn (at once when none is running)."""
    session = app.session
    if session.idle:
        done(None)
        return

    def drawn(_frame: object) -> None:
        if session.idle:  # the grids drew this frame first: they were connected before us
            stop()
            done(None)

    def failed(message: str) -> None:
        stop()
        done(message)

    stop = listen([(session.frame_changed, drawn), (session.pass_failed, failed)])


def when_roles_scored(app: Any, done: Done) -> None:
    """`done` once the maps are drawn and the heads' roles are scored: their badges and legend appear above the grids
    when the roles arrive, and a learner's target must not move under the mouse after the step starts."""
    heads = app.heads
    if heads is None or heads.roles is not None:
        when_maps_drawn(app, done)
        return

    def scored(roles: object) -> None:
        if roles is not None:
            stop()
            when_maps_drawn(app, done)

    stop = listen([(heads.roles_changed, scored)])


def open_model(app: Any, params: dict, done: Done) -> None:
    """File > Open on a shipped checkpoint (nothing to do when it is open and unchanged): asks first when training
    would be lost, waits for the load, the maps and the heads' roles."""
    from core_model.shipped import resource_path

    path = resource_path(params["model"])
    hub = app.hub
    if hub.path is not None and Path(hub.path) == Path(path) and not hub.dirty:
        when_roles_scored(app, done)
        return
    if not app.checkpoints.confirm_discard(OPEN_QUESTION):
        done("the lesson needs another model: it was not opened")
        return

    def opened(_path: str) -> None:
        stop()
        when_roles_scored(app, done)

    def failed(message: str) -> None:
        stop()
        done(message)

    stop = listen([(app.checkpoints.opened, opened), (app.checkpoints.failed, failed)])
    app.checkpoints.open_path(path)


def set_source(app: Any, params: dict, done: Done) -> None:
    """The source typed into the Playground's Source field; an input the model cannot take stops the lesson."""
    if not app.session.set_source(params["text"]):
        done(f"the model cannot take the source {params['text']!r}")
        return
    when_maps_drawn(app, done)


def show_tab(app: Any, params: dict, done: Done) -> None:
    tabs = app.window.tabs
    titles = [tabs.tabText(i).replace("&", "") for i in range(tabs.count())]
    if params["tab"] not in titles:
        done(f"the window has no {params['tab']} tab")
        return
    tabs.setCurrentIndex(titles.index(params["tab"]))
    done(None)


def show_grid(app: Any, params: dict, done: Done) -> None:
    app.playground.show_grid(params["kind"])
    done(None)


def set_view(app: Any, params: dict, done: Done) -> None:
    """The "Show" choice above the grids, set as a click on it would (the session recomputes the maps)."""
    combo = app.playground.view_modes.combo
    index = combo.findData(params["view"])
    if index != combo.currentIndex():
        combo.setCurrentIndex(index)
    when_maps_drawn(app, done)


def _press(button: Any, app: Any, done: Done) -> None:
    """Click a button of the app (as a person would, when it is enabled) and wait for the maps it asks for."""
    if button.isEnabled():
        button.click()
    QTimer.singleShot(0, lambda: when_maps_drawn(app, done))  # the pass is submitted after the click's signals


def reset_masks(app: Any, params: dict, done: Done) -> None:
    _press(app.playground.mask_panel.reset_button, app, done)


def restore_heads(app: Any, params: dict, done: Done) -> None:
    _press(app.playground.restore_heads, app, done)


def set_heads_sequences(app: Any, params: dict, done: Done) -> None:
    """The Heads tab's Sequences box, as typing a number and pressing Enter sets it."""
    app.heads_view.n_box.setValue(params["n"])
    done(None)


def set_training_steps(app: Any, params: dict, done: Done) -> None:
    """The Trainer's Steps field (the tab is built now if it was not yet)."""
    app.trainer_tab.form.steps_spin.setValue(params["steps"])
    done(None)


def open_large(app: Any, params: dict, done: Done) -> None:
    """Open one map of a grid large (its cells are too small to rest on at 1280x800), once its maps are drawn."""
    grid = app.playground.grids[params["kind"]]

    def drawn(problem: str | None) -> None:
        app.playground.show_grid(params["kind"])  # in front: its maps are drawn (a hidden grid draws on showing)
        maps = grid.current_maps()
        if problem or maps is None:
            done(problem or "the grid has no maps to open")
            return
        layers, heads = maps.n_layers, maps.n_heads
        layer = layers - 1 if params["layer"] == "last" else int(params["layer"]) - 1
        head = heads - 1 if params["head"] == "last" else int(params["head"]) - 1
        if not (0 <= layer < layers and 0 <= head < heads):
            done(f"the model has no map L{layer + 1} H{head + 1}")
            return
        grid.open_large_view(layer, head)
        done(None)

    when_maps_drawn(app, drawn)


ACTION_RUNNERS: dict[str, Action] = {  # the names of vocabulary.ACTIONS (a test holds them together)
    "open_model": open_model,
    "set_source": set_source,
    "show_tab": show_tab,
    "show_grid": show_grid,
    "set_view": set_view,
    "reset_masks": reset_masks,
    "restore_heads": restore_heads,
    "set_heads_sequences": set_heads_sequences,
    "set_training_steps": set_training_steps,
    "open_large": open_large,
}
