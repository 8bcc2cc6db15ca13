"""What a lesson changed in the app, and putting it back when the lesson ends (unless the learner keeps it).

A lesson opens models, switches heads off, paints masks, types sources and moves between tabs: the learner's own
settings must come back when it ends, or the Playground afterwards shows numbers no one explained. Every setting is
read when the lesson starts (one a set-up action is about to build, such as the Trainer's Steps, just before that
action), and on the lesson's end each one that differs is set again through the app's own controls and signals.

The model is special: the learner's model (its unsaved training too) comes back as a Model > Undo step, so the model
the lesson left (a model trained in it included) stays one Model > Undo away, and nothing trained is lost.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
UNDO_LABEL = "end of lesson"  # Model > Undo end of lesson: back to the model the lesson left


@dataclass(frozen=True)
class HeldModel:
    """The hub's model as the learner had it: enough to install it again, unsaved training included."""

    model: Any  # Seq2SeqTransformer; the hub's own object, copied only when it is put back
    task: Any
    origin: str
    history: list[dict]
    path: Any
    dirty: bool
    extra: Any


@dataclass(frozen=True)
class Setting:
    """One thing a lesson may change: what the end-of-lesson line calls it, how to read it and to set it again."""

    label: str
    read: Callable[[Any], object]
    write: Callable[[Any, object], None]
    available: Callable[[Any], bool] = lambda _app: True  # False: not built yet, read just before an action builds it
    same: Callable[[object, object], bool] = lambda a, b: a == b


def _read_model(app: Any) -> HeldModel:
    hub = app.hub
    return HeldModel(hub.model, hub.task, hub.origin, list(hub.history), hub.path, hub.dirty, hub.extra)


def _same_model(before: object, now: object) -> bool:
    """The same object, or the same saved file with no training since (a lesson that opened it again)."""
    assert isinstance(before, HeldModel) and isinstance(now, HeldModel)
    if before.model is now.model:
        return True
    return before.path is not None and before.path == now.path and not before.dirty and not now.dirty


def _write_model(app: Any, before: object) -> None:
    """The learner's model back as a Model > Undo step (a copy: the undo stack keeps the object it was given)."""
    assert isinstance(before, HeldModel)
    app.hub.set_model(
        copy.deepcopy(before.model),
        before.task,
        origin=before.origin,
        history=before.history,
        path=before.path,
        dirty=before.dirty,
        extra=before.extra,
        undo_as=UNDO_LABEL,
    )


def _same_gates(before: object, now: object) -> bool:
    assert isinstance(before, dict) and isinstance(now, dict)
    return before.keys() == now.keys() and all(np.array_equal(before[k], now[k]) for k in before)


def _write_gates(app: Any, before: object) -> None:
    """All heads back on, then the ones the learner had off switched off again (a model of another shape: all on)."""
    assert isinstance(before, dict)
    session = app.session
    now = session.gates()
    session.restore_all_heads()
    if any(now[kind].shape != gates.shape for kind, gates in before.items() if kind in now):
        return
    for kind, gates in before.items():
        for layer, head in np.argwhere(~np.asarray(gates)):
            session.set_head_enabled(kind, int(layer), int(head), False)


def _write_view(app: Any, view: object) -> None:
    combo = app.playground.view_modes.combo
    combo.setCurrentIndex(combo.findData(view))


def _write_source(app: Any, text: object) -> None:
    app.session.set_source(str(text))


def _write_sequences(app: Any, n: object) -> None:
    app.heads_view.n_box.setValue(int(n))  # type: ignore[call-overload]


def _write_training_steps(app: Any, steps: object) -> None:
    app.trainer_tab.form.steps_spin.setValue(int(steps))  # type: ignore[call-overload]


def _open_large_views(app: Any) -> frozenset[str]:
    return frozenset(kind for kind, grid in app.playground.grids.items() if grid.large_view.is_visible())


def _close_large_views(app: Any, before: object) -> None:
    """Close the large map windows the lesson opened (one the learner had open stays)."""
    assert isinstance(before, frozenset)
    for kind in _open_large_views(app) - before:
        app.playground.grids[kind].large_view.dialog.close()


