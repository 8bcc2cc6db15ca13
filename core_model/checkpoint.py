"""Checkpoints: config, weights, training history and extras in one file, written atomically, loaded safely.

Loading uses `torch.load(weights_only=True)`, so a file can never run code; every field is then validated
(checkpoint_validation, checkpoint_records) before anything is built, and the weights are compared with the
checksum stored when they were saved (checkpoint_checksum). Anything wrong with a file, or with a save, raises
CheckpointError with a message a person can act on; a failed save leaves the previous file untouched.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .checkpoint_checksum import CHECKSUM_KEY, weights_digest
from .checkpoint_files import MESSAGE_CHARS, first_line, read_payload, write_atomically
from .checkpoint_records import (
    MAX_HISTORY_ROWS,
    check_history,
    check_known_extra,
    clean_extra,
    stored_task,
    thin_history,
    without_unusable_recipe,
)
from .checkpoint_validation import FORMAT, VERSION, CheckpointError, check_extra, check_payload
from .config import ModelConfig
from .model import Seq2SeqTransformer, build_model
from .tasks import TaskSpec

__all__ = [
    "FORMAT",
    "MAX_HISTORY_ROWS",
    "MESSAGE_CHARS",
    "VERSION",
    "Checkpoint",
    "CheckpointError",
    "load_checkpoint",
    "save_checkpoint",
]
log = logging.getLogger(__name__)


@dataclass
class Checkpoint:
    """What a checkpoint file holds. `extra` is for plain data only (numbers, strings, lists, dicts, tensors)."""

    config: ModelConfig
    state_dict: dict[str, torch.Tensor]
    history: list[dict[str, float]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def build(self, device: torch.device | str = "cpu") -> Seq2SeqTransformer:
        """A model with these weights; a shape mismatch, or too little memory on `device`, raises CheckpointError."""
        model = build_model(self.config)
        try:
            model.load_state_dict(self.state_dict, strict=True)
        except RuntimeError as exc:
            raise CheckpointError(f"weights do not fit the stored configuration: {first_line(exc)}") from exc
        try:
            return model.to(device)
        except (RuntimeError, MemoryError) as exc:  # e.g. CUDA out of memory
            raise CheckpointError(f"the model does not fit on {device}: {first_line(exc)}") from exc

    @property
    def task(self) -> TaskSpec:
        """The task the weights were trained on (`extra["task"]`); the default TaskSpec when none was stored.

        A stored description that is not a dict, has unknown keys or invalid values raises CheckpointError.
        """
        try:
            return stored_task(self.extra.get("task"))
        except (TypeError, ValueError) as exc:
            raise CheckpointError(str(exc)) from exc


def save_checkpoint(
    path: str | os.PathLike,
    model: Seq2SeqTransformer,
    *,
    history: list[dict[str, float]] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write atomically (temporary next to `path`, fsync, rename); every failure raises CheckpointError.

    Non-finite weights, non-plain extras and an invalid recipe are refused before writing, and a written file
    whose history and extra data exceed the size a checkpoint may hold before it replaces anything: the file could
    not be loaded back. The history keeps at most MAX_HISTORY_ROWS rows (evenly thinned); non-finite numbers in
    `extra` are written as None.
    """
    path = Path(path)
    state = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()}
    for key, value in state.items():
        bad = int((~torch.isfinite(value)).sum()) if value.is_floating_point() else 0
        if bad:
            raise CheckpointError(f"not saving {path}: weight {key} has {bad} non-finite values (NaN or infinity)")
    refused = f"not saving {path}"
    extra = clean_extra(check_extra(dict(extra or {}), refused), path.name)
    check_known_extra(extra, model.config, refused)
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": model.config.to_dict(),
        "state_dict": state,
        CHECKSUM_KEY: weights_digest(state),
        "history": check_history(thin_history(list(history or []), path.name), refused),
        "extra": extra,
    }
    write_atomically(path, payload)
    log.info("saved checkpoint %s", path)
    return path


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Read and validate a checkpoint without executing anything from it or building anything oversized.

    A stored training recipe that is not valid (files of earlier versions) is left out, with a warning in the log:
    the weights still load.
    """
    path = Path(path)
    payload = without_unusable_recipe(read_payload(path), path.name)
    config, state, history, extra = check_payload(payload, path.name)
    extra = clean_extra(extra, path.name)
    check_known_extra(extra, config, path.name)
    return Checkpoint(config, state, check_history(history, path.name), extra)
