"""A checkpoint's training history and its extra data as one typed record (the task, the training recipe, the
evaluation curves, the attention movie, the recovery details and any other plain data), checked against the model
they describe and written to and read from the file in one place.

Numbers in them must be finite and fit 64 bits (a step of inf or 10**400 overflows every conversion downstream);
non-finite numbers elsewhere in the extra data become None. The history keeps at most MAX_HISTORY_ROWS rows, thinned
evenly with the first and last kept, when saved and when loaded, so curves stay quick to read and draw.
`extra_to_plain` gives the dict stored in the file; `read_extra` turns a stored dict back into the record after
every check (plain data, finite numbers, records that fit the model). The record is also a read-only mapping of
the stored dict, so code that shows or copies the extra data reads the same keys the file holds.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from typing import Any

import torch

from .checkpoint_validation import WEIGHT_DTYPES, CheckpointError, check_extra, find_non_plain, fits_64_bits, short_repr
from .config import ModelConfig
from .tasks import TaskSpec
from .train_config import TrainConfig

log = logging.getLogger(__name__)
MAX_HISTORY_ROWS = 10_000  # rows a checkpoint keeps (default runs record 300; continued runs add up)
EVAL_KEYS = ("steps", "loss", "token_accuracy", "exact_match")  # the columns of extra["eval_series"]
SNAPSHOT_KINDS = ("encoder_self", "decoder_self", "cross")  # the maps of each frame of extra["probe_snapshots"]
SNAPSHOT_FIELDS = ("values", "valid", "query_labels", "key_labels")


def number_problem(value: object) -> str | None:
    """Why `value` is not a finite number that fits 64 bits, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"a {type(value).__name__}, not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value}, not a finite number"
    if not fits_64_bits(value):
        return f"{short_repr(value)}, larger than 2**63"
    return None


