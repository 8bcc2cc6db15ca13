"""Find shipped data files whether the app runs installed or from a source checkout."""
from __future__ import annotations

from pathlib import Path

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
