"""File menu actions for checkpoints: open, save, save as, recent files; reading and writing run off the GUI thread."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from core_model import Seq2SeqTransformer, build_model
from core_model.checkpoint import CheckpointError, CheckpointExtra, load_checkpoint, save_checkpoint
from core_model.shipped import is_shipped
from core_model.tasks import TaskSpec
from visualizer.controllers.recent_files import RecentFiles
from visualizer.state.model_hub import ModelHub
from visualizer.state.origins import checkpoint_origin
from visualizer.state.training import TrainingState
from visualizer.widgets.common.plain_message import show_plain_message
from visualizer.workers.tasks import TaskSlot, run_task

log = logging.getLogger(__name__)
CLOSE_QUESTION = "Save changes to the trained model before closing?"
TRAINING_CLOSE_QUESTION = (
    "Training is still running. Closing stops it.\n\nSave the model trained so far before "
    "closing? (Cancel keeps the window open and training running.)"
)
OPEN_QUESTION = "Save changes to the trained model before opening another one?"
FILE_FILTER = "Attention Playground checkpoints (*.pt);;All files (*)"
OPEN_OVERTAKEN = "Another model was chosen while the file was read, and it stays: open the file again to use it."
SHIPPED_REFUSAL = "The models shipped with the app are read-only: choose another file with File > Save As."


def _show_error(parent: QWidget | None, title: str, text: str) -> None:
    """A real critical message box in the app, its text plain (it names the file); tests replace this function."""
    show_plain_message(parent, QMessageBox.Icon.Critical, title, text)


def _ask_save_discard_cancel(parent: QWidget | None, text: str) -> str:
    """Returns "save", "discard" or "cancel"; tests replace this function."""
    buttons = QMessageBox.StandardButton
    answer = QMessageBox.question(
        parent, "Unsaved training", text, buttons.Save | buttons.Discard | buttons.Cancel, buttons.Save
    )
    return {buttons.Save: "save", buttons.Discard: "discard"}.get(answer, "cancel")


def _ask_open_path(parent: QWidget | None, folder: str) -> str | None:
    options = QFileDialog.Option.DontUseNativeDialog
    return QFileDialog.getOpenFileName(parent, "Open checkpoint", folder, FILE_FILTER, options=options)[0] or None


def _ask_save_path(parent: QWidget | None, suggested: str) -> str | None:
    path, _ = QFileDialog.getSaveFileName(
        parent, "Save checkpoint", suggested, FILE_FILTER, options=QFileDialog.Option.DontUseNativeDialog
    )
    if path and not Path(path).suffix:
        path += ".pt"
    return path or None


@dataclass(frozen=True)
class _Opened:
    """A checkpoint read and built off the GUI thread (load_checkpoint has checked its task against the model)."""

    path: Path
    model: Seq2SeqTransformer
    task: TaskSpec
    history: list[dict]
    extra: CheckpointExtra


def _read(path: Path) -> _Opened:
    ckpt = load_checkpoint(path)
    return _Opened(path, ckpt.build("cpu"), ckpt.task, ckpt.history, ckpt.extra)


class CheckpointActions(QObject):
    """Open / Save / Save As / Open Recent for the hub's model; the composition root puts the actions in File."""

    opened = Signal(str)
    saved = Signal(str)
    failed = Signal(str)

    def __init__(
        self, hub: ModelHub, parent_widget: QWidget | None, training_state: TrainingState | None = None
    ) -> None:
        super().__init__(parent_widget)
        self.hub, self.parent_widget, self.training_state = hub, parent_widget, training_state
        self._jobs: set[QObject] = set()
        self._opening = Path()  # the newest open's file
        # the file opened last wins, whichever is read first; a read overtaken by another model is not applied
        self._opens = TaskSlot(
            "Opening the checkpoint", self, context=lambda: hub.generation, refusals=(CheckpointError,)
        )  # a refused file is logged once, by _fail
        self._opens.finished.connect(self._opened)
        self._opens.error_line.connect(lambda text: self._fail(f"Could not open {self._opening.name}", text))
        self._opens.overtaken.connect(self._overtaken)
        self.open_action = self._action("&Open checkpoint…", "Ctrl+O", self._on_open)
        self.save_action = self._action("&Save checkpoint", "Ctrl+S", self._on_save)
        self.save_as_action = self._action("Save checkpoint &as…", "Ctrl+Shift+S", self._on_save_as)
        self.open_action.setToolTip("Load a model, its training history and attention movie from a checkpoint file")
        self.save_action.setToolTip("Save the model, its history and the attention movie")
        self._recent = RecentFiles(parent_widget, self._open_recent)
        self.recent_menu = self._recent.menu

    def _action(self, text: str, keys: str, slot: Callable[[], None]) -> QAction:
        action = QAction(text, self)
        action.setShortcut(QKeySequence(keys))
        action.triggered.connect(slot)
        return action

    # --- saving ------------------------------------------------------------------------------------------------
    def _own_file(self) -> Path | None:
        """Where Save writes without asking: the model's own file, never a shipped (read-only) one."""
        path = self.hub.path
        return None if path is None or is_shipped(path) else path

    def _suggested_path(self) -> str:
        return str(self._own_file() or Path.home() / f"{self.hub.task.task}-model.pt")

    def _on_save(self) -> None:
        target = self._own_file()
        if target is None:
            self._on_save_as()
        else:
            self.save_to(target)

    def _on_save_as(self) -> None:
        path = _ask_save_path(self.parent_widget, self._suggested_path())
        if path:
            self.save_to(path)

    def _payload(self) -> tuple[Any, list[dict], CheckpointExtra]:
        """A CPU copy of the weights and plain extras, taken on the GUI thread so training cannot change them."""
        state = {k: v.detach().to("cpu", copy=True) for k, v in self.hub.model.state_dict().items()}
        extra = self.hub.extra.with_task(self.hub.task)
        if self.training_state is not None:
            extra = extra.merged(self.training_state.to_extra())
        return (self.hub.config, state), list(self.hub.history), extra

    def save_to(self, path: str | Path) -> None:
        """Write the hub's model to `path` in the background; then mark it saved (emits saved or failed)."""
        path = Path(path)
        if is_shipped(path):
            self._fail(f"Could not save {path.name}", SHIPPED_REFUSAL)
            return
        (config, state), history, extra = self._payload()
        generation = self.hub.generation  # a save that raced new weights leaves the model marked unsaved

        def write() -> Path:
            model = build_model(config)
            model.load_state_dict(state)
            return save_checkpoint(path, model, history=history, extra=extra)

        def done(written: Path) -> None:
            if generation == self.hub.generation:
                self.hub.mark_saved(written)
            else:
                log.info("the model changed while saving %s; it stays marked unsaved", written)
            self._remember(written)
            self.saved.emit(str(written))

        self._start(write, done, f"Could not save {path.name}")

    # --- opening -----------------------------------------------------------------------------------------------
    def _on_open(self) -> None:
        folder = str(self.hub.path.parent) if self.hub.path else ""
        path = _ask_open_path(self.parent_widget, folder)
        if path and self.confirm_discard(OPEN_QUESTION):
            self.open_path(path)

    def open_path(self, path: str | Path) -> None:
        """Load `path` in the background; on success it replaces the hub's model (emits opened or failed)."""
        path = Path(path)
        if self.hub.training_active:
            self._fail("Cannot open a checkpoint", "Stop training before opening a checkpoint.")
            return

        self._opening = path
        self._opens.submit(lambda _state, target: _read(target), path)

    def _overtaken(self) -> None:
        """The hub got another model while the file was read: training started, or the user chose one (a task)."""
        if self.hub.training_active:
            self._fail("Cannot open a checkpoint", "Stop training before opening a checkpoint.")
        else:
            self._fail(f"Did not open {self._opening.name}", OPEN_OVERTAKEN)

    def _opened(self, loaded: _Opened) -> None:
        if self.hub.training_active:  # training started while the file was read
            self._fail("Cannot open a checkpoint", "Stop training before opening a checkpoint.")
            return
        path = loaded.path
        self.hub.set_model(
            loaded.model,
            loaded.task,
            origin=checkpoint_origin(path.name),
            history=loaded.history,
            path=path,
            extra=loaded.extra,
        )
        if self.training_state is not None:
            self.training_state.restore(loaded.history, loaded.extra)
        self._remember(path)
        self.opened.emit(str(path))

    def _start(self, fn: Callable[[], Any], on_done: Callable[[Any], None], title: str) -> None:
        """Run fn in the pool; keep its signal object alive until it reports."""
        holder: list[QObject] = []

        def ok(result: Any) -> None:
            self._jobs.discard(holder[0])
            on_done(result)

        def bad(text: str) -> None:
            self._jobs.discard(holder[0])
            self._fail(title, text)

        holder.append(run_task(title, fn, ok, bad))
        self._jobs.add(holder[0])

    def _fail(self, title: str, text: str) -> None:
        log.warning("%s: %s", title, text)
        _show_error(self.parent_widget, title, text)
        self.failed.emit(text)

    @property
    def opening(self) -> bool:
        """A checkpoint is being read: `opened` or `failed` is still to come."""
        return self._opens.running

    # --- recent files ------------------------------------------------------------------------------------------
    def recent_files(self) -> list[str]:
        return self._recent.files()

    def _remember(self, path: Path) -> None:
        self._recent.remember(path)

    def _open_recent(self, path: str) -> None:
        if self.confirm_discard(OPEN_QUESTION):
            self.open_path(path)

    # --- closing -----------------------------------------------------------------------------------------------
    def confirm_discard(self, question: str = CLOSE_QUESTION) -> bool:
        """Before replacing or closing a model with unsaved training: Save (synchronously), Discard or Cancel."""
        if not self.hub.dirty:
            return True
        answer = _ask_save_discard_cancel(self.parent_widget, question)
        if answer == "discard":
            return True
        if answer == "cancel":
            return False
        return self._save_now()

    def confirm_close(self) -> bool:
        """For closeEvent: asks first; only when the window really closes does a running training stop.

        Cancel keeps everything as it was, training included. Save stops training (its weights reach the hub) and
        writes them; if writing fails the window stays open with the weights still in it.
        """
        training = self.training_state
        if training is None or not training.busy:
            return self.confirm_discard()
        answer = _ask_save_discard_cancel(self.parent_widget, TRAINING_CLOSE_QUESTION)
        if answer == "cancel":
            return False
        training.shutdown()
        return answer == "discard" or self._save_now()

    def _save_now(self) -> bool:
        """Save on the GUI thread (the window is about to go): True when written."""
        path = self._own_file() or _ask_save_path(self.parent_widget, self._suggested_path())
        if not path:
            return False
        if is_shipped(Path(path)):
            _show_error(self.parent_widget, "Could not save the model", SHIPPED_REFUSAL)
            return False
        _, history, extra = self._payload()
        try:
            save_checkpoint(path, self.hub.model, history=history, extra=extra)
        except Exception as exc:  # noqa: BLE001 - a full disk can surface as RuntimeError: keep the window and work
            log.warning("saving %s failed", path, exc_info=True)
            _show_error(
                self.parent_widget,
                "Could not save the model",
                f"{Path(path).name} was not written: {exc or type(exc).__name__}\n\nThe window stays open "
                "with the model; choose File > Save As to try another place.",
            )
            return False
        self.hub.mark_saved(Path(path))
        self._remember(Path(path))
        self.saved.emit(str(path))
        return True