def kept_rows(n: int) -> range | list[int]:
    """Which of n history rows a checkpoint keeps: at most MAX_HISTORY_ROWS, evenly spaced, first and last included."""
    if n <= MAX_HISTORY_ROWS:
        return range(n)
    return [i * (n - 1) // (MAX_HISTORY_ROWS - 1) for i in range(MAX_HISTORY_ROWS)]


def thin_history(rows: list, name: str) -> list:
    """At most MAX_HISTORY_ROWS rows, evenly spaced, the first and the last included."""
    n = len(rows)
    if n <= MAX_HISTORY_ROWS:
        return rows
    log.info(
        "%s: keeping %d of its %d training-history rows (evenly spaced, first and last included)",
        name,
        MAX_HISTORY_ROWS,
        n,
    )
    return [rows[i] for i in kept_rows(n)]


def check_history(history: object, name: str) -> list[dict[str, float]]:
    """A list of rows, each a dict of metric name -> finite number (what the trainer records per step), thinned."""
    if not isinstance(history, list):
        raise CheckpointError(f"{name}: its training history must be a list of rows, got {type(history).__name__}")
    history = thin_history(history, name)
    for i, row in enumerate(history):
        if not isinstance(row, dict):
            raise CheckpointError(f"{name}: row {i} of its training history must be a dict, got {type(row).__name__}")
        for key, value in row.items():
            problem = number_problem(value)
            if not isinstance(key, str) or problem and problem.endswith("not a number"):
                raise CheckpointError(
                    f"{name}: row {i} of its training history has a non-numeric entry "
                    f"{short_repr(key)}: {type(value).__name__}"
                )
            if problem:
                raise CheckpointError(f"{name}: row {i} of its training history has {short_repr(key)} = {problem}")
    return list(history)


def clean_non_finite(value: Any, memo: dict[int, Any] | None = None) -> tuple[Any, int]:
    """A copy of plain data with every NaN or infinite float replaced by None, and how many were replaced.

    Containers are copied (tensors and other scalars shared), each once however often it is referred to, so a
    crafted web of shared or self-referring containers is walked in linear time. check_extra bounds the depth.
    """
    memo = {} if memo is None else memo
    if isinstance(value, float):
        return (None, 1) if not math.isfinite(value) else (value, 0)
    if not isinstance(value, (list, tuple, dict)):
        return value, 0
    if id(value) in memo:
        return memo[id(value)], 0
    count = 0
    if isinstance(value, dict):
        out: Any = memo.setdefault(id(value), {})
        for key, item in value.items():
            out[key], n = clean_non_finite(item, memo)
            count += n
        return out, count
    if isinstance(value, list):
        out = memo.setdefault(id(value), [])
        for item in value:
            cleaned, n = clean_non_finite(item, memo)
            out.append(cleaned)
            count += n
        return out, count
    items = [clean_non_finite(item, memo) for item in value]
    memo[id(value)] = out = tuple(item for item, _ in items)  # a tuple cannot hold itself: memo it once built
    return out, sum(n for _, n in items)


def clean_extra(extra: dict[str, Any], name: str) -> dict[str, Any]:
    """`extra` with non-finite numbers as None, wherever they are nested (logged when there were any)."""
    cleaned, count = clean_non_finite(extra)
    if count:
        log.info("%s: %d non-finite numbers in its extra data are kept as None", name, count)
    return cleaned


def check_known_extra(extra: dict[str, Any], config: ModelConfig, name: str) -> None:
    """The records the app reads back from `extra` must be usable with the model of `config`."""
    problem = recipe_problem(extra.get("train_config"))
    if problem:
        raise CheckpointError(f"{name}: its training recipe is invalid: {problem}")
    try:
        _check_task(extra.get("task"), config)
        _check_eval_series(extra.get("eval_series"))
        _check_snapshots(extra.get("probe_snapshots"), config)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{name}: {exc}") from None


def stored_task(stored: object) -> TaskSpec:
    """The task a checkpoint's extra["task"] describes (None: the default); Type/ValueError say what is wrong."""
    if stored is None:
        return TaskSpec()
    if not isinstance(stored, dict):
        raise TypeError(f"the checkpoint's task must be a dict of TaskSpec fields, got {type(stored).__name__}")
    unknown = sorted(set(stored) - {f.name for f in fields(TaskSpec)})
    if unknown:
        raise ValueError(f"the checkpoint's task has unknown fields {unknown[:5]}")
    blank = sorted(key for key, value in stored.items() if value is None)  # NaN and infinities are read as None
    if blank:
        raise ValueError(f"the checkpoint's task has {blank[0]} = NaN or infinity (or nothing), not a number")
    try:
        return TaskSpec(**stored)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the checkpoint's task is invalid: {exc}") from None


def _check_task(stored: object, config: ModelConfig) -> None:
    """The stored task must fit the model: its symbols in the vocabulary, its longest source in the positions."""
    task = stored_task(stored)
    try:
        task.check_vocab(config.vocab_size)
        task.check_fits(config.max_len)
    except ValueError as exc:
        raise ValueError(f"the checkpoint's task does not fit its model: {exc}") from None


def recipe_problem(stored: object) -> str | None:
    """Why a stored training recipe is unusable, or None: its known fields must be plain, valid TrainConfig values
    (unknown ones are ignored where it is read)."""
    if stored is None:
        return None
    if not isinstance(stored, dict):
        return f"it must be a dict, got {type(stored).__name__}"
    problem = find_non_plain(stored, "train_config")
    if problem:
        return f"it {problem}"
    try:
        TrainConfig.from_stored(stored)
    except (TypeError, ValueError, RuntimeError) as exc:
        return str(exc)[:200]
    return None


def _check_eval_series(data: object) -> None:
    """Four columns of equal length: integer steps and finite numbers (None where a value was not finite)."""
    if data is None:
        return
    if not isinstance(data, dict) or any(not isinstance(data.get(key), (list, tuple)) for key in EVAL_KEYS):
        raise ValueError(f"its evaluation curves must be a dict of the lists {list(EVAL_KEYS)}")
    if len({len(data[key]) for key in EVAL_KEYS}) != 1:
        raise ValueError("its evaluation curves have columns of different lengths")
    for key in EVAL_KEYS:
        for i, value in enumerate(data[key]):
            problem = "" if value is None and key != "steps" else number_problem(value)
            if problem is None and key == "steps" and not isinstance(value, int):
                problem = f"{short_repr(value)}, not a whole step"
            if problem:
                raise ValueError(f"its evaluation curves have {key}[{i}] = {problem}")


def _check_snapshots(data: object, config: ModelConfig) -> None:
    """The attention movie: a source, its steps, and for every kind of map a stack shaped for this model."""
    if data is None or data == {}:
        return
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("source"), str)
        or not isinstance(data.get("steps"), (list, tuple))
        or not isinstance(data.get("kinds"), dict)
    ):
        raise TypeError("its attention movie must be a dict with a source, a list of steps and the maps' kinds")
    for i, step in enumerate(data["steps"]):
        if not isinstance(step, int) or number_problem(step):
            raise ValueError(f"its attention movie has step {i} = {short_repr(step)}, not a whole number of steps")
    kinds = data["kinds"]
    if set(kinds) != set(SNAPSHOT_KINDS):
        raise ValueError(
            f"its attention movie has the kinds {sorted(map(str, kinds))[:5]}, expected {list(SNAPSHOT_KINDS)}"
        )
    frames = len(data["steps"])
    layers = {
        "encoder_self": config.n_encoder_layers,
        "decoder_self": config.n_decoder_layers,
        "cross": config.n_decoder_layers,
    }
    sizes = {kind: _snapshot_size(kinds[kind], kind, (frames, layers[kind], config.n_heads)) for kind in SNAPSHOT_KINDS}
    src, tgt = sizes["encoder_self"][0], sizes["decoder_self"][0]
    wanted = {"encoder_self": (src, src), "decoder_self": (tgt, tgt), "cross": (tgt, src)}
    for kind, size in sizes.items():
        if size != wanted[kind] or max(size) > config.max_len:
            raise ValueError(
                f"its attention movie's {kind} maps are {size[0]} x {size[1]}, which does not fit "
                f"the other maps or the model's {config.max_len} positions"
            )


