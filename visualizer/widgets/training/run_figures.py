"""The run's figures under the Trainer's buttons: the progress bar, speed, elapsed time and time left."""

from __future__ import annotations

from PySide6.QtWidgets import QGridLayout, QLabel, QProgressBar, QWidget

from visualizer.state.snapshots import ProgressSnapshot

IDLE_FORMAT, RUN_FORMAT, STARTING_FORMAT = "not training", "step %v / %m", "starting…"
NO_SPEED, NO_ETA = "– tokens/s", "ETA –"


class RunFigures(QWidget):
    """Progress bar over speed, elapsed and ETA; speed and time left only while a run is going (elapsed stays)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.progress_bar = QProgressBar()
        self.speed_label, self.elapsed_label, self.eta_label = QLabel(NO_SPEED), QLabel("elapsed –"), QLabel(NO_ETA)
        self.show_idle()  # until a run (or a loaded history) gives it steps
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)  # laid out as if the grid sat in the column itself
        grid.addWidget(self.progress_bar, 0, 0, 1, 3)
        for col, label in enumerate((self.speed_label, self.elapsed_label, self.eta_label)):
            grid.addWidget(label, 1, col)

    def show_idle(self) -> None:
        self.progress_bar.setFormat(IDLE_FORMAT)
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)

    def start(self, total: int) -> None:
        """A run of `total` steps begins: "starting…" until its first step is reported (building the model and the
        first batch take a moment)."""
        self.progress_bar.setFormat(STARTING_FORMAT)
        self.progress_bar.setRange(0, total)
        self.progress_bar.setValue(0)

    def show_progress(self, progress: ProgressSnapshot | None, running: bool) -> None:
        """The latest report; a late one after Stop (running False) must not bring the speed and ETA back."""
        if progress is None:  # a run going on has not reported a step yet: it is starting, not idle
            if running:
                self.progress_bar.setFormat(STARTING_FORMAT)
            else:
                self.show_idle()
            return
        self.progress_bar.setFormat(RUN_FORMAT)
        self.progress_bar.setRange(0, progress.total)
        self.progress_bar.setValue(progress.step)
        self.elapsed_label.setText(f"elapsed {_clock(progress.elapsed_s)}")
        if running:
            self.speed_label.setText(f"{progress.tokens_per_s:,.0f} tokens/s")
            self.eta_label.setText(f"ETA {_clock(progress.eta_s)}")

    def clear_rates(self) -> None:
        """No run is going on: no speed, no time left (elapsed stays: the run's own time)."""
        self.speed_label.setText(NO_SPEED)
        self.eta_label.setText(NO_ETA)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
