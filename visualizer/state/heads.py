"""The Heads view's model: which analysis runs, its progress, and the last results (roles, importance).

Roles are cheap (one teacher-forced pass) and refresh on every model change, for the badges on the playground's
maps; importance (one greedy evaluation per head) runs when the user asks, cancellable. Both use the same N seeded
sequences and the same core_model functions as `attention-playground heads`, so the numbers are the CLI's.
"""

from __future__ import annotations

import copy
import logging

import torch
from PySide6.QtCore import QObject, Signal

from core_model.head_importance import MAX_SEQUENCES, HeadAnalysis, analyse_heads
from core_model.head_roles import HeadRole, head_roles
from core_model.model import Seq2SeqTransformer
from core_model.tasks import TaskSpec

from .model_hub import ModelHub
from .origins import is_file_as_read
from .worker_api import SlotFactory, TaskSlotApi, TaskStateApi

log = logging.getLogger(__name__)
DEFAULT_N, DEFAULT_SEED = 200, 1234  # the CLI's defaults
MODEL_CHANGED = "The model changed while the heads were analysed: run it again for this model."


def model_name(hub: ModelHub) -> tuple[str, str]:
    """The model and its task as the Heads tab names them: ("copy_rope.pt", "copy")."""
    path, origin = hub.path, hub.origin
    if path is None or is_file_as_read(origin, path.name):  # the file's name alone says it
        name = origin if path is None else path.name
    else:  # trained further here: the file it came from, and how it differs
        name = f"{path.name}, {origin}"
    return name, hub.task.task


def analyse_copy(
    state: TaskStateApi,
    model: Seq2SeqTransformer,
    task: TaskSpec,
    n: int,
    seed: int,
    device: torch.device,
    roles_only: bool,
) -> HeadAnalysis | tuple[HeadRole, ...]:
    """A task: the analysis of a copy of `model`, taken on the pool thread (deep-copying a large model takes hundreds
    of milliseconds, which the GUI thread must not pay; a later in-place weight load cannot reach the copy).

    roles_only: only head_roles (a fraction of a second, for the map badges); otherwise roles and importance, which
    reports (done, total) per head and stops after the head it is ablating when cancelled.
    """
    model = copy.deepcopy(model).eval()
    if roles_only:
        return head_roles(model, task, n=n, seed=seed, device=device)
    return analyse_heads(
        model,
        task,
        n=n,
        seed=seed,
        device=device,
        should_stop=lambda: state.cancelled,
        progress=lambda done, total: state.report((done, total)),
    )


