"""Models for the hub made off the GUI thread: the shipped trained model for an architecture and task, or a new,
untrained one. No Qt: the architecture controller runs these on its task slots."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from core_model import ModelConfig, Seq2SeqTransformer, build_model
from core_model.checkpoint import Checkpoint, CheckpointError
from core_model.shipped import find_shipped_checkpoint

log = logging.getLogger(__name__)
_BUILDING = threading.Lock()  # one build at a time: a seeded build forks torch's global generator


@dataclass(frozen=True)
class BuiltModel:
    """A model ready for the hub, made off the GUI thread: the shipped one for the architecture, or a new one."""

    model: Seq2SeqTransformer
    shipped: tuple[Path, Checkpoint] | None  # None: untrained


def build_for(
    config: ModelConfig,
    task: str,
    device: torch.device,
    wanted: Callable[[], bool] = lambda: True,
    shipped_only: bool = False,
) -> BuiltModel | None:
    """The shipped trained model for `config` and `task` when there is one, else a new untrained one (seed 0), or
    None with `shipped_only`; slow, no Qt. None too when `wanted()` says, once this build's turn comes, that a newer
    request replaced it.
    """
    with _BUILDING:
        return _build(config, task, device, shipped_only) if wanted() else None


def _build(config: ModelConfig, task: str, device: torch.device, shipped_only: bool) -> BuiltModel | None:
    found = find_shipped_checkpoint(config, task)
    if found is not None:
        path, ckpt = found
        try:
            return BuiltModel(ckpt.build(device), found)  # the task was checked when the file was read
        except CheckpointError as exc:
            log.warning("the shipped model %s could not be built: %s", path.name, exc)
    return None if shipped_only else BuiltModel(build_model(config, seed=0).to(device).eval(), None)
