"""What a training run reports, kept on the model's step axis: curves, progress, last evaluation, probe snapshots.

A mixin of TrainingState (as CheckpointRecord is): the record of one model's training, apart from the commands that
start and stop runs. The curves describe one model state and are forgotten when another model takes the hub.
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Slot

from visualizer.state.snapshots import EvalSnapshot, ProbeSnapshot, ProgressSnapshot
from visualizer.state.training_record import MetricSeries, MetricsView, keep_snapshot, shift_progress


class RunReports:
    """TrainingState's side that records what the worker reports and forgets it when another model arrives."""

    @property
    def snapshots(self) -> tuple[ProbeSnapshot, ...]:  # an immutable tuple: share it freely
        return self._snapshots

    @property
    def metrics(self) -> MetricsView:
        """The curves and latest figures as an immutable copy."""
        return self.series.view(self.progress, self.last_eval)

    def clear_previous(self) -> None:
        self.previous = None
        self.previous_changed.emit(None)

    @Slot(object)
    def _on_progress(self, snap: ProgressSnapshot) -> None:
        self.progress = snap = shift_progress(snap, self._offset)
        self.series.add_steps(snap.new_steps)
        self._emit_metrics()

    @Slot(object)
    def _on_evaluated(self, snap: EvalSnapshot) -> None:
        self.last_eval = snap = replace(snap, step=snap.step + self._offset) if self._offset else snap
        self.series.add_eval(snap)
        self._emit_metrics()

    @Slot(object)
    def _on_probe(self, snap: ProbeSnapshot) -> None:
        snap = replace(snap, step=snap.step + self._offset) if self._offset else snap
        self._snapshots = keep_snapshot(self._snapshots, snap)
        self.snapshots_changed.emit(self._snapshots)

    def _emit_metrics(self) -> None:
        self.metrics_changed.emit(self.metrics)

    def _clear(self) -> None:
        self.series, self.progress, self.last_eval, self._snapshots = MetricSeries(), None, None, ()
        self._emit_metrics()
        self.snapshots_changed.emit(self._snapshots)

    @Slot()
    def _on_hub_model_changed(self) -> None:
        """Curves and snapshots describe one model: forget them when another model replaces it."""
        if self.busy or self.hub.generation == self._generation:
            return
        self._generation = self.hub.generation
        self._clear()
        if not self._replacing:  # a from-scratch start replaces the model itself and keeps the form as it is
            self.previous = None
            self.previous_changed.emit(None)
            self.model_replaced.emit()
