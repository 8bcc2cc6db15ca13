"""A checkpoint's extra data as one typed record: the task, the training recipe, the evaluation curves, the
attention movie, the recovery details and any other plain data, written to and read from the file in one place.

`extra_to_plain` gives the dict stored in the file; `read_extra` turns a stored dict back into the record after
every check (plain data, finite numbers, records that fit the model). The record is also a read-only mapping of
the stored dict, so code that shows or copies the extra data reads the same keys the file holds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from .checkpoint_records import check_known_extra, clean_extra, recipe_problem, stored_task
from .checkpoint_validation import CheckpointError, check_extra
from .config import ModelConfig
from .tasks import TaskSpec

__all__ = ["CheckpointExtra", "as_record", "extra_to_plain", "read_extra"]
log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=True)
class CheckpointExtra(Mapping[str, Any]):
    """What a checkpoint stores besides its weights and history; None means "not stored"."""

    task: TaskSpec | None = None  # the task the weights were trained on
    train_config: dict[str, Any] | None = None  # TrainConfig fields (unknown ones are ignored where it is read)
    eval_series: dict[str, list[Any]] | None = None  # the columns of checkpoint_records.EVAL_KEYS
    probe_snapshots: dict[str, Any] | None = None  # the attention movie: source, steps and maps of each kind
    polish_config: dict[str, Any] | None = None  # the shipped checkpoints' second training phase
    final_metrics: dict[str, Any] | None = None  # how the run that wrote the file ended
    recovery: dict[str, Any] | None = None  # where an unsaved training came from (the recovery files)
    other: dict[str, Any] = field(default_factory=dict)  # plain data under any other key, kept as it is
    # the TaskSpec fields a stored task named (None: all): a task of only some fields is written back as it was read
    task_fields: tuple[str, ...] | None = None

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> CheckpointExtra:
        """The record of a stored dict; a stored task that is not valid raises CheckpointError (no model checks)."""
        named = set(RECORD_KEYS)
        known = {key: value for key, value in data.items() if key in named and value is not None}
        if "task" in known:
            try:
                task = stored_task(known["task"])
            except (TypeError, ValueError) as exc:
                raise CheckpointError(str(exc)) from None
            partial = set(known["task"]) != set(asdict(task))
            known |= {"task": task, "task_fields": tuple(known["task"]) if partial else None}
        return cls(**known, other={key: value for key, value in data.items() if key not in named})

    def with_task(self, task: TaskSpec) -> CheckpointExtra:
        """The same record naming `task`: what a save writes for the weights it holds."""
        return replace(self, task=task, task_fields=None)

    def merged(self, newer: CheckpointExtra) -> CheckpointExtra:
        """This record with every record `newer` stores in place of its own (a training's curves over a file's)."""
        stored = {key: getattr(newer, key) for key in RECORD_KEYS if getattr(newer, key) is not None}
        if newer.task is not None:
            stored["task_fields"] = newer.task_fields
        return replace(self, **stored, other={**self.other, **newer.other})

    @cached_property
    def _plain(self) -> dict[str, Any]:
        return extra_to_plain(self)

    def __getitem__(self, key: str) -> Any:
        return self._plain[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._plain)

    def __len__(self) -> int:
        return len(self._plain)


def as_record(extra: Mapping[str, Any] | None) -> CheckpointExtra:
    """`extra` as the typed record; None: nothing stored. A plain dict has its task checked (CheckpointError when it
    is not valid) and is otherwise taken as it is: `read_extra` is what checks a file's data against its model."""
    return extra if isinstance(extra, CheckpointExtra) else CheckpointExtra.from_plain(extra or {})


RECORD_KEYS = tuple(f.name for f in fields(CheckpointExtra) if f.name not in ("other", "task_fields"))  # stored keys


def extra_to_plain(extra: CheckpointExtra) -> dict[str, Any]:
    """The dict a checkpoint file stores: each record under its key, left out when not stored."""
    out: dict[str, Any] = dict(extra.other)
    for key in RECORD_KEYS:
        value = getattr(extra, key)
        if isinstance(value, TaskSpec):
            value = {k: v for k, v in asdict(value).items() if extra.task_fields is None or k in extra.task_fields}
        if value is not None:
            out[key] = value
    return out


def read_extra(data: object, config: ModelConfig, name: str, *, loading: bool = True) -> CheckpointExtra:
    """The record of the extra data stored with (or about to be saved with) a model of `config`, every record checked.

    Problems raise CheckpointError prefixed by `name` (the file, or "not saving PATH"). A training recipe that is not
    valid is refused when saving; when loading it is left out with a warning in the log (earlier versions stored
    recipes this one refuses, seeds up to 2**64 - 1): the weights still load and the Trainer starts from defaults.
    """
    if loading and isinstance(data, dict):
        problem = recipe_problem(data.get("train_config"))
        if problem is not None:
            log.warning(
                "%s: its stored training recipe is not used (%s); the Trainer starts from its defaults", name, problem
            )
            data = {key: value for key, value in data.items() if key != "train_config"}
    plain = clean_extra(check_extra(data, name), name)
    check_known_extra(plain, config, name)
    return CheckpointExtra.from_plain(plain)
