"""Checkpoints: config, weights, training history and extras in one file, written atomically, loaded safely.

Loading is one straight line: read the file (checkpoint_files: file checks, then `torch.load(weights_only=True)`, so
a file can never run code), validate the payload (checkpoint_validation: format, configuration, weights and their
checksum; checkpoint_records: the history and the typed extra record), then hold what was read in a
Checkpoint that builds the model. Anything wrong with a file, or with a save, raises CheckpointError with a message a
person can act on; a failed save leaves the previous file untouched.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .checkpoint_files import MESSAGE_CHARS, first_line, read_payload, write_atomically
from .checkpoint_records import (
    MAX_HISTORY_ROWS,
    CheckpointExtra,
    check_history,
    extra_to_plain,
    read_extra,
    thin_history,
)
from .checkpoint_validation import CHECKSUM_KEY, FORMAT, VERSION, CheckpointError, check_payload, weights_digest
from .config import ModelConfig
from .inputs import decoder_input, encoder_input
from .model import Seq2SeqTransformer, build_model
from .tasks import TaskSpec
from .vocab import N_SPECIALS

__all__ = [
    "FORMAT",
    "MAX_HISTORY_ROWS",
    "MESSAGE_CHARS",
    "VERSION",
    "Checkpoint",
    "CheckpointError",
    "CheckpointExtra",
    "checkpoint_from",
    "load_checkpoint",
    "save_checkpoint",
]
log = logging.getLogger(__name__)


@dataclass
class Checkpoint:
    """What a checkpoint file holds. `extra` may be given as a plain dict: it is kept as its CheckpointExtra."""

    config: ModelConfig
    state_dict: dict[str, torch.Tensor]
    history: list[dict[str, float]] = field(default_factory=list)
    extra: CheckpointExtra = field(default_factory=CheckpointExtra)

    def __post_init__(self) -> None:
        if not isinstance(self.extra, CheckpointExtra):  # a stored dict: one record type from here on
            self.extra = CheckpointExtra.from_plain(self.extra)

    def build(self, device: torch.device | str = "cpu") -> Seq2SeqTransformer:
        """A model with these weights; a shape mismatch, or too little memory on `device`, raises CheckpointError."""
        model = build_model(self.config)
        try:
            model.load_state_dict(self.state_dict, strict=True)
        except RuntimeError as exc:
            raise CheckpointError(f"weights do not fit the stored configuration: {first_line(exc)}") from exc
        _check_outputs_finite(model)
        try:
            return model.to(device)
        except (RuntimeError, MemoryError) as exc:  # e.g. CUDA out of memory
            raise CheckpointError(f"the model does not fit on {device}: {first_line(exc)}") from exc

    @property
    def task(self) -> TaskSpec:
        """The task the weights were trained on; the default TaskSpec when none was stored."""
        return self.extra.task or TaskSpec()


def _check_outputs_finite(model: Seq2SeqTransformer) -> None:
    """One tiny pass (a one-symbol source): finite weights can still overflow (every matrix times 1e30 does), and
    such a model would feed infinities to sampling, gradients and every view; it is refused as the file's fault."""
    symbol = min(N_SPECIALS, model.config.vocab_size - 1)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(torch.tensor([encoder_input([symbol], anchored=True)]), torch.tensor([decoder_input([symbol])]))
    finally:
        model.train(was_training)
    if not bool(torch.isfinite(out.log_probs).all()):
        raise CheckpointError("its weights overflow: the model's outputs are not finite numbers")


def save_checkpoint(
    path: str | os.PathLike,
    model: Seq2SeqTransformer,
    *,
    history: list[dict[str, float]] | None = None,
    extra: CheckpointExtra | Mapping[str, Any] | None = None,
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
    given = extra_to_plain(extra) if isinstance(extra, CheckpointExtra) else dict(extra or {})
    record = read_extra(given, model.config, refused, loading=False)
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": model.config.to_dict(),
        "state_dict": state,
        CHECKSUM_KEY: weights_digest(state),
        "history": check_history(thin_history(list(history or []), path.name), refused),
        "extra": extra_to_plain(record),
    }
    write_atomically(path, payload)
    log.info("saved checkpoint %s", path)
    return path


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Read, validate, then hold a checkpoint, without executing anything from it or building anything oversized."""
    path = Path(path)
    return checkpoint_from(read_payload(path), path.name)  # file checks, then torch.load(weights_only=True)


def checkpoint_from(payload: object, name: str) -> Checkpoint:
    """Validate a read payload (load_checkpoint's second half), then hold it; `name` names the file in errors."""
    config, state, history, stored_extra = check_payload(payload, name)  # format, config, weights, checksum
    extra = read_extra(stored_extra, config, name)  # plain data, records that fit the model
    return Checkpoint(config, state, check_history(history, name), extra)
