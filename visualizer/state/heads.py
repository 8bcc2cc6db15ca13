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

from .analysis import AnalysisState
from .model_hub import ModelHub
from .origins import is_file_as_read
from .worker_api import SlotFactory, TaskStateApi

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
        progress=lambda done, total: state.step((done, total)),
    )


class HeadsState(AnalysisState):
    """Importance is the analysis (frame_changed carries a HeadAnalysis | None); the roles ride beside it in a slot
    of their own, scored again on every model change."""

    roles_changed = Signal(object)  # tuple[HeadRole, ...] | None
    stale_changed = Signal(str)  # why the last analysis no longer describes the model; "" once one does
    CLEARED = ""  # "Analysed ..." is about the old model: the stale note says what it was
    DROPPED = MODEL_CHANGED
    CANCELLED = "Head importance cancelled; the previous result (if any) stays."
    IDLE_CLEARED = ""  # a cancelled or failed run's sentence is about the old model

    def __init__(self, hub: ModelHub, make_slot: SlotFactory, parent: QObject | None = None) -> None:
        super().__init__(hub, make_slot, "The head analysis", parent)
        self.n, self.seed = DEFAULT_N, DEFAULT_SEED
        self.frame: HeadAnalysis | None = None
        self.roles: tuple[HeadRole, ...] | None = None
        self.analysed: tuple[str, str] | None = None  # model_name() of the last finished analysis
        self.stale = ""  # what stale_changed last said
        self._analysed_on: tuple[int, int] | None = None  # the sequences and seed of the analysis shown
        self._submitted_on = (self.n, self.seed)  # those of the analysis running
        self._roles = make_slot("Scoring the head roles", self, context=lambda: hub.generation)  # the newest wins
        self._roles.finished.connect(self._on_roles)
        self._roles.failed.connect(self.message)

    @property
    def analysis(self) -> HeadAnalysis | None:
        """The importance of the hub's model's heads (the frame), None before one or after a model change."""
        return self.frame

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
        if self.running:
            return False
        self._submitted_on = (self.n, self.seed)
        self._start("", analyse_copy, *self._inputs(), False)
        return True

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Cancel the analysis and wait for it and the roles job (closing the window): none outlives its receivers."""
        return super().shutdown(timeout_ms) & self._roles.shutdown(timeout_ms)

    def refresh_roles(self) -> None:
        """Score the roles of the hub's model again (in the background); roles_changed follows."""
        self._roles.submit(analyse_copy, *self._inputs(), True)

    def _inputs(self) -> tuple:
        hub = self.hub
        return hub.model, hub.task, self.n, self.seed, hub.device

    def _on_finished(self, result: HeadAnalysis) -> None:
        self.analysed, self._analysed_on = model_name(self.hub), self._submitted_on
        self._set_stale("")
        super()._on_finished(result)
        self._note_sequences()  # the boxes changed while it ran

    def _frame_for(self, result: HeadAnalysis) -> HeadAnalysis:
        return result

    def _summary(self, frame: HeadAnalysis) -> str:
        assert self.analysed is not None
        name, task = self.analysed
        return f"Analysed {len(frame.heads)} heads of {name} on {self.n} {task} sequences (seed {self.seed})."

    def _on_roles(self, roles: tuple[HeadRole, ...]) -> None:
        self.roles = roles
        self.roles_changed.emit(roles)

    def _set_stale(self, text: str) -> None:
        self.stale = text
        self.stale_changed.emit(text)

    def _new_model(self) -> None:
        if self.analysed is not None:  # its numbers are cleared; what they were of stays said until the next
            (name, task), now = self.analysed, model_name(self.hub)
            change = f"the model is now {now[0]} ({now[1]} task)" if now != self.analysed else "its weights changed"
            self._set_stale(
                f"Out of date: the last analysis scored {name} on {task} sequences; {change}. Its "
                "importance numbers are cleared: press Analyse heads to score this model."
            )
        if self.roles is not None:  # the old model's badges must not sit on the new model's maps meanwhile
            self.roles = None
            self.roles_changed.emit(None)
        self.refresh_roles()