class HeadsState(QObject):
    analysis_changed = Signal(object)  # HeadAnalysis | None (None: none yet, or the model changed since)
    roles_changed = Signal(object)  # tuple[HeadRole, ...] | None
    progress_changed = Signal(int, int)  # done, total (0, 0: idle)
    running_changed = Signal(bool)
    message = Signal(str)
    stale_changed = Signal(str)  # why the last analysis no longer describes the model; "" once one does

    def __init__(self, hub: ModelHub, make_slot: SlotFactory, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.n, self.seed = DEFAULT_N, DEFAULT_SEED
        self.analysis: HeadAnalysis | None = None
        self.roles: tuple[HeadRole, ...] | None = None
        self.analysed: tuple[str, str] | None = None  # model_name() of the last finished analysis
        self.stale = ""  # what stale_changed last said
        self._analysed_on: tuple[int, int] | None = None  # the sequences and seed of the analysis shown
        self._submitted_on = (self.n, self.seed)  # those of the analysis running
        model = lambda: hub.generation  # noqa: E731 - a result for a model replaced since is overtaken, not shown
        self._analysis = make_slot("The head analysis", self, context=model)
        self._analysis.progressed.connect(lambda done_total: self.progress_changed.emit(*done_total))
        self._analysis.finished.connect(self._on_analysis)
        self._analysis.failed.connect(self._end)
        self._analysis.cancelled.connect(
            lambda: self._end("Head importance cancelled; the previous result (if any) stays.")
        )
        self._analysis.overtaken.connect(lambda: self._end(MODEL_CHANGED))
        self._roles = make_slot("Scoring the head roles", self, context=model)  # the newest wins
        self._roles.finished.connect(self._on_roles)
        self._roles.failed.connect(self.message)
        self._generation = hub.generation  # the model the results belong to (a device move keeps it)
        hub.model_changed.connect(self._on_model_changed)

    @property
    def running(self) -> bool:
        return self._analysis.running

    def set_sequences(self, n: int, seed: int) -> None:
        """How many sequences and which seed the next analysis uses (the CLI's --n and --seed)."""
        if not 1 <= n <= MAX_SEQUENCES or seed < 0:
            raise ValueError(f"n must be from 1 to {MAX_SEQUENCES} and seed >= 0, got n={n}, seed={seed}")
        changed = (n, seed) != (self.n, self.seed)
        self.n, self.seed = n, seed
        if changed:
            self.refresh_roles()
            self._note_sequences()

    def _note_sequences(self) -> None:
        """Importance numbers scored on other sequences than the boxes now say are marked, not left to pass as
        theirs (the roles above them are scored again at once; importance takes a press of Analyse heads)."""
        if self.analysis is None or self._analysed_on is None:
            return
        n, seed = self._analysed_on
        if (n, seed) == (self.n, self.seed):
            self._set_stale("")
        else:
            self._set_stale(
                f"Out of date: the importance numbers were scored on {n} sequences (seed {seed}); Sequences and "
                f"Seed now say {self.n} (seed {self.seed}): press Analyse heads to score them again."
            )

    def start(self) -> bool:
        """Run roles and importance on a copy of the hub's model (the job copies it); False when one is running."""
        if self._analysis.running:
            return False
        self.running_changed.emit(True)
        self.progress_changed.emit(0, 1)
        self._submitted_on = (self.n, self.seed)
        self._submit(self._analysis, roles_only=False)
        return True

    def cancel(self) -> None:
        self._analysis.cancel()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Cancel the analysis and wait for it and the roles job (closing the window): none outlives its receivers."""
        return self._analysis.shutdown(timeout_ms) & self._roles.shutdown(timeout_ms)

    def refresh_roles(self) -> None:
        """Score the roles of the hub's model again (in the background); roles_changed follows."""
        self._submit(self._roles, roles_only=True)

    def _submit(self, slot: TaskSlotApi, roles_only: bool) -> None:
        hub = self.hub
        slot.submit(analyse_copy, hub.model, hub.task, self.n, self.seed, hub.device, roles_only)

    def _on_analysis(self, result: HeadAnalysis) -> None:
        self.analysis, self.analysed = result, model_name(self.hub)
        self._analysed_on = self._submitted_on
        self._set_stale("")
        self._note_sequences()  # the boxes changed while it ran
        self.analysis_changed.emit(result)
        self._end(
            f"Analysed {len(result.heads)} heads of {self.analysed[0]} on {self.n} {self.analysed[1]} "
            f"sequences (seed {self.seed})."
        )

    def _on_roles(self, roles: tuple[HeadRole, ...]) -> None:
        self.roles = roles
        self.roles_changed.emit(roles)

    def _end(self, text: str) -> None:
        self.running_changed.emit(False)
        self.progress_changed.emit(0, 0)
        self.message.emit(text)

    def _set_stale(self, text: str) -> None:
        self.stale = text
        self.stale_changed.emit(text)

    def _on_model_changed(self) -> None:
        if self.hub.generation == self._generation:  # the same model and weights on another device: all still true
            return
        self._generation = self.hub.generation
        if self.analysed is not None:  # its numbers are dropped below; what they were of stays said until the next
            (name, task), now = self.analysed, model_name(self.hub)
            change = f"the model is now {now[0]} ({now[1]} task)" if now != self.analysed else "its weights changed"
            self._set_stale(
                f"Out of date: the last analysis scored {name} on {task} sequences; {change}. Its "
                "importance numbers are cleared: press Analyse heads to score this model."
            )
            self.message.emit("")  # "Analysed ..." is about the old model: the stale note says what it was
        if self.analysis is not None:
            self.analysis = None
            self.analysis_changed.emit(None)
        if self.roles is not None:  # the old model's badges must not sit on the new model's maps meanwhile
            self.roles = None
            self.roles_changed.emit(None)
        if self._analysis.running:  # its result would be for the model gone: dropped, and the reason said
            self._analysis.discard()
            self._end(MODEL_CHANGED)
        self.refresh_roles()
