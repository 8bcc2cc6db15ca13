"""At start-up, offer the unsaved training that apps which did not close cleanly left behind, newest first.

The offer is a bar above the tabs, never a modal question: the app works as usual while it is up. Restore opens the
training as the current model with its curves, unsaved and with no file of its own, so File > Save asks where; Discard
deletes the file. Each file is read on its own: one that cannot be restored is named beside the ones that can, which
are offered first, and is then offered on its own, to discard. A file left unanswered stays for the next launch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, Signal

from visualizer.controllers.recovery_files import Recovered, claim_orphans, file_time, is_date, read_recovery
from visualizer.state.model_hub import ModelHub
from visualizer.state.origins import recovered_origin
from visualizer.state.training import TrainingState
from visualizer.widgets.common.recovery_banner import RecoveryBanner
from visualizer.workers.tasks import run_task

log = logging.getLogger(__name__)
RESTORE_QUESTION = "Save changes to the trained model before restoring the recovered training?"
BLOCKED_WHILE_TRAINING = "Stop training to restore this training"
NAMED_SKIPS = 3  # the most files that cannot be restored an offer names; the rest are counted


def when(saved_at: float) -> str:
    """A local date for the bar; a time no date can show (the file's own time may be anything) is said so."""
    return datetime.fromtimestamp(saved_at).strftime("%Y-%m-%d %H:%M") if is_date(saved_at) else "an unknown time"


def offer_text(rec: Recovered, skipped: Sequence[Recovered] = ()) -> str:
    """The bar's text for `rec`, naming the files read before it that cannot be restored."""
    if rec.error:
        return f"Unsaved training from {when(rec.saved_at)} was found but cannot be restored: {rec.error}"
    assert rec.task is not None  # a file read without an error has its model and task
    text = (
        f"Training from {when(rec.saved_at)} was not saved (step {rec.step}, task {rec.task.task}). "
        "Restore it, or discard it?"
    )
    notes = [
        f"Skipped {bad.path.name}, which cannot be restored: {bad.error.rstrip('.')}." for bad in skipped[:NAMED_SKIPS]
    ]
    if len(skipped) > NAMED_SKIPS:
        notes.append(f"Skipped {len(skipped) - NAMED_SKIPS} more files that cannot be restored.")
    return " ".join([text, *notes])


class RecoveryOffer(QObject):
    """Reads each orphaned recovery file in the background and shows it in the banner until answered: the ones that
    can be restored first, newest first, then the ones that cannot."""

    restored = Signal(str)  # the recovery file's path, once its model is the hub's

    def __init__(
        self,
        hub: ModelHub,
        training: TrainingState,
        banner: RecoveryBanner,
        confirm_discard: Callable[[str], bool],
        status: Callable[[str, int], None],
        adopt: Callable[[Path], None],
    ) -> None:
        super().__init__(banner)
        self.hub, self.training, self.banner = hub, training, banner
        self._confirm_discard, self._status, self._adopt = confirm_discard, status, adopt
        self._waiting: list[tuple[Path, QLockFile]] = []  # claimed, not read yet, newest first
        self._skipped: list[tuple[Recovered, QLockFile]] = []  # read, cannot be restored: offered after the rest
        self.current: Recovered | None = None
        self._lock: QLockFile | None = None
        banner.restore_requested.connect(self._restore)
        banner.discard_requested.connect(self._discard)
        hub.training_active_changed.connect(self._block_while_training)

    def start(self, folder: Path, own: Path) -> None:
        """Claim the files no running app holds and offer the newest."""
        self._waiting = claim_orphans(folder, own)
        self._next()

    def _next(self) -> None:
        """Read the next file; once all are read, offer the first that cannot be restored; then hide."""
        self.current, self._lock = None, None
        if self._waiting:
            path, lock = self._waiting.pop(0)
            run_task(
                "Reading the recovery file",
                lambda: read_recovery(path),
                lambda rec: self._read(rec, lock),
                lambda message: self._read(Recovered(path, file_time(path), error=message), lock),
            )
        elif self._skipped:
            self._show(*self._skipped.pop(0))
        else:
            self.banner.hide()

    def _read(self, rec: Recovered, lock: QLockFile) -> None:
        if not rec.error:
            self._show(rec, lock)
            return
        log.warning("skipped the recovery file %s, which cannot be restored: %s", rec.path, rec.error)
        self._skipped.append((rec, lock))
        self._next()

    def _show(self, rec: Recovered, lock: QLockFile) -> None:
        self.current, self._lock = rec, lock
        self.banner.offer(offer_text(rec, [bad for bad, _ in self._skipped]), restorable=not rec.error)
        self._block_while_training(self.hub.training_active)

    def _block_while_training(self, active: bool) -> None:
        self.banner.set_restore_blocked(BLOCKED_WHILE_TRAINING if active else "")

    def _restore(self) -> None:
        rec = self.current
        if rec is None or rec.error or self.hub.training_active or not self._confirm_discard(RESTORE_QUESTION):
            return
        assert rec.task is not None  # a file read without an error has its model and task
        self.hub.set_model(  # no path: whatever file the recovery file names, it is no save target
            rec.model,
            rec.task,
            origin=recovered_origin(rec.step),
            history=rec.history,
            path=None,
            dirty=True,
            extra=rec.extra,
            undo_as="restore of the recovered training",
        )
        self.training.restore(rec.history, rec.extra)
        try:
            self._adopt(rec.path)
        except OSError as exc:  # the model is restored; only the copy on disk stays where it was
            log.warning("could not take over %s: %s", rec.path, exc)
        self._status(
            f"Restored the training from {when(rec.saved_at)} (step {rec.step}): save it with File > Save", 10_000
        )
        self.restored.emit(str(rec.path))
        self._unlock()
        self._next()

    def _discard(self) -> None:
        rec = self.current
        if rec is None:
            return
        try:
            rec.path.unlink(missing_ok=True)
        except OSError as exc:
            self._status(f"Could not delete {rec.path}: {exc.strerror or exc}", 10_000)
            return
        self._unlock()
        self._next()

    def _unlock(self) -> None:
        if self._lock is not None:
            self._lock.unlock()

    def release(self) -> None:
        """The app closes: files still unanswered stay for the next launch."""
        self._unlock()
        for _item, lock in [*self._waiting, *self._skipped]:
            lock.unlock()
        self._waiting, self._skipped = [], []
