"""Start-up loading: import torch, pick the device and load the shipped model, all off the GUI thread."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib._bootstrap import _DeadlockError  # type: ignore[attr-defined]  # the one type importlib raises for it
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
CORE_MODULES = ("core_model", "core_model.checkpoint", "core_model.device", "core_model.recipe", "core_model.shipped")
IMPORT_ATTEMPTS = 5  # a deadlock needs the other thread mid-import; each retry waits for it to finish that module


def import_beside_preload(names: Sequence[str], attempts: int = IMPORT_ATTEMPTS) -> None:
    """Import `names`, again when Python breaks an import deadlock with the preload thread.

    The preload thread imports the tabs' modules (and through them core_model) while this one imports core_model:
    when each holds a module the other needs next, importlib raises its _DeadlockError (a RuntimeError) in one of
    them. Nothing of the failed import stays half-made, and a second try waits on the other thread's module locks
    instead of deadlocking, since this thread then holds none.
    """
    for name in names:
        for attempt in range(attempts):
            try:
                importlib.import_module(name)
                break
            except _DeadlockError:
                if attempt == attempts - 1:
                    raise
                log.info("importing %s again after an import deadlock with the preload thread", name)


@dataclass
class StartupModel:
    """What the window needs to start: a model (trained if the checkpoint loaded) and what to tell the user."""

    model: Any  # Seq2SeqTransformer (typed loosely so this module imports without torch)
    task: Any  # TaskSpec
    device: Any  # torch.device
    origin: str
    history: list[dict] = field(default_factory=list)
    path: Path | None = None
    extra: Any = None  # CheckpointExtra: the record stored beside the weights (None: nothing stored)
    warning: str | None = None  # shown in the window when the shipped model could not be used


def load_startup_model(checkpoint: Path | None, device_name: str | None = None) -> StartupModel:
    """Load `checkpoint` (None: the shipped default), or fall back to an untrained default model with a warning."""
    import torch

    from visualizer.workers.torch_threads import BACKGROUND_THREADS, use_torch_threads

    use_torch_threads(BACKGROUND_THREADS)
    import_beside_preload(CORE_MODULES)
    from core_model import ModelConfig, build_model
    from core_model.checkpoint import CheckpointError, load_checkpoint
    from core_model.device import pick_device
    from core_model.recipe import recipe_task
    from core_model.shipped import DEFAULT_CHECKPOINT, resource_path
    from core_model.tasks import DEFAULT_TASK
    from visualizer.state.origins import FALLBACK, checkpoint_origin

    try:
        device = pick_device(device_name)
    except ValueError as exc:
        log.warning("%s; using the CPU", exc)
        device = torch.device("cpu")
    checkpoint = checkpoint if checkpoint is not None else resource_path(DEFAULT_CHECKPOINT)
    if checkpoint.is_file():
        try:
            ckpt = load_checkpoint(checkpoint)
            task = ckpt.task
            model = ckpt.build(device)
            _warm_up(model, device)
            return StartupModel(
                model,
                task,
                device,
                checkpoint_origin(checkpoint.name, shipped=True),
                ckpt.history,
                checkpoint,
                ckpt.extra,
            )
        except (CheckpointError, TypeError, ValueError) as exc:
            warning = f"Untrained model: the shipped checkpoint could not be read ({exc})"
    else:
        warning = f"Untrained model: no checkpoint at {checkpoint}"
    model = build_model(ModelConfig(), device=device, seed=0)
    _warm_up(model, device)
    task = recipe_task(
        DEFAULT_TASK, model.config.positional
    )  # what Train from scratch then trains on: the shipped recipe
    return StartupModel(model, task, device, FALLBACK, warning=warning)


def _warm_up(model, device) -> None:
    """One tiny forward pass here, so the first keystroke does not pay torch's one-off start-up costs."""
    import torch

    with torch.no_grad():
        src = torch.tensor([[3, 4, 5]], device=device)
        model.eval()(src, torch.tensor([[1, 3, 4]], device=device), return_attention=True, return_scores=True)
