"""The Trainer tab: the form, run controls, live curves and the probe's attention as it learns (composition only)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from visualizer.state.model_hub import ModelHub
from visualizer.state.origins import stored_training
from visualizer.state.training import TrainingState
from visualizer.state.training_record import MetricsView
from visualizer.state.worker_api import SlotFactory
from visualizer.widgets.training.curves import Curves
from visualizer.widgets.training.form import TrainerForm, form_task
from visualizer.widgets.training.form_scroll import FormScroll
from visualizer.widgets.training.forming import FormingCurves, beside
from visualizer.widgets.training.keys import install_shortcuts
from visualizer.widgets.training.movie import CELL_PX, render_frame, write_movie
from visualizer.widgets.training.probe_view import ProbeView, head_mean
from visualizer.widgets.training.questions import SCRATCH_QUESTION, ConfirmDiscard, ask_discard
from visualizer.widgets.training.questions import (  # tests replace _ask_yes_no and _choose_folder in this module
    ask_yes_no as _ask_yes_no,
)
from visualizer.widgets.training.questions import (
    choose_folder as _choose_folder,
)
from visualizer.widgets.training.redraw import StagedRedraw
from visualizer.widgets.training.run_figures import RunFigures

__all__ = ["CELL_PX", "ProbeView", "TrainerForm", "TrainerTab", "head_mean", "render_frame", "write_movie"]
log = logging.getLogger(__name__)
STATE_TEXT = {
    "idle": "Idle",
    "running": "Running",
    "paused": "Paused",
    "stopping": "Stopping…",
    "finished": "Finished",
    "failed": "Failed",
}
CURVE_REFRESH_MS = 250  # while training, the plots redraw at most 4 times a second (redraw.py spreads each one)


class TrainerTab(QWidget):
    """Form, Train/Pause/Stop, progress, curves and the probe movie; all work runs in TrainingState's thread."""

    movie_exported = Signal(dict)  # {"folder", "frames", "gif"}

    def __init__(
        self,
        hub: ModelHub,
        state: TrainingState,
        parent: QWidget | None = None,
        *,
        own_shortcuts: bool = True,
        confirm_discard: ConfirmDiscard | None = None,
        make_slot: SlotFactory,
        picked: Callable[[], str] | None = None,
    ) -> None:
        """picked: the task the Playground shows, which the form starts from (by default the model's)."""
        super().__init__(parent)
        self._picked = picked or (lambda: hub.task.task)
        self.hub, self.state = hub, state
        self._confirm_discard = confirm_discard or (lambda text: ask_discard(self, text))  # False: nothing changes
        self._movie = make_slot("Exporting the movie", self)  # the app's TaskSlot: written off the GUI thread
        self._movie.finished.connect(self._movie_written)
        self._movie.error_line.connect(self._movie_failed)
        self._own_shortcuts = own_shortcuts  # False: the page holding this tab owns them (keys.py)
        self.form = TrainerForm()
        self.curves = Curves()
        self.probe = ProbeView()
        self.forming = FormingCurves(state, self.probe)
        self._build_controls()
        self._layout()
        self._pending_oom: str | None = None
        self._metrics = state.metrics
        self._snapshots: tuple | None = None
        self._wire()
        self._load_form_from_hub()
        self._on_metrics(self._metrics)
        self.probe.set_snapshots(state.snapshots)
        self._on_state(state.state)
        self._on_previous(state.previous)
        self.status_label.setText(
            "Start here: Train from scratch gives the model fresh random weights and shows its "
            "attention forming. Continue training goes on from the current weights."
        )

    def _build_controls(self) -> None:
        self.scratch_button = QPushButton("Train from scratch")
        self.scratch_button.setToolTip(
            "Fresh random weights with the current architecture, then train them: watch "
            "attention form (Model > Undo Train from scratch brings the old model back)"
        )
        self.scratch_button.setDefault(True)
        self.scratch_button.setStyleSheet("font-weight: bold;")
        self.train_button = QPushButton("Continue training")
        self.train_button.setToolTip("Train the current weights further; the step axis goes on (Ctrl+Return)")
        self.clear_previous_button = QPushButton("Clear previous run")
        self.clear_previous_button.setToolTip("Remove the grey curves of the run before the last from-scratch start")
        self.clear_previous_button.hide()
        self.pause_button = QPushButton("Pause")
        self.pause_button.setToolTip("Pause or resume; while paused the other tabs use the weights so far (Ctrl+P)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop after the current step and keep the weights so far (Esc or Ctrl+.)")
        self.state_label = QLabel()
        self.figures = RunFigures()  # progress bar, speed, elapsed time, ETA (named here too, as a person reads them)
        self.progress_bar, self.speed_label = self.figures.progress_bar, self.figures.speed_label
        self.elapsed_label, self.eta_label = self.figures.elapsed_label, self.figures.eta_label
        self._curve_timer = QTimer(self)  # coalesces curve redraws while a run streams progress
        self._curve_timer.setSingleShot(True)
        self._curve_timer.setInterval(CURVE_REFRESH_MS)
        self._curve_timer.timeout.connect(self._draw_curves)
        self._redraw = StagedRedraw(self)
        self.status_label = QLabel()
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)  # an export or an error names a folder or file
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.shortcuts = install_shortcuts(self, lambda: self) if self._own_shortcuts else []  # else the page's

    def _layout(self) -> None:
        buttons = QGridLayout()  # two by two: in one row they set the column's width and squeeze the curves
        for i, w in enumerate((self.scratch_button, self.train_button, self.pause_button, self.stop_button)):
            buttons.addWidget(w, i // 2, i % 2)
        state_row = QHBoxLayout()
        state_row.addWidget(self.state_label, 1)
        state_row.addWidget(self.clear_previous_button)
        # Only the form scrolls: the buttons, the progress and the messages below it stay in sight on a short
        # screen, where a run would otherwise push its own progress bar out of view.
        scroll = FormScroll(self.form)
        column = QVBoxLayout()
        column.addWidget(scroll)
        column.addLayout(buttons)
        column.addLayout(state_row)
        column.addWidget(self.figures)
        column.addWidget(self.status_label)
        column.addStretch(1)
        self.status_label.setMaximumWidth(scroll.minimumWidth())  # wraps within the column, not widening it
        layout = QHBoxLayout(self)
        layout.addLayout(column, 0)
        layout.addWidget(beside(self.curves, self.forming, self.probe), 1)

    def _wire(self) -> None:
        self.train_button.clicked.connect(lambda: self._on_train())
        self.scratch_button.clicked.connect(lambda: self._on_train(from_scratch=True))
        self.clear_previous_button.clicked.connect(self.state.clear_previous)
        self.state.previous_changed.connect(self._on_previous)
        self.probe.step_shown.connect(self.curves.set_cursor)
        self.pause_button.clicked.connect(self._on_pause_resume)
        self.stop_button.clicked.connect(self.state.stop)
        self.form.changed.connect(self._refresh_buttons)
        self.form.build_button.clicked.connect(self._on_build_model)
        self.probe.export_button.clicked.connect(self._on_export)
        self.state.state_changed.connect(self._on_state)
        self.state.metrics_changed.connect(self._on_metrics)
        self.state.snapshots_changed.connect(self._on_snapshots)
        self.state.model_replaced.connect(self._load_form_from_hub)
        self.state.message.connect(self.status_label.setText)
        self.state.out_of_memory.connect(self._on_out_of_memory)
        self.hub.model_changed.connect(self._refresh_buttons)  # new weights or model: re-check the form against it
        self.hub.model_changed.connect(self._name_curves)
        self._name_curves()

    def _name_curves(self) -> None:
        self.curves.set_source(stored_training(self.hub.origin, self.hub.history))

    def _load_form_from_hub(self) -> None:
        """Start from the model's task and, when a checkpoint stored one, its training recipe."""
        self.curves.follow_curves()  # its own history, whatever steps it spans
        self.form.set_values(form_task(self.hub), self.state.stored_config(), self.hub.config, str(self.hub.device))
        self.follow_task(self._picked())

    def follow_task(self, name: str) -> None:
        """The Playground picked a task: the form shows its recipe for this model (the model's own task keeps the
        model's fields), unless a run is going or the form already shows that task."""
        if self.state.busy or self.form.task_combo.currentText() == name:
            return
        if name == self.hub.task.task:
            self.form.show_recipe(form_task(self.hub), self.state.stored_config())
        else:
            self.form.take_task_recipe(name)

    def _refresh_buttons(self) -> None:
        valid = self.form.validate(self.hub.config.vocab_size, self.hub.config.max_len, self.state.probe_problem)
        state = self.state.state
        busy = self.state.busy
        self.train_button.setEnabled(valid and self.form.vocab_fits and not busy)
        self.scratch_button.setEnabled(valid and not busy)  # a fresh model takes the vocabulary the task needs
        self.pause_button.setEnabled(state in ("running", "paused"))
        self.pause_button.setText("Resume" if state == "paused" else "Pause")
        self.stop_button.setEnabled(state in ("running", "paused"))
        self.form.setEnabled(not busy)

    def _on_state(self, state: str) -> None:
        stopped = state == "finished" and self.state.end_reason == "stopped"
        self.state_label.setText("Stopped" if stopped else STATE_TEXT.get(state, state))
        if state != "running" and self._curve_timer.isActive():  # paused or ended: show every point now
            self._curve_timer.stop()
            self._draw_curves()
        elif state != "running":
            self._redraw.finish()
        self._refresh_buttons()
        if state != "running":
            self.figures.clear_rates()
        elif self._metrics.progress is None:  # its first step is still to come: starting, not "not training"
            self.figures.show_progress(None, running=True)
        if state == "failed" and self._pending_oom is not None:
            text, self._pending_oom = self._pending_oom, None
            if _ask_yes_no(self, "Out of GPU memory", f"{text}\n\nContinue on the CPU from the last good weights?"):
                self.state.continue_on_cpu()

    def _on_train(self, from_scratch: bool = False) -> None:
        if not (self.scratch_button if from_scratch else self.train_button).isEnabled():
            return
        if from_scratch and self.hub.dirty and not self._confirm_discard(SCRATCH_QUESTION):
            return  # unsaved training is never replaced without asking; Cancel leaves everything as it was
        try:
            config, task = self.form.train_config(), self.form.task_spec()
        except ValueError as exc:  # the inline checks should have caught it; say so rather than crash
            self.status_label.setText(f"Cannot start training: {exc}")
            return
        self.figures.start(config.steps)
        first = 0 if from_scratch or not self._metrics.steps else self._metrics.steps[-1]
        self.curves.span_run(first, first + config.steps)  # a 60-step run is not a sliver beside 4000 old steps
        self.status_label.setText("")
        start = self.state.start_from_scratch if from_scratch else self.state.start
        start(config, task, probe_text=self.form.probe_edit.text(), rates=self.form.rates())

    def continue_training(self) -> None:
        """What Continue training does (Ctrl+Return): nothing while it is disabled."""
        self._on_train()

    def pause_or_resume(self) -> None:
        """What the Pause / Resume button does (Ctrl+P): nothing while no run is going."""
        self._on_pause_resume()

    def _on_pause_resume(self) -> None:
        if self.state.state == "running":
            self.state.pause()
        elif self.state.state == "paused":
            self.state.resume()

    def _on_metrics(self, metrics: MetricsView) -> None:
        """Progress figures at once; curves now when idle, else at most every CURVE_REFRESH_MS."""
        self._metrics = metrics
        if self.state.state != "running":
            self._curve_timer.stop()
            self._draw_curves()
        elif not self._curve_timer.isActive():
            self._curve_timer.start()
        self.figures.show_progress(metrics.progress, running=self.state.state == "running")

    def _draw_curves(self) -> None:
        """Every plot, one per turn of the event loop while a run goes on; at once when it is paused or ended."""
        parts = self.curves.series_parts(self._metrics)
        if self._snapshots is not None:  # probe snapshots ride on the same 4 Hz redraw (early on, one per step)
            snapshots, self._snapshots = self._snapshots, None
            parts += [partial(self.probe.set_snapshots, snapshots), partial(self.forming.set_snapshots, snapshots)]
        self._redraw.run(parts, staged=self.state.state == "running")

    def _on_snapshots(self, snapshots: tuple) -> None:
        self._snapshots = snapshots
        if self.state.state != "running":
            self._draw_curves()
        elif not self._curve_timer.isActive():
            self._curve_timer.start()

    def _on_previous(self, previous: MetricsView | None) -> None:
        self.curves.set_previous(previous)
        self.clear_previous_button.setVisible(previous is not None)

    def _on_out_of_memory(self, text: str) -> None:
        self._pending_oom = text  # asked once the run has handed its weights back (state "failed")

    def _on_build_model(self) -> None:
        """A new untrained model whose vocabulary fits the chosen number of symbols."""
        if self.state.busy:
            return
        if self.hub.dirty and not _ask_yes_no(
            self, "Replace the model", "The current model has unsaved training. Replace it anyway?"
        ):
            return
        try:
            task = self.form.task_spec()
        except ValueError:
            task = replace(self.hub.task, n_symbols=self.form.symbols_spin.value())
        vocab_size = self.state.build_matching_model(task)
        if vocab_size is not None:
            self.status_label.setText(f"Built an untrained model with vocab_size {vocab_size}; train it here.")

    def _on_export(self) -> None:
        folder = _choose_folder(self)
        if folder:
            self.export_movie(Path(folder))

    def export_movie(self, folder: Path) -> None:
        """Write the snapshot movie through the injected slot (off the GUI thread in the app); `movie_exported` says."""
        snapshots = self.state.snapshots  # an immutable tuple: safe to hand to the background task
        if not snapshots:
            return
        self.probe.export_button.setEnabled(False)
        self._movie.submit(lambda _state: write_movie(snapshots, folder))

    def _movie_written(self, result: dict) -> None:
        self.probe.export_button.setEnabled(True)
        gif = f" and {Path(result['gif']).name}" if result["gif"] else " (install Pillow for an animated GIF)"
        self.status_label.setText(f"Exported {result['frames']} frames to {result['folder']}{gif}.")
        self.movie_exported.emit(result)

    def _movie_failed(self, text: str) -> None:
        self.probe.export_button.setEnabled(True)
        self.status_label.setText(f"Could not export the movie: {text}")
