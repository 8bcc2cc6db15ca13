"""Start-up loading: import torch, pick the device and load the shipped model, all off the GUI thread."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class StartupModel:
    """What the window needs to start: a model (trained if the checkpoint loaded) and what to tell the user."""

    model: Any  # Seq2SeqTransformer (typed loosely so this module imports without torch)
    task: Any  # TaskSpec
    device: Any  # torch.device
    origin: str
    history: list[dict] = field(default_factory=list)
    path: Path | None = None
    extra: dict = field(default_factory=dict)
    warning: str | None = None  # shown in the window when the shipped model could not be used


def load_startup_model(checkpoint: Path | None, device_name: str | None = None) -> StartupModel:
    """Load `checkpoint`, or fall back to an untrained default model with a warning."""
    import torch

    torch.set_num_threads(1)  # QT-NOTES: two threads starve the GUI thread on 2 cores
    from core_model import ModelConfig, build_model
    from core_model.checkpoint import CheckpointError, load_checkpoint
    from core_model.device import pick_device
    from core_model.tasks import TaskSpec

    try:
        device = pick_device(device_name)
    except ValueError as exc:
        log.warning("%s; using the CPU", exc)
        device = torch.device("cpu")
    if checkpoint is not None:
        try:
            ckpt = load_checkpoint(checkpoint)
            task = TaskSpec(**ckpt.extra["task"]) if isinstance(ckpt.extra.get("task"), dict) else TaskSpec()
            return StartupModel(ckpt.build(device), task, device, f"trained checkpoint {checkpoint.name}",
                                ckpt.history, checkpoint, ckpt.extra)
        except (CheckpointError, TypeError, ValueError) as exc:
            warning = f"Could not load the shipped model ({exc}). Starting with an untrained model."
        else:  # pragma: no cover - returned above
            warning = None
    else:
        warning = "No trained model was found. Starting with an untrained model: train it in the Trainer tab."
    model = build_model(ModelConfig(), device=device, seed=0)
    return StartupModel(model, TaskSpec(), device, "untrained", warning=warning)
