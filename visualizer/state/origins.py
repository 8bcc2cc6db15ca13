"""Where a model's weights came from, as the one-line origin the hub shows, written and read in this one place.

The Trainer names training that was not done in this session ("Loss (steps 1–4000 from copy_rope.pt)") by reading
the origin back, so every origin that carries stored training is made here, next to the function that reads it.
"""

from __future__ import annotations

import re

from core_model.checkpoint_records import number_problem

CONTINUED = "trained here after "  # weights trained further in this session from stored training
_UNTRAINED = "untrained"
NEW_ARCHITECTURE = f"{_UNTRAINED} (new architecture)"  # a model built for an architecture the user applied
FROM_SCRATCH = f"{_UNTRAINED} (training from scratch)"  # a fresh model the Trainer starts training
FALLBACK = _UNTRAINED  # the default model start-up builds when no checkpoint could be loaded
_RECOVERED = re.compile(r"recovered training \(step (\d+)\)")
_CHECKPOINT_PREFIXES = ("trained checkpoint ", "checkpoint ")


def checkpoint_origin(name: str, shipped: bool = False) -> str:
    """A checkpoint file opened by the user, or one shipped with the app (`shipped`: "trained checkpoint x.pt")."""
    return f"{_CHECKPOINT_PREFIXES[0] if shipped else _CHECKPOINT_PREFIXES[1]}{name}"


def recovered_origin(step: int) -> str:
    """Unsaved training restored from the recovery file, up to `step`."""
    return f"recovered training (step {step})"


def continued_origin(stored: str) -> str:
    """Weights trained here on top of `stored` training ("" when there was none: plain "trained here")."""
    return f"{CONTINUED}{stored}" if stored else "trained here"


def is_file_as_read(origin: str, name: str) -> bool:
    """Whether `origin` says the weights are those of the file `name` as opened (shipped or not), untrained since."""
    return origin in (checkpoint_origin(name), checkpoint_origin(name, shipped=True))


def is_untrained(origin: str) -> bool:
    """Whether `origin` names freshly initialised weights (its maps mean nothing yet)."""
    return origin.startswith(_UNTRAINED)


def stored_training(origin: str, history: list[dict]) -> str:
    """Which part of `history` was not trained in this session, named for a reader: "steps 1-4000 from x.pt", "a
    recovered run, to step 40"; "" when all of it was (or there is none). Without it, a model opened with its
    curves shows a run that looks like the user's own."""
    if not history:
        return ""
    if origin.startswith(CONTINUED):
        return origin.removeprefix(CONTINUED)
    recovered = _RECOVERED.fullmatch(origin)
    if recovered:
        return f"a recovered run, to step {recovered[1]}"
    for prefix in _CHECKPOINT_PREFIXES:
        if origin.startswith(prefix):
            steps = [
                int(row["step"]) for row in history if isinstance(row, dict) and not number_problem(row.get("step"))
            ]
            span = f"steps 1\u2013{max(steps)} " if steps else ""  # rows are logged every few steps; it began at 1
            return f"{span}from {origin.removeprefix(prefix)}"
    return ""