SETTINGS: dict[str, Setting] = {  # in the order they are put back: the model first, as it resets the heads
    "model": Setting("the model", _read_model, _write_model, same=_same_model),
    "gates": Setting("the heads switched on and off", lambda app: app.session.gates(), _write_gates, same=_same_gates),
    "masks": Setting("the masks", lambda app: app.session.masks, lambda app, spec: app.session.set_masks(spec)),
    "view": Setting("the Show choice", lambda app: app.playground.view_modes.mode(), _write_view),
    "source": Setting("the source", lambda app: app.session.typed_source, _write_source),
    "grid": Setting(
        "the grid in front",
        lambda app: app.playground.grid_tabs.currentIndex(),
        lambda app, index: app.playground.grid_tabs.setCurrentIndex(index),
    ),
    "sequences": Setting("the Heads tab's Sequences", lambda app: app.heads_view.n_box.value(), _write_sequences),
    "training_steps": Setting(
        "the Trainer's Steps",
        lambda app: app.trainer_tab.form.steps_spin.value(),
        _write_training_steps,
        available=lambda app: app.trainer_page.built,
    ),
    "large_views": Setting(
        "the large map windows",
        _open_large_views,
        _close_large_views,
        same=lambda a, b: b <= a,  # type: ignore[operator]
    ),
    "tab": Setting(
        "the tab in front",
        lambda app: app.window.tabs.currentIndex(),
        lambda app, index: app.window.tabs.setCurrentIndex(index),
    ),
}
BUILT_BY = {"set_training_steps": "training_steps"}  # a set-up action that builds the widget of a setting
KEPT = (  # what the panel's Keep choice keeps
    "the model, the heads switched off, the masks, the source, the Show choice, the grid and tab in front, "
    "the Heads tab's Sequences and the Trainer's Steps"
)


class LessonChanges:
    """The settings as they were when a lesson started; `restore` sets back each that the lesson changed."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._before: dict[str, object] = {}

    def take(self) -> None:
        """Read every setting that exists now (the lesson starts)."""
        self._before = {name: s.read(self._app) for name, s in SETTINGS.items() if s.available(self._app)}

    def before_action(self, action: str) -> None:
        """A set-up action may build a widget whose setting was not read at the start: read it just before."""
        name = BUILT_BY.get(action)
        if name is not None and name not in self._before:
            self._before[name] = SETTINGS[name].read(self._app)

    def close_large_views(self) -> None:
        """Close the large map windows the lesson opened so far (one the learner had open stays): on a laptop screen
        they cover the source field, the Masks section or another tab that a later step points to."""
        if "large_views" in self._before:
            _close_large_views(self._app, self._before["large_views"])

    def forget(self) -> None:
        """The learner keeps what the lesson changed."""
        self._before = {}

    def restore(self) -> list[str]:
        """Set back each setting the lesson changed; returns their labels, in order ("the model", "the source")."""
        before, self._before = self._before, {}
        restored = []
        if "model" in before and self._app.checkpoints.opening:
            self._after_open(before.pop("model"))  # the lesson's model would replace the learner's once read
            restored.append(SETTINGS["model"].label)
        for name, setting in SETTINGS.items():
            if name not in before or setting.same(before[name], setting.read(self._app)):
                continue
            if name == "model" and self._app.hub.training_active:
                log.info("a lesson ended while training runs: the model it trains stays")
                continue
            setting.write(self._app, before[name])
            restored.append(setting.label)
        return restored

    def _after_open(self, before: object) -> None:
        """A lesson left while its model was still being read: the learner's model comes back once it is."""
        from visualizer.lessons.actions import listen

        checkpoints = self._app.checkpoints

        def arrived(_text: str) -> None:
            stop()
            if not _same_model(before, _read_model(self._app)):
                _write_model(self._app, before)

        stop = listen([(checkpoints.opened, arrived), (checkpoints.failed, arrived)])
