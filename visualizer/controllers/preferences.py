"""User preferences through QSettings: what the app restores at start-up and saves on close.

Restoring goes through the session's own setters, so a restored value is validated exactly as a typed one is; every
number read back is clamped to its range first (a settings file is user-editable text).
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from typing import Any

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QMainWindow, QSplitter, QTabWidget

from core_model import MaskSpec
from core_model.tasks import TASK_NAMES
from visualizer.state.playground import DEFAULT_SOURCE, MAX_EXTRA_PADS, WINDOW_RANGE, PlaygroundSession
from visualizer.state.playground_task import task_on_model

log = logging.getLogger(__name__)
WINDOW_FIELDS = ("encoder_window", "decoder_window")
RESTORED_KEYS = (
    "input/source",
    "input/task",
    "input/prefix",
    "input/pads",
    "masks/spec",
    "window/tab",
    "window/splitter",
)


def load_json(settings: QSettings, key: str, default: Any) -> Any:
    """A JSON value stored under key, or default when absent or unreadable."""
    raw = settings.value(key)
    if raw is None:
        return default
    try:
        return json.loads(str(raw))
    except (TypeError, ValueError):
        log.warning("ignoring unreadable setting %s", key)
        return default


def string_list(settings: QSettings, key: str) -> list[str]:
    """A list of strings stored under key ([] when absent); INI files hand a one-element list back as a plain
    string."""
    value = settings.value(key, [])
    if isinstance(value, str):
        return [value] if value else []
    if value is None:
        return []
    if not isinstance(value, list | tuple):  # an edited file's @Rect(...) or @Variant(...) number is no list
        log.warning("ignoring unreadable setting %s", key)
        return []
    return [str(v) for v in value]


def save_json(settings: QSettings, key: str, value: Any) -> None:
    settings.setValue(key, json.dumps(value))


def mask_spec_from_dict(data: object) -> MaskSpec:
    """A MaskSpec from stored settings: window widths clamped to what the controls offer; anything bad -> defaults."""
    if not isinstance(data, dict):
        return MaskSpec()
    data = dict(data)
    for field in WINDOW_FIELDS:
        if data.get(field) is not None:
            data[field] = clamped_int(data[field], WINDOW_RANGE[0], WINDOW_RANGE[1], WINDOW_RANGE[0])
    try:
        return MaskSpec(**data)
    except (TypeError, ValueError, OverflowError):
        return MaskSpec()


def mask_spec_to_dict(spec: MaskSpec) -> dict:
    return {k: v for k, v in asdict(spec).items() if not k.endswith("_painted")}  # painted cells fit one input only


def clamped_int(value: object, low: int, high: int, default: int) -> int:
    """An integer setting forced into [low, high]; anything unreadable gives `default`."""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return default
    return max(low, min(high, number))


@dataclass
class Preferences:
    """Reads and writes the window's and the playground's preferences."""

    window: QMainWindow
    tabs: QTabWidget
    session: PlaygroundSession  # the inputs and masks: the fields follow the session
    splitter: QSplitter  # the Playground's maps/panels split

    def restore(self) -> None:
        """Put the last session back through the session's setters, in dependency order (the fields follow it)."""
        st, session = QSettings(), self.session
        source = str(st.value("input/source", DEFAULT_SOURCE))
        task = str(st.value("input/task", session.task))
        task = task if task in TASK_NAMES else session.task  # every task of the registry is offered
        hub = session.hub
        if hub.own_work and task_on_model(hub.task, task, hub.config.vocab_size) is None:
            task = session.task  # a model of the user's own that cannot read the last task keeps its own
        prefix = str(st.value("input/prefix", ""))
        pads = clamped_int(st.value("input/pads", 2), 0, MAX_EXTRA_PADS, 2)
        spec = mask_spec_from_dict(load_json(st, "masks/spec", {}))
        session.set_extra_pads(pads)
        session.set_task(task)
        session.set_masks(spec)
        if not session.set_source(source):
            session.set_source(session.example_source())
        if prefix:
            session.set_target_prefix(prefix)
        self.tabs.setCurrentIndex(clamped_int(st.value("window/tab", 0), 0, max(0, self.tabs.count() - 1), 0))
        splitter = st.value("window/splitter")
        if isinstance(splitter, QByteArray):
            self.splitter.restoreState(splitter)

    def restore_or_reset(self) -> str | None:
        """Restore the last session, or the defaults when the saved settings break it; returns what went wrong."""
        try:
            self.restore()
        except Exception as exc:  # noqa: BLE001 - a settings file is user-editable text: never let it block start-up
            log.warning("could not restore the saved preferences; using the defaults", exc_info=True)
            self.forget()
            self.restore()
            return f"Your saved preferences could not be restored ({exc}); the defaults are used."
        return None

    def forget(self) -> None:
        """Drop the restorable values (not the geometry or recent files): the next restore uses the defaults."""
        st = QSettings()
        for key in RESTORED_KEYS:
            st.remove(key)

    def save(self) -> None:
        st = QSettings()
        st.setValue("window/geometry", self.window.saveGeometry())
        st.setValue("input/source", self.session.typed_source)
        st.setValue("input/task", self.session.task)
        st.setValue("input/prefix", self.session.typed_prefix)
        st.setValue("input/pads", self.session.extra_pads)
        save_json(st, "masks/spec", mask_spec_to_dict(self.session.masks))
        st.setValue("window/tab", self.tabs.currentIndex())
        st.setValue("window/splitter", self.splitter.saveState())
        st.sync()
