"""Checkpoints: config, weights, training history and extras in one file, written atomically, loaded safely.

Loading uses `torch.load(weights_only=True)`, so a file can never run code; anything wrong with a file raises
CheckpointError with a message a person can act on.
"""
from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch

from .config import ModelConfig
from .model import Seq2SeqTransformer, build_model
from .tasks import TaskSpec

log = logging.getLogger(__name__)
FORMAT = "attention-playground-checkpoint"
VERSION = 1
MESSAGE_CHARS = 300  # longest excerpt of a library's error message quoted back to the user


class CheckpointError(Exception):
    """A checkpoint could not be written or read: corrupt, truncated, mismatched or unsafe."""


@dataclass
class Checkpoint:
    """What a checkpoint file holds. `extra` is for plain data only (numbers, strings, lists, dicts, tensors)."""

    config: ModelConfig
    state_dict: dict[str, torch.Tensor]
    history: list[dict[str, float]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def build(self, device: torch.device | str = "cpu") -> Seq2SeqTransformer:
        """A model with these weights; a shape mismatch raises CheckpointError."""
        model = build_model(self.config)
        try:
            model.load_state_dict(self.state_dict, strict=True)
        except RuntimeError as exc:
            raise CheckpointError(f"weights do not fit the stored configuration: {_first_line(exc)}") from exc
        return model.to(device)

    @property
    def task(self) -> TaskSpec:
        """The task the weights were trained on (`extra["task"]`); the default TaskSpec when none was stored.

        A stored description that is not a dict, has unknown keys or invalid values raises CheckpointError.
        """
        stored = self.extra.get("task")
        if stored is None:
            return TaskSpec()
        if not isinstance(stored, dict):
            kind = type(stored).__name__
            raise CheckpointError(f"the checkpoint's task must be a dict of TaskSpec fields, got {kind}")
        unknown = sorted(set(stored) - {f.name for f in fields(TaskSpec)})
        if unknown:
            raise CheckpointError(f"the checkpoint's task has unknown fields {unknown}")
        try:
            return TaskSpec(**stored)
        except ValueError as exc:
            raise CheckpointError(f"the checkpoint's task is invalid: {exc}") from exc


def save_checkpoint(path: str | os.PathLike, model: Seq2SeqTransformer, *, history: list[dict[str, float]] | None = None,
                    extra: dict[str, Any] | None = None) -> Path:
    """Write atomically: a temporary file in the same folder, fsync, then rename over `path`."""
    path = Path(path)
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "config": model.config.to_dict(),
        "state_dict": {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()},
        "history": list(history or []),
        "extra": dict(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(payload, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a checkpoint is an ordinary document
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise CheckpointError(f"could not write {path}: {exc.strerror or exc}") from exc
        raise
    log.info("saved checkpoint %s", path)
    return path


def load_checkpoint(path: str | os.PathLike) -> Checkpoint:
    """Read and validate a checkpoint without executing anything from it."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path} does not exist or is not a file")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for bad files; all mean "unreadable"
        text, full = _first_line(exc), str(exc)
        # every weights-only failure mentions `weights_only`; only a refused import (code) names a GLOBAL
        if "Unsupported global" in full or "GLOBAL" in full:
            raise CheckpointError(f"{path.name} contains code or objects that are not plain data; refusing to load it") from exc
        if "weights_only" in text:  # torch's advice to retry without weights_only would mislead here
            text = "its pickled data is malformed"
        raise CheckpointError(f"{path.name} is not a readable checkpoint (corrupt or truncated): {text}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path.name} is not an Attention Playground checkpoint")
    if payload.get("version") != VERSION:
        raise CheckpointError(f"{path.name} has checkpoint version {payload.get('version')}, expected {VERSION}")
    try:
        config = ModelConfig.from_dict(dict(payload["config"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path.name} has an invalid model configuration: {exc}") from exc
    state = payload.get("state_dict")
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path.name} has no valid weights")
    ckpt = Checkpoint(config, state, list(payload.get("history") or []), dict(payload.get("extra") or {}))
    _check_shapes(ckpt, path.name)
    return ckpt


def _check_shapes(ckpt: Checkpoint, name: str) -> None:
    expected = build_model(ckpt.config).state_dict()
    missing = sorted(set(expected) - set(ckpt.state_dict))
    unexpected = sorted(set(ckpt.state_dict) - set(expected))
    if missing or unexpected:
        raise CheckpointError(f"{name}: weights do not match its configuration (missing {missing[:3]}, unexpected {unexpected[:3]})")
    for key, tensor in expected.items():
        if ckpt.state_dict[key].shape != tensor.shape:
            raise CheckpointError(
                f"{name}: weight {key} has shape {tuple(ckpt.state_dict[key].shape)}, configuration needs {tuple(tensor.shape)}"
            )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:MESSAGE_CHARS] if text else type(exc).__name__
