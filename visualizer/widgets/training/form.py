"""The Trainer tab's form: task and training hyperparameters, checked against the current model as they are typed."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from core_model.config import ModelConfig
from core_model.device import available_devices
from core_model.recipe import recipe_task, task_train_config
from core_model.task import Task
from core_model.tasks import TASKS, TaskSpec, max_source_len, task_named
from core_model.train_config import MAX_BATCH_SIZE, MAX_STEPS, PAPER_ADAM_BETA1, ScheduleKind, TrainConfig
from core_model.vocab import N_SPECIALS, SYMBOL_POOL
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.common.styles import WARNING_TEXT

DROP_PATH_TIP = (
    "Stochastic depth (Huang et al. 2016): while training, each residual branch (attention, feed-forward) "
    "is skipped for a whole sequence with this probability and kept ones are scaled by 1/(1-p); the "
    "playground is unaffected. No parameters: the weights carry over"
)
RUNS_TIP = (
    'Share of training sources drawn as runs of repeated symbols ("0000", "11222"): random sources '
    "almost never repeat a symbol many times, so without them a model may never learn those"
)
ANCHORED_TIP = (
    'Read each source as <bos> symbols <eos>. RoPE models need these anchors to tell "00" from '
    '"0000" (the shipped RoPE models use them); sinusoidal PE adds absolute positions itself'
)
BETA1_TIP = (
    "Adam's beta1, its momentum: each step follows an average of recent gradients, about 1/(1 - beta1) steps "
    f"long. The paper uses {PAPER_ADAM_BETA1}, and so did the shipped models' training (a model from a file "
    f"starts from the value it stored); a new model's recipe uses {TrainConfig().adam_beta1}, which learned the "
    "copy task in fewer steps"
)
MAX_FORM_LEN = 510  # the longest source the length boxes offer
SYMBOLS_TIP = (
    "{task}'s size: its {meaning}, {low} to {high}. The model's vocab_size must cover the task's symbols and the "
    "{specials} special tokens"
)
FIXED_SYMBOLS_TIP = "{task}'s alphabet is fixed ({meaning}: {size}): nothing to choose here"
SCHEDULES: tuple[tuple[str, ScheduleKind], ...] = (
    ("Warm-up + cosine", "warmup_cosine"),
    ("Constant", "constant"),
    ("Noam (paper §5.3)", "noam"),
)


ProbeCheck = Callable[[str, TaskSpec, int], str]  # (probe text, task, model max_len) -> the rule it breaks, or ""


def _no_probe_check(_text: str, _task: TaskSpec, _model_max_len: int) -> str:
    return ""


def form_task(hub: ModelHub) -> TaskSpec:
    """The task the form starts from: the model's own, but the shipped models' recipe (lengths 1-16, runs, anchors
    for RoPE) for a loaded file that states none, whose TaskSpec defaults would train one length only."""
    if hub.path is None or hub.extra.task is not None:
        return hub.task
    return recipe_task(
        hub.task.task, hub.config.positional, n_symbols=hub.task.n_symbols, model_max_len=hub.config.max_len
    )


def _spin(low: int, high: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setToolTip(tip)
    return box


def _dspin(low: float, high: float, decimals: int, step: float, tip: str) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setDecimals(decimals)
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setToolTip(tip)
    return box


class TrainerForm(QGroupBox):
    """Hyperparameters with inline errors (a red label next to the field); emits `changed` on every edit."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Task and training", parent)
        self.task_combo = QComboBox()
        for name, definition in TASKS.items():  # every task of the registry; picking one fills in its recipe
            self.task_combo.addItem(name)
            self.task_combo.setItemData(
                self.task_combo.count() - 1, definition.description, Qt.ItemDataRole.ToolTipRole
            )
        self.task_combo.setToolTip("The task to train on; picking one fills in its recipe (symbols, lengths, probe)")
        self._model: tuple[str, int] = ("rope", 64)  # the model's positional encoding and max_len (set_values)
        self.min_len_spin = _spin(1, MAX_FORM_LEN, "Shortest source sequence")
        self.max_len_spin = _spin(
            1, MAX_FORM_LEN, "Longest source sequence (plus <bos>/<eos> it must fit the model's max_len)"
        )
        self.symbols_spin = _spin(
            1,
            len(SYMBOL_POOL),
            f"Number of task symbols (the model's vocab_size must cover them and the {N_SPECIALS} special tokens)",
        )
        self.runs_spin = _dspin(0.0, 1.0, 2, 0.05, RUNS_TIP)
        self.anchored_check = QCheckBox("<bos> … <eos> around each source")
        self.anchored_check.setToolTip(ANCHORED_TIP)
        self.batch_spin = _spin(1, MAX_BATCH_SIZE, "Sequences per optimisation step")
        self.steps_spin = _spin(1, MAX_STEPS, "Optimisation steps of this run")
        self.schedule_combo = QComboBox()
        for text, key in SCHEDULES:
            self.schedule_combo.addItem(text, key)
        self.lr_spin = _dspin(1e-6, 10.0, 6, 1e-4, "Peak learning rate (constant and warm-up + cosine)")
        self.noam_spin = _dspin(0.001, 100.0, 3, 0.1, "Noam factor: lr = factor * d_model^-0.5 * min(...)")
        self.warmup_spin = _spin(0, MAX_STEPS, "Warm-up steps (Noam needs at least 1)")
        self.smoothing_spin = _dspin(0.0, 0.99, 2, 0.05, "Label smoothing (the paper uses 0.1)")
        self.beta1_spin = _dspin(0.0, 0.999, 3, 0.05, BETA1_TIP)
        self.dropout_spin = _dspin(
            0.0, 0.9, 2, 0.05, "Dropout of the training copy (no parameters: weights carry over)"
        )
        self.drop_path_spin = _dspin(0.0, 0.9, 2, 0.05, DROP_PATH_TIP)
        self.seed_spin = _spin(0, 2**31 - 1, "Seed of the training batches")
        self.device_combo = QComboBox()
        self.device_combo.addItems(available_devices())
        self.probe_edit = QLineEdit(TaskSpec().default_source())
        self.probe_edit.setToolTip("Source whose attention maps are recorded during training")
        self.build_button = QPushButton("Build matching model")
        self.build_button.setToolTip("Replace the current model by an untrained one whose vocabulary fits the task")
        self.errors: dict[str, QLabel] = {}
        self.vocab_fits = True  # the last validate(): the model's vocabulary covers the task's
        self._clamped: dict[str, str] = {}  # field -> what the stored recipe held that the field cannot take
        self._layout_rows()
        for box in (
            self.min_len_spin,
            self.max_len_spin,
            self.symbols_spin,
            self.batch_spin,
            self.steps_spin,
            self.warmup_spin,
            self.seed_spin,
            self.lr_spin,
            self.noam_spin,
            self.smoothing_spin,
            self.beta1_spin,
            self.dropout_spin,
            self.drop_path_spin,
            self.runs_spin,
        ):
            box.valueChanged.connect(self.changed)
        self.anchored_check.toggled.connect(self.changed)
        for combo in (self.task_combo, self.schedule_combo, self.device_combo):
            combo.currentIndexChanged.connect(self.changed)
        self.probe_edit.textChanged.connect(self.changed)
        self.schedule_combo.currentIndexChanged.connect(self._on_schedule)
        self.task_combo.currentIndexChanged.connect(self._on_task_chosen)
        self._fit_task(task_named(self.task_combo.currentText()))

    def _layout_rows(self) -> None:
        form = QFormLayout(self)
        rows = (
            ("Task", "task", self.task_combo),
            ("Min length", "min_len", self.min_len_spin),
            ("Max length", "max_len", self.max_len_spin),
            ("Symbols", "symbols", self.symbols_spin),
            ("Repeated runs", "runs", self.runs_spin),
            ("Anchored", "anchored", self.anchored_check),
            ("Batch size", "batch", self.batch_spin),
            ("Steps", "steps", self.steps_spin),
            ("Schedule", "schedule", self.schedule_combo),
            ("Learning rate", "lr", self.lr_spin),
            ("Noam factor", "noam", self.noam_spin),
            ("Warm-up steps", "warmup", self.warmup_spin),
            ("Label smoothing", "smoothing", self.smoothing_spin),
            ("Adam β1", "beta1", self.beta1_spin),
            ("Dropout", "dropout", self.dropout_spin),
            ("Drop path", "drop_path", self.drop_path_spin),
            ("Seed", "seed", self.seed_spin),
            ("Device", "device", self.device_combo),
            ("Probe input", "probe", self.probe_edit),
        )
        for label, key, field in rows:
            row = QWidget()
            line = QHBoxLayout(row)
            line.setContentsMargins(0, 0, 0, 0)
            line.addWidget(field, 1)
            error = QLabel()
            error.setWordWrap(True)
            error.hide()
            line.addWidget(error, 2)
            if key == "symbols":
                line.addWidget(self.build_button)
                self.build_button.hide()
            self.errors[key] = error
            form.addRow(label, row)
            if isinstance(field, QAbstractSpinBox):  # an edited field no longer shows the stored value it clamped
                field.valueChanged.connect(lambda _v, k=key: self._clamped.pop(k, None))

    def _on_schedule(self) -> None:
        noam = self.schedule() == "noam"
        self.noam_spin.setEnabled(noam)
        self.lr_spin.setEnabled(not noam)

    def schedule(self) -> ScheduleKind:
        return cast(ScheduleKind, str(self.schedule_combo.currentData()))  # the combo holds SCHEDULES' keys

    def _fit_task(self, definition: Task) -> None:
        """The symbols and length boxes take what the task takes; a fixed alphabet leaves nothing to choose."""
        low, high = definition.symbols_range
        self.symbols_spin.setRange(low, min(high, len(SYMBOL_POOL)))
        fixed = low == high
        self.symbols_spin.setEnabled(not fixed)
        words = {"task": definition.name, "meaning": definition.symbols_meaning, "specials": N_SPECIALS}
        tip = FIXED_SYMBOLS_TIP if fixed else SYMBOLS_TIP
        self.symbols_spin.setToolTip(tip.format(**words, size=low, low=low, high=high))
        self.symbols_spin.setSuffix(f" ({definition.symbols_meaning})")  # what the number means for this task
        first, last = definition.length_range
        top = MAX_FORM_LEN if last is None else min(last, MAX_FORM_LEN)
        for box in (self.min_len_spin, self.max_len_spin):
            box.setRange(first, top)

    def set_task_fields(self, task: TaskSpec) -> None:
        """Show a task's fields (its name, size, lengths, runs, anchors and its example as the probe), one
        `changed` at the end."""
        self.blockSignals(True)
        self.task_combo.blockSignals(True)
        try:
            self.task_combo.setCurrentText(task.task)
            self._fit_task(task.definition)
            self.symbols_spin.setValue(task.n_symbols)
            self.max_len_spin.setValue(task.max_len)
            self.min_len_spin.setValue(task.min_len)
            self.runs_spin.setValue(task.runs)
            self.anchored_check.setChecked(task.anchored)
            self.probe_edit.setText(task.default_source())
        finally:
            self.task_combo.blockSignals(False)
            self.blockSignals(False)
        self.changed.emit()

    def _on_task_chosen(self) -> None:
        """Another task picked here: its own recipe for this model (recipe_task, task_train_config), in place of the
        last task's."""
        self.take_task_recipe(self.task_combo.currentText())

    def take_task_recipe(self, name: str) -> None:
        """Show task `name` with its own recipe for the current model (recipe_task, task_train_config)."""
        positional, max_len = self._model
        self.show_recipe(recipe_task(name, positional, model_max_len=max_len), task_train_config(name, positional))

    def show_recipe(self, task: TaskSpec, config: TrainConfig) -> None:
        """Show a task's fields and the steps, rate and batch it trains with; the other training fields (seed,
        schedule, device, ...) stay as they are. One `changed` at the end."""
        self.blockSignals(True)
        try:
            self._show_number("steps", self.steps_spin, config.steps)
            self._show_number("batch", self.batch_spin, config.batch_size)
            self._show_number("lr", self.lr_spin, config.lr)
        finally:
            self.blockSignals(False)
        self.set_task_fields(task)

    def set_values(self, task: TaskSpec, config: TrainConfig, model: ModelConfig, device: str) -> None:
        """Fill the form (no signals per field: one `changed` at the end); the rates come from the model."""
        self._model = (model.positional, model.max_len)
        self.set_task_fields(task)
        self.blockSignals(True)
        self._clamped = {}
        for key, box, value in (
            ("batch", self.batch_spin, config.batch_size),
            ("steps", self.steps_spin, config.steps),
            ("warmup", self.warmup_spin, config.warmup_steps),
            ("seed", self.seed_spin, config.seed),
            ("lr", self.lr_spin, config.lr),
            ("noam", self.noam_spin, config.noam_factor),
            ("smoothing", self.smoothing_spin, config.label_smoothing),
            ("beta1", self.beta1_spin, config.adam_beta1),
            ("dropout", self.dropout_spin, model.dropout),
            ("drop_path", self.drop_path_spin, model.drop_path),
        ):
            self._show_number(key, box, value)
        self.schedule_combo.setCurrentIndex(max(0, self.schedule_combo.findData(config.schedule)))
        names = [self.device_combo.itemText(i) for i in range(self.device_combo.count())]
        match = [n for n in names if n == device or n.split(":")[0] == device]
        self.device_combo.setCurrentText(match[0] if match else "cpu")
        self.blockSignals(False)
        self._on_schedule()
        self.changed.emit()

    def _show_number(self, key: str, box: QSpinBox | QDoubleSpinBox, value: float) -> None:
        """Show `value` in `box`, within its range (a stored recipe may exceed the form's), and note a clamp."""
        if isinstance(box, QSpinBox):
            box.setValue(min(max(int(value), box.minimum()), box.maximum()))
        else:
            box.setValue(min(max(value, box.minimum()), box.maximum()))
        self._clamped.pop(key, None)
        self._note_clamped(key, value, box.value())

    def _note_clamped(self, key: str, value: float, shown: float) -> None:
        """Say so when a box shows another number than the stored recipe's (past the form's range)."""
        if shown != value and not (isinstance(value, float) and math.isclose(shown, value)):
            self._clamped[key] = f"the stored recipe had {value:,}; out of range here, this run uses {shown:,}"

    def task_spec(self) -> TaskSpec:
        """The task as typed (raises ValueError when the lengths cross)."""
        return TaskSpec(
            self.task_combo.currentText(),  # the combo holds the registry's names (TaskSpec checks the name too)
            self.symbols_spin.value(),
            self.min_len_spin.value(),
            self.max_len_spin.value(),
            runs=self.runs_spin.value(),
            anchored=self.anchored_check.isChecked(),
        )

    def rates(self) -> dict[str, float]:
        """The training-only ModelConfig fields the training copy gets (they own no weights)."""
        return {"dropout": self.dropout_spin.value(), "drop_path": self.drop_path_spin.value()}

    def train_config(self) -> TrainConfig:
        return TrainConfig(
            batch_size=self.batch_spin.value(),
            steps=self.steps_spin.value(),
            lr=self.lr_spin.value(),
            schedule=self.schedule(),
            warmup_steps=self.warmup_spin.value(),
            noam_factor=self.noam_spin.value(),
            label_smoothing=self.smoothing_spin.value(),
            adam_beta1=self.beta1_spin.value(),
            seed=self.seed_spin.value(),
            device=self.device_combo.currentText(),
        )

    def validate(self, vocab_size: int, model_max_len: int, probe_problem: ProbeCheck = _no_probe_check) -> bool:
        """Cross-field checks against the current model; shows each problem next to its field. True when a run from
        scratch can start; `vocab_fits` says whether the current weights can go on training on the task too.
        probe_problem: what the probe text breaks of a task's rules for a model of that max_len ("": nothing)."""
        found = {key: "" for key in self.errors}
        lo, hi = self.min_len_spin.value(), self.max_len_spin.value()
        task: TaskSpec | None = None
        if lo > hi:
            found["max_len"] = f"must be at least the min length ({lo})"
        elif hi > max_source_len(model_max_len):
            found["max_len"] = f"the model handles at most {max_source_len(model_max_len)}"
        else:
            try:
                task = self.task_spec()
                task.check_fits(model_max_len)
            except ValueError as exc:  # lengths the task does not take (addition's odd ones), a target too long
                found["max_len"], task = str(exc), None
        self.vocab_fits = task is None or task.vocab_size <= vocab_size
        if not self.vocab_fits and task is not None:
            found["symbols"] = (
                f"{task.task} needs vocab_size {task.vocab_size} ({task.vocab_size - N_SPECIALS} symbols and "
                f"{N_SPECIALS} specials); the model has {vocab_size}: Train from scratch builds one that fits"
            )
        if self.schedule() == "noam" and self.warmup_spin.value() < 1:
            found["warmup"] = "Noam needs at least 1 warm-up step"
        found["probe"] = "" if task is None else probe_problem(self.probe_edit.text(), task, model_max_len)
        for key, text in found.items():  # an error in red; else a stored value the form could not take, in amber
            shown = text or self._clamped.get(key, "")
            self.errors[key].setText(shown)
            self.errors[key].setStyleSheet(f"color: {'#c62828' if text else WARNING_TEXT};")
            self.errors[key].setVisible(bool(shown))
        self.build_button.setVisible(bool(found["symbols"]))
        return not any(text for key, text in found.items() if key != "symbols")
