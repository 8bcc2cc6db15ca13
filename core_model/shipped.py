"""The trained checkpoints shipped in resources/, found whether the project runs installed or from a checkout.

One RoPE model per task of the library, and for copy, reverse and sort a sinusoidal one too (the Length lab's
pairs), each with the default ModelConfig except its encoding and, for a task with more symbols than the default
vocabulary, its vocabulary size; `resources/train_shipped.py` makes them (docs/SHIPPED_MODELS.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .checkpoint import Checkpoint, CheckpointError, checkpoint_from
from .checkpoint_files import read_payload
from .checkpoint_validation import stored_config
from .config import ModelConfig

# The registry's tasks that have trained models in resources/, each with its encodings, in the order their files
# are tried (the window offers every task; picking one loads its model from here). A model is named TASK_PE.pt.
SHIPPED_MODELS: dict[str, tuple[str, ...]] = {
    "copy": ("rope", "sinusoidal"),
    "reverse": ("rope", "sinusoidal"),
    "sort": ("rope", "sinusoidal"),
    "rotate1": ("rope",),
    "interleave": ("rope",),
    "dedupe": ("rope",),
    "running_sum": ("rope",),
    "rotate2": ("rope",),
    "copy_memory": ("rope",),
    "histogram": ("rope",),
    "most_frequent": ("rope",),
    "addition": ("rope",),
    "dyck_depth": ("rope",),
    "recall": ("rope",),
}
SHIPPED_TASKS: tuple[str, ...] = tuple(SHIPPED_MODELS)
SHIPPED_ENCODINGS = ("rope", "sinusoidal")
SHIPPED_CHECKPOINTS = tuple(f"{task}_{pe}.pt" for task, encodings in SHIPPED_MODELS.items() for pe in encodings)
DEFAULT_CHECKPOINT = SHIPPED_CHECKPOINTS[0]  # copy_rope.pt: the default ModelConfig uses RoPE, the default task copy
# Shipped for a lesson only, never a task's model: a small RoPE copy model trained without <bos> ... <eos> anchors,
# which cannot tell "00" from "0000" (resources/train_unanchored.py makes it)
LESSON_CHECKPOINTS = ("copy_rope_unanchored.pt",)


def shipped_for(task: str) -> tuple[str, ...]:
    """The file names of the shipped checkpoints trained on `task` (none for a task without shipped models)."""
    return tuple(f"{task}_{pe}.pt" for pe in SHIPPED_MODELS.get(task, ()))


def has_shipped(task: str) -> bool:
    """Whether a trained model for `task` is in resources/ (stats files: cheap, not per keystroke)."""
    return any(resource_path(name).is_file() for name in shipped_for(task))


def resource_path(name: str) -> Path:
    """Path of a file in resources/: the checkout's own folder next to core_model when there is one (so a second
    checkout or worktree uses its own files), else the installed package `playground_resources`."""
    local = Path(__file__).resolve().parent.parent / "resources" / name
    if local.exists():
        return local
    try:
        from importlib.resources import files

        candidate = Path(str(files("playground_resources") / name))
        if candidate.exists():
            return candidate
    except ModuleNotFoundError:
        pass
    return local


def find_shipped_checkpoint(config: ModelConfig, task: str | None = None) -> tuple[Path, Checkpoint] | None:
    """The shipped checkpoint whose architecture equals `config` (and trained on `task`, when given), or None.

    With a task, the vocabulary size is the task's to choose (a task with more symbols ships a larger one), so it
    alone does not count as a difference. Reads files: not on a GUI thread. The file named after the task and
    encoding is tried first, and the stored configuration and task decide, so a renamed or replaced file is never
    taken for another.
    """
    names = list(SHIPPED_CHECKPOINTS)
    if task is not None:  # only that task's files are read (each read holds the GIL a while: not the other tasks')
        preferred = f"{task}_{config.positional}.pt"
        names = sorted(shipped_for(task), key=lambda name: name != preferred)
    for name in names:
        path = resource_path(name)
        if not path.is_file():
            continue
        try:
            payload = read_payload(path)
            stored = stored_config(payload, name)  # the architecture first: validating a file builds its model
            wanted = config if task is None else replace(config, vocab_size=stored.vocab_size)
            if stored.architecture_differs(wanted):
                continue
            ckpt = checkpoint_from(payload, name)
        except CheckpointError:
            continue
        if task in (None, ckpt.task.task):
            return path, ckpt
    return None


def is_shipped(path: Path) -> bool:
    """True for a shipped checkpoint: those are read-only (saving over one means Save As)."""
    try:
        target = Path(path).resolve()
        return any(target == resource_path(name).resolve() for name in SHIPPED_CHECKPOINTS + LESSON_CHECKPOINTS)
    except OSError:
        return False
