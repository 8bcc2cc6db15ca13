"""What the headless CLI writes: strict JSON lines, and checkpoints saved somewhere even when --out fails."""

from __future__ import annotations

import json
import math
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from visualizer.cli.common import ArgumentError, Interrupted
from visualizer.headless.interrupts import said_for


def json_line(data: dict[str, Any]) -> str:
    """One line of valid JSON: non-finite numbers, at any depth, become null, and "notes" says which ones were."""
    notes: list[str] = []
    clean = _finite_json(data, "", notes)
    if notes:
        clean["notes"] = [*clean.get("notes", []), *notes] if isinstance(clean.get("notes"), list) else notes
    return json.dumps(clean, allow_nan=False) + "\n"


@contextmanager
def kept_if_interrupted(kept: str) -> Iterator[None]:
    """Once a verb has written its file: a quit signal from here on ends the command saying so (`kept`, e.g. "the
    page was written to x.html"), not that nothing was written."""
    try:
        yield
    except KeyboardInterrupt as exc:
        raise Interrupted(kept, said=said_for(exc)) from None


def _finite_json(value: Any, where: str, notes: list[str]) -> Any:
    """`value` with every non-finite float replaced by None; each replacement is noted with its path (a.b[2])."""
    if isinstance(value, float) and not math.isfinite(value):
        notes.append(f"{where} was {value} (not a JSON number), written as null")
        return None
    if isinstance(value, dict):
        return {k: _finite_json(v, f"{where}.{k}" if where else str(k), notes) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_json(v, f"{where}[{i}]", notes) for i, v in enumerate(value)]
    return value


def fallback_path(out: Path) -> Path:
    """A file in the temp folder for a model that could not be written to `out` (never overwrites one)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"attention-playground-{out.stem or 'model'}-{stamp}-{time.time_ns() % 10**6}.pt"
    return Path(tempfile.gettempdir()) / name


def check_out_before_work(out: Path) -> None:
    """Refuse an `out` that names a folder, pipe or device before any work: every save to it would be refused.

    Raises ArgumentError (exit 2) naming what is there. Other problems (a missing folder, no permission) are left
    to the save itself, which can still keep the model in a spare file.
    """
    from core_model.atomic_files import RefusedTarget, real_target

    try:
        real_target(out)
    except RefusedTarget as exc:
        raise ArgumentError(f"--out: {exc}") from None
    except OSError:
        pass
    folder = next((p for p in Path(out).absolute().parents if p.exists()), None)  # the deepest one there now
    if folder is not None and not folder.is_dir():  # its folders cannot be made: the save would end in a spare file
        raise ArgumentError(f"--out: {folder} is a file, not a folder")


def save_or_fall_back(out: Path, save: Any) -> tuple[Path | None, str]:
    """Save with `save(path)` to `out`, else to a temp-folder file; returns (where it went, what went wrong).

    `save` raises CheckpointError on failure, including a refused `out` (a folder, pipe or device: see
    core_model.atomic_files); the previous file at `out` is never touched by a failed save, and the message
    always names the spare file the model went to instead.
    """
    from core_model.checkpoint import CheckpointError

    try:
        save(out)
        return out, ""
    except CheckpointError as exc:
        problem = str(exc)
    spare = fallback_path(out)
    try:
        save(spare)
    except CheckpointError as exc:
        return None, f"{problem}; saving to {spare} failed as well ({exc}); nothing was written"
    return spare, f"{problem}; the model was saved to {spare} instead"