def _snapshot_size(entry: object, kind: str, lead: tuple[int, int, int]) -> tuple[int, int]:
    """(queries, keys) of one kind's stack (frames, layers, heads, queries, keys), its mask and labels checked."""
    where = f"its attention movie's {kind} maps"
    if not isinstance(entry, dict) or any(key not in entry for key in SNAPSHOT_FIELDS):
        raise ValueError(f"{where} must be a dict of {list(SNAPSHOT_FIELDS)}")
    values, valid = entry["values"], entry["valid"]
    if (
        not isinstance(values, torch.Tensor)
        or values.dtype not in WEIGHT_DTYPES
        or values.dim() != 5
        or tuple(values.shape[:3]) != lead
    ):
        shape = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
        raise ValueError(f"{where} have shape {shape}; this model needs {lead} x queries x keys of floats")
    size = (int(values.shape[3]), int(values.shape[4]))
    if not isinstance(valid, torch.Tensor) or valid.dtype != torch.bool or tuple(valid.shape) != size:
        raise ValueError(f"{where} need a boolean mask of shape {size}")
    for key, n in (("query_labels", size[0]), ("key_labels", size[1])):
        labels = entry[key]
        if not isinstance(labels, (list, tuple)) or len(labels) != n or not all(isinstance(t, str) for t in labels):
            raise ValueError(f"{where} need {n} {key.replace('_', ' ')} (strings)")
    return size


__all__ = ["CheckpointExtra", "as_record", "extra_to_plain", "read_extra"]


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
