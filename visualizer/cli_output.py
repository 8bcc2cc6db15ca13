"""What the headless CLI writes: strict JSON lines, and checkpoints saved somewhere even when --out fails."""
from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO


def json_line(data: dict[str, Any]) -> str:
    """One line of valid JSON: non-finite numbers become null, and a "notes" entry says which ones were."""
    clean, notes = {}, []
    for key, value in data.items():
        if isinstance(value, float) and not math.isfinite(value):
            clean[key] = None
            notes.append(f"{key} was {value} (not a JSON number), written as null")
        else:
            clean[key] = value
    if notes:
        clean["notes"] = notes
    return json.dumps(clean, allow_nan=False) + "\n"


def write_json_line(stream: TextIO, data: dict[str, Any]) -> None:
    stream.write(json_line(data))


def fallback_path(out: Path) -> Path:
    """A file in the temp folder for a model that could not be written to `out` (never overwrites one)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.gettempdir()) / f"attention-playground-{out.stem or 'model'}-{stamp}-{time.time_ns() % 10**6}.pt"


def save_or_fall_back(out: Path, save: Any) -> tuple[Path | None, str]:
    """Save with `save(path)` to `out`, else to a temp-folder file; returns (where it went, what went wrong).

    `save` raises CheckpointError on failure; the previous file at `out` is never touched by a failed save.
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
