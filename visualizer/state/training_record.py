"""What a run leaves behind: metric curves and probe snapshots, and their plain-data form inside a checkpoint."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from core_model.checkpoint_records import CheckpointExtra
from core_model.recipe import task_train_config
from core_model.training import StepMetrics, TrainConfig
from core_model.training_loop import MAX_SNAPSHOTS
from visualizer.state.snapshots import EvalSnapshot, KindMaps, ProbeSnapshot, ProgressSnapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MetricsView:
    """An immutable copy of the curves and the latest figures: what `TrainingState.metrics_changed` carries."""

    steps: tuple[int, ...] = ()
    loss: tuple[float, ...] = ()
    token_accuracy: tuple[float, ...] = ()
    lr: tuple[float, ...] = ()
    eval_steps: tuple[int, ...] = ()
    eval_loss: tuple[float, ...] = ()
    eval_token_accuracy: tuple[float, ...] = ()
    eval_exact_match: tuple[float, ...] = ()
    progress: ProgressSnapshot | None = None  # None: no run since the curves were loaded or cleared
    last_eval: EvalSnapshot | None = None
    snapshots: tuple[ProbeSnapshot, ...] = ()  # a previous run's probe snapshots: its role curves are greyed too


@dataclass
class MetricSeries:
    """Curves of one run as plain lists, appended to on the GUI thread (np.asarray at draw time)."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    token_accuracy: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    eval_steps: list[int] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)
    eval_token_accuracy: list[float] = field(default_factory=list)
    eval_exact_match: list[float] = field(default_factory=list)

    def add_steps(self, metrics: tuple[StepMetrics, ...]) -> None:
        for m in metrics:
            self.steps.append(m.step)
            self.loss.append(m.loss)
            self.token_accuracy.append(m.token_accuracy)
            self.lr.append(m.lr)

    def add_eval(self, snap: EvalSnapshot) -> None:
        self.eval_steps.append(snap.step)
        self.eval_loss.append(snap.loss)
        self.eval_token_accuracy.append(snap.token_accuracy)
        self.eval_exact_match.append(snap.exact_match)

    def view(self, progress: ProgressSnapshot | None = None, last_eval: EvalSnapshot | None = None) -> MetricsView:
        """Frozen copy for a signal: receivers never share the lists this series keeps appending to."""
        return MetricsView(
            tuple(self.steps),
            tuple(self.loss),
            tuple(self.token_accuracy),
            tuple(self.lr),
            tuple(self.eval_steps),
            tuple(self.eval_loss),
            tuple(self.eval_token_accuracy),
            tuple(self.eval_exact_match),
            progress,
            last_eval,
        )

    def eval_dict(self) -> dict[str, list]:
        return {
            "steps": list(self.eval_steps),
            "loss": list(self.eval_loss),
            "token_accuracy": list(self.eval_token_accuracy),
            "exact_match": list(self.eval_exact_match),
        }


def series_from_checkpoint(history: list[dict], extra: CheckpointExtra) -> MetricSeries:
    """Curves from a checkpoint's history rows and stored evaluations; malformed rows are skipped."""
    series = MetricSeries()
    for row in history:
        try:
            values = (int(row["step"]), float(row["loss"]), float(row["token_accuracy"]), float(row["lr"]))
        except (KeyError, TypeError, ValueError):
            continue
        series.steps.append(values[0])
        series.loss.append(values[1])
        series.token_accuracy.append(values[2])
        series.lr.append(values[3])
    _restore_eval(series, extra.eval_series)
    return series


def _restore_eval(series: MetricSeries, data: object) -> None:
    if not isinstance(data, dict):
        return
    try:
        columns = [list(map(float, data[k])) for k in ("steps", "loss", "token_accuracy", "exact_match")]
    except (KeyError, TypeError, ValueError):
        return
    if len({len(c) for c in columns}) == 1:
        series.eval_steps = [int(v) for v in columns[0]]
        series.eval_loss, series.eval_token_accuracy, series.eval_exact_match = columns[1:]


def record_to_extra(series: MetricSeries, snapshots: tuple[ProbeSnapshot, ...], config: dict | None) -> CheckpointExtra:
    """A checkpoint's extra records of a training: evaluations, the attention movie and the training recipe."""
    return CheckpointExtra(
        train_config=config, eval_series=series.eval_dict(), probe_snapshots=snapshots_to_plain(snapshots)
    )


