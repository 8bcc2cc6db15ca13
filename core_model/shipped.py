"""The trained checkpoints shipped in resources/, found whether the project runs installed or from a checkout."""
from __future__ import annotations

from pathlib import Path

from .checkpoint import Checkpoint, CheckpointError, load_checkpoint
from .config import ModelConfig

SHIPPED_CHECKPOINTS = ("copy_rope.pt", "copy_sinusoidal.pt")  # made by the README's "Shipped models" commands
DEFAULT_CHECKPOINT = SHIPPED_CHECKPOINTS[0]  # the default ModelConfig uses RoPE


def resource_path(name: str) -> Path:
    """Path of a file in resources/ (installed as the package `playground_resources`)."""
    try:
        from importlib.resources import files

        candidate = Path(str(files("playground_resources") / name))
        if candidate.exists():
            return candidate
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "resources" / name


def find_shipped_checkpoint(config: ModelConfig) -> tuple[Path, Checkpoint] | None:
    """The shipped trained checkpoint whose architecture equals `config`, or None (reads files: not on a GUI thread)."""
    for name in SHIPPED_CHECKPOINTS:
        path = resource_path(name)
        if not path.is_file():
            continue
        try:
            ckpt = load_checkpoint(path)
        except CheckpointError:
            continue
        if not ckpt.config.architecture_differs(config):
            return path, ckpt
    return None


def is_shipped(path: Path) -> bool:
    """True for a shipped checkpoint: those are read-only (saving over one means Save As)."""
    try:
        target = Path(path).resolve()
        return any(target == resource_path(name).resolve() for name in SHIPPED_CHECKPOINTS)
    except OSError:
        return False
