"""Recovery files: unsaved training kept on disk, so that a kill, a logout or a crash loses little of it.

Each running app writes its own file, `unsaved-training-<launch time>-<pid>.pt` in the app's data folder, and holds
a QLockFile beside it; a file whose lock nobody holds belongs to an app that is gone, and the next launch offers it.
A recovery file is what File > Save writes (model, history, curves, attention movie), with a "recovery" entry in its
extra data saying when it was written, at which step and where the training came from. Anyone can write such a file,
so nothing in it decides where the app writes: a restored training is saved where the user says.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import torch
from PySide6.QtCore import QLockFile, QStandardPaths

from core_model import ModelConfig, Seq2SeqTransformer
from core_model.checkpoint import CheckpointError, CheckpointExtra, load_checkpoint, save_checkpoint
from core_model.tasks import TaskSpec

log = logging.getLogger(__name__)
PREFIX, FOLDER_NAME, META_KEY = "unsaved-training-", "recovery", "recovery"
MAX_STEP = 2**63 - 1  # the most steps a recovery record may claim: a count torch's int64 step counters can hold


def recovery_folder() -> Path:
    """<app data>/recovery (QStandardPaths' AppDataLocation: on Linux $XDG_DATA_HOME/<organisation>/<application>)."""
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(base) / FOLDER_NAME


@dataclass(frozen=True)
class RecoveryPayload:
    """One write, made of copies: the GUI thread may go on changing the model while it is written."""

    config: ModelConfig
    state_dict: dict[str, torch.Tensor]  # CPU clones
    history: list[dict]
    extra: CheckpointExtra  # File > Save's extra data plus the recovery record (META_KEY)


def recovery_meta(step: int, origin: str) -> dict:
    """The META_KEY entry: plain data a checkpoint may hold."""
    return {"saved_at": time.time(), "step": int(step), "origin": origin}


@dataclass(frozen=True)
class Recovered:
    """A recovery file read back: the model for the hub, or why it could not be read."""

    path: Path
    saved_at: float
    step: int = 0
    model: Any = None  # Seq2SeqTransformer on the CPU; None when `error`
    task: TaskSpec | None = None
    history: list[dict] = field(default_factory=list)
    extra: CheckpointExtra = field(default_factory=CheckpointExtra)  # without the recovery record
    error: str = ""


def file_time(path: Path) -> float:
    """When the file was last written (0 when it cannot be read): a recovery record without a time of its own."""
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def is_date(seconds: object) -> bool:
    """`seconds` is a number this machine can show as a local date (1e300 or -1e15 is not)."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        return False
    try:
        datetime.fromtimestamp(seconds)
    except (OverflowError, OSError, ValueError):
        return False
    return True


def _record(meta: object, written: float, last_step: int) -> tuple[float, int]:
    """(saved_at, step) of a recovery record; a missing entry is taken from the file, a bad one raises ValueError."""
    if meta is None:
        return written, last_step
    if not isinstance(meta, Mapping):
        raise ValueError(f"its recovery record is a {type(meta).__name__}, not a mapping")
    saved_at, step = meta.get("saved_at", written), meta.get("step", last_step)
    if not is_date(saved_at):
        raise ValueError(f"its recovery record's time ({saved_at!r:.40}) is not a date")
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEP:
        raise ValueError(f"its recovery record's step ({step!r:.40}) is not a whole number from 0 to {MAX_STEP:,}")
    return float(saved_at), step


def read_recovery(path: Path) -> Recovered:
    """Load a recovery file completely (background thread); a bad file or record comes back with `error`."""
    try:
        ckpt = load_checkpoint(path)  # checks the stored task against the model
        task = ckpt.task
        saved_at, step = _record(ckpt.extra.recovery, file_time(path), last_step(ckpt.history))
        model = ckpt.build("cpu")
    except (CheckpointError, ValueError) as exc:
        return Recovered(path, file_time(path), error=str(exc))
    extra = replace(ckpt.extra, recovery=None)
    return Recovered(path, saved_at, step, model, task, list(ckpt.history), extra)


def last_step(history: list[dict]) -> int:
    """The step of a history's last row; 0 when there is none, or it is no step count (a file may hold anything)."""
    try:
        step = int(history[-1]["step"]) if history else 0
    except (KeyError, TypeError, ValueError, OverflowError):
        return 0
    return step if 0 <= step <= MAX_STEP else 0


def holding(payload: RecoveryPayload) -> Seq2SeqTransformer:
    """A model around the payload's weights for save_checkpoint, built on the meta device: it initialises nothing,
    so it draws nothing from torch's global generator, which the training thread's dropout is drawing from."""
    with torch.device("meta"):
        model = Seq2SeqTransformer(payload.config)
    model.load_state_dict(payload.state_dict, assign=True)  # every saved tensor is now one of the payload's
    return model


def claim_orphans(folder: Path, own: Path) -> list[tuple[Path, QLockFile]]:
    """Recovery files no running app holds, newest first, each with its lock (now held here until released)."""
    try:
        files = sorted(folder.glob(f"{PREFIX}*.pt"), key=file_time, reverse=True)
    except OSError:
        return []
    found = []
    for path in files:
        lock = _lock_for(path)
        if path != own and lock.tryLock(0):  # a lock left by a killed app is stale: tryLock takes it over
            found.append((path, lock))
    return found


def _lock_for(path: Path) -> QLockFile:
    lock = QLockFile(str(path.with_suffix(".lock")))
    lock.setStaleLockTime(0)  # stale only when its process is gone, however long a session lasts
    return lock


class RecoveryStore:
    """This app's own recovery file. Writes (from any thread), adoptions and deletions take effect in the order
    they were requested on the GUI thread: one requested earlier and finished later is dropped."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"{PREFIX}{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.pt"
        self._lock = _lock_for(self.path)
        self._mutex = threading.Lock()
        self._requested = self._done = 0

    def request(self) -> int:
        """A serial for the next operation (GUI thread); the file ends up as the highest serial left it."""
        if not self._lock.isLocked():  # first use: tell other running apps that this file is in use
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # the write that follows fails too, and says so
                log.warning("could not create the recovery folder %s: %s", self.folder, exc.strerror or exc)
            else:
                self._lock.tryLock(0)
        self._requested += 1
        return self._requested

    def write(self, payload: RecoveryPayload, serial: int) -> bool:
        """Write atomically unless a newer operation already ran; raises (CheckpointError mostly) when it cannot."""
        with self._mutex:
            if serial <= self._done:
                return False
            save_checkpoint(self.path, holding(payload), history=payload.history, extra=payload.extra)
            self._done = serial
            return True

    def adopt(self, orphan: Path, serial: int) -> None:
        """Make an orphan (restored into this app) this app's own file, in one rename."""
        with self._mutex:
            os.replace(orphan, self.path)
            self._done = max(self._done, serial)

    def delete(self, serial: int) -> None:
        """Delete the file unless a newer operation already ran; a file that cannot go is left for the next launch."""
        with self._mutex:
            if serial > self._done:
                try:
                    self.path.unlink(missing_ok=True)
                except OSError as exc:
                    log.warning("could not delete the recovery file %s: %s", self.path, exc.strerror or exc)
                self._done = serial

    def release(self) -> None:
        """The app is closing: other launches may now offer whatever file is left."""
        self._lock.unlock()