def snapshots_to_plain(snapshots: tuple[ProbeSnapshot, ...] | list[ProbeSnapshot]) -> dict:
    """Stack same-shaped snapshots into tensors: data `torch.load(weights_only=True)` accepts."""
    if not snapshots:
        return {}
    first = snapshots[0]
    same = [
        s
        for s in snapshots
        if s.source == first.source
        and s.maps.keys() == first.maps.keys()
        and all(s.maps[k].values.shape == first.maps[k].values.shape for k in first.maps)
    ]
    kinds = {
        kind: {
            "values": torch.from_numpy(np.stack([s.maps[kind].values for s in same])),  # (N, L, H, Tq, Tk)
            "valid": torch.from_numpy(np.ascontiguousarray(m.valid)),
            "query_labels": list(m.query_labels),
            "key_labels": list(m.key_labels),
        }
        for kind, m in first.maps.items()
    }
    return {"source": first.source, "steps": [int(s.step) for s in same], "kinds": kinds}


def snapshots_from_plain(data: object) -> tuple[ProbeSnapshot, ...]:
    """Inverse of snapshots_to_plain; anything malformed gives an empty movie, never an exception."""
    if not isinstance(data, dict) or not data:
        return ()
    try:
        steps, kinds = [int(s) for s in data["steps"]], data["kinds"]
        parsed = {
            k: (
                np.asarray(v["values"], np.float32),
                np.asarray(v["valid"], bool),
                tuple(map(str, v["query_labels"])),
                tuple(map(str, v["key_labels"])),
            )
            for k, v in kinds.items()
        }
        if any(values.ndim != 5 or values.shape[0] != len(steps) for values, *_ in parsed.values()):
            raise ValueError("snapshot arrays do not match the steps")
        return tuple(
            ProbeSnapshot(
                step,
                str(data["source"]),
                {k: KindMaps(k, values[i].copy(), valid, q, kl) for k, (values, valid, q, kl) in parsed.items()},
            )
            for i, step in enumerate(steps)
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("ignoring stored attention snapshots: %s", exc)
        return ()


def shift_progress(snap: ProgressSnapshot, offset: int) -> ProgressSnapshot:
    """A continued run counts from 1; on the curves it goes on from `offset`, the last step shown before it."""
    if not offset:
        return snap
    steps = tuple(replace(m, step=m.step + offset) for m in snap.new_steps)
    return replace(snap, step=snap.step + offset, total=snap.total + offset, new_steps=steps)


def shift_history(rows: tuple[dict, ...] | list[dict], offset: int) -> list[dict]:
    """History rows of a continued run on the shared step axis."""
    return [{**row, "step": int(row["step"]) + offset} for row in rows] if offset else list(rows)


def last_step(history: list[dict], series: MetricSeries) -> int:
    """Where a continued run's step axis goes on from: the model's own history, else the curves shown."""
    try:
        return int(history[-1]["step"]) if history else (series.steps[-1] if series.steps else 0)
    except (KeyError, TypeError, ValueError):
        return series.steps[-1] if series.steps else 0


def keep_snapshot(kept: tuple[ProbeSnapshot, ...], snap: ProbeSnapshot) -> tuple[ProbeSnapshot, ...]:
    """Append a snapshot (replacing one of the same step); past MAX_SNAPSHOTS every other older one goes."""
    if kept and kept[-1].step == snap.step:
        kept = kept[:-1]  # e.g. the first probe of a continued run repeats the last one
    if len(kept) >= MAX_SNAPSHOTS:  # continued runs add up: thin the older part, keep the first
        kept = kept[::2]
    return (*kept, snap)


def stored_train_config(extra: CheckpointExtra, positional: str = "rope", task: str = "copy") -> TrainConfig:
    """The recipe a checkpoint stored with its model, else the task's default recipe for the model's positional
    kind (task_train_config)."""
    stored = extra.train_config
    try:
        return TrainConfig.from_stored(stored) if isinstance(stored, dict) else task_train_config(task, positional)
    except (TypeError, ValueError):
        return task_train_config(task, positional)


def finish_text(reason: str, step: int, total: int, offset: int, last_eval: EvalSnapshot | None) -> str:
    """The status line after a run: its own steps, and where it stands on the shared step axis."""
    scores = (
        f"; exact match {last_eval.exact_match:.1%}, token accuracy {last_eval.token_accuracy:.1%}" if last_eval else ""
    )
    if reason == "completed":
        return f"Finished {step} steps{f' (step {step + offset} in all)' if offset else ''}{scores}."
    return f"Stopped at step {step + offset} of {total + offset}{scores}."
