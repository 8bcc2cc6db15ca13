"""The set-up actions a lesson step can run, each through the app's own controls and signals.

An action gets the running Application (untyped: that module imports the lessons), the step's parameters and a
`done(problem)` callback, called once: with None when the app is set up, or with a sentence saying why it is not.
Actions that start work (a checkpoint load, a forward pass) return at once and call `done` from the app's signal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def open_model(app: Any, params: dict, done: Done) -> None:
    """File > Open on a shipped checkpoint: asks first when training would be lost, waits for the load and maps."""
    from core_model.shipped import resource_path

    if not app.checkpoints.confirm_discard(OPEN_QUESTION):
        done("the lesson needs another model: it was not opened")
        return

    def opened(_path: str) -> None:
        stop()
        when_maps_drawn(app, done)

    def failed(message: str) -> None:
        stop()
        done(message)

    stop = listen([(app.checkpoints.opened, opened), (app.checkpoints.failed, failed)])
    app.checkpoints.open_path(resource_path(params["model"]))


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


ACTION_RUNNERS: dict[str, Action] = {  # the names of vocabulary.ACTIONS (a test holds them together)
    "open_model": open_model,
    "set_source": set_source,
    "show_tab": show_tab,
    "show_grid": show_grid,
    "set_view": set_view,
}
