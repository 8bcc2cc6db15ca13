"""A/B compare: a second model B run on the playground's input (A), side by side or as the difference A − B.

It owns no widgets and no threads: loading B and B's forward passes run on two task slots made by an injected
factory (the composition root passes the task layer's TaskSlot), so the GUI thread never runs them. B's slot
coalesces: while a pass runs, only the newest request waits, and a result for an older A is dropped by the slot.
When A and B are different trainings (their weights differ), head numbers need not correspond: each new such pair
starts side by side, and A − B is shown only once the user picks it for that pair.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from PySide6.QtCore import QObject, Signal

from .compare_sources import (
    SOURCES,
    ModelB,
    anchors_differ,
    copy_of,
    difference,
    from_file,
    run_b,
    same_weights,
    shipped_for,
)
from .playground import PlaygroundSession
from .snapshots import PAD_LABEL, KindMaps, MapsSnapshot, PlaygroundFrame
from .worker_api import SlotFactory

log = logging.getLogger(__name__)
VIEWS = ("side_by_side", "difference")


@dataclass(frozen=True)
class CompareFrame:
    """A's and B's maps for the same input, their difference per kind, and where their outputs differ."""

    a: MapsSnapshot
    b: MapsSnapshot
    diff: MappingProxyType  # kind -> KindMaps (A − B) or None when the shapes differ
    differs: tuple[bool, ...]  # per compared decoder position (those not reading <pad>): the argmax tokens differ
    b_label: str
    anchors_dropped: bool = False  # one side reads <bos> symbols <eos>: the difference leaves the anchors out
    different_trainings: bool = False  # A's and B's weights differ: their head numbers need not correspond


@dataclass(frozen=True)
class BPass:
    """What one B pass returns to the GUI thread: the A it ran on, B, B's maps and whether the weights agree."""

    a: MapsSnapshot
    b: ModelB
    b_maps: MapsSnapshot
    generation: int  # A's hub generation the weight comparison belongs to
    same_weights: bool
    a_model: object  # A's model at the time: a new model object is a new A/B pair


def output_differences(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[bool, ...]:
    """Position by position, True where the two outputs differ (a position only one of them has differs)."""
    return tuple(i >= len(a) or i >= len(b) or a[i] != b[i] for i in range(max(len(a), len(b))))


def symbol_outputs(snap: MapsSnapshot) -> tuple[str, ...]:
    """The outputs at decoder positions that read a token (the symbols and <eos>), not those reading padding."""
    read = snap.maps["cross"].query_labels
    return tuple(token for token, label in zip(snap.output_tokens, read) if label != PAD_LABEL)


class CompareSession(QObject):
    """Holds model B and the compare choices; emits one CompareFrame per (A frame, B pass)."""

    b_changed = Signal(str)  # the label of the new B
    frame_changed = Signal(object)  # CompareFrame
    a_ready = Signal(object)  # MapsSnapshot: A's newest maps while no A/B frame exists yet (A is drawn at once)
    view_changed = Signal(str)  # the view was switched here (a new pair of different trainings starts side by side)
    failed = Signal(str)  # a sentence for the user (B could not load or run)
    busy_changed = Signal(bool)

    def __init__(self, session: PlaygroundSession, make_slot: SlotFactory) -> None:
        super().__init__()
        self.session = session
        self.enabled, self.view = False, "side_by_side"
        self.b: ModelB | None = None
        self.last_frame: CompareFrame | None = None
        self._loading = make_slot("Loading model B", self)  # a newer load wins
        self._loading.finished.connect(self._on_b_loaded)
        self._loading.error_line.connect(self._on_failed)
        self._passes = make_slot("Running model B", self, coalesce=True)
        self._passes.finished.connect(self._on_b_pass)
        self._passes.error_line.connect(self._on_pass_failed)
        self._same: tuple[int, ModelB, bool] | None = None  # the last weight comparison: A's generation, B, answer
        self._different_pair: tuple[ModelB, weakref.ref] | None = None  # the (B, A model) pair of different
        # trainings now shown; None while A and B share their weights
        session.frame_changed.connect(self._on_a_frame)

    @property
    def b_label(self) -> str:
        return self.b.label if self.b is not None else ""

    def set_enabled(self, enabled: bool) -> None:
        self.enabled = bool(enabled)
        self._publish_a()
        self._request()

    def set_view(self, view: str) -> None:
        """The user's choice; it stands for the current pair of models (a new pair of different trainings resets
        it to side by side)."""
        if view not in VIEWS:
            raise ValueError(f"view must be one of {list(VIEWS)}, got {view!r}")
        self.view = view
        if self.last_frame is not None:
            self.frame_changed.emit(self.last_frame)

    def load(self, source: str, path: Path | None = None) -> None:
        """Load B from a source of SOURCES in the background; `path` is needed for "file"."""
        if source not in SOURCES:
            raise ValueError(f"source must be one of {list(SOURCES)}, got {source!r}")
        hub = self.session.hub
        if source == "file":
            if path is None:
                raise ValueError("a checkpoint file is needed")
            job = lambda: from_file(Path(path))  # noqa: E731
        elif source == "shipped":
            model = hub.model
            task = hub.task
            job = lambda: shipped_for(model, task)  # noqa: E731
        elif source == "previous":
            previous = hub.previous_model()
            if previous is None:
                self.failed.emit(
                    "There is no previous model yet: Model > Undo has nothing to bring back. "
                    "Change the architecture or open a checkpoint first."
                )
                return
            model, task, origin = previous
            job = lambda: copy_of(model, task, f"previous model ({origin})")  # noqa: E731
        else:
            model, task, gates = hub.model, hub.task, self.session.gates()
            job = lambda: copy_of(model, task, "this model", gates)  # noqa: E731
        self._set_busy(True)
        self._loading.submit(lambda _state: job())

    # ----- internals -----
    def _on_b_loaded(self, b: ModelB) -> None:
        self._set_busy(False)
        self.b = b
        self.b_changed.emit(b.label)
        self._request()

    def _on_failed(self, text: str) -> None:
        self._set_busy(False)
        self.failed.emit(f"Model B: {text}")

    def _on_a_frame(self, frame: PlaygroundFrame) -> None:
        if self.enabled:
            self._publish_a(frame.maps)
            self._request(frame.maps)

    def _publish_a(self, a: MapsSnapshot | None = None) -> None:
        """Before B has run on anything, A alone: its maps need not wait for B to load."""
        a = a or self.session.last_snapshot
        if self.enabled and self.last_frame is None and a is not None:
            self.a_ready.emit(a)

    def _request(self, a: MapsSnapshot | None = None) -> None:
        """Run B on A's newest maps (latest wins)."""
        a = a or self.session.last_snapshot
        if not self.enabled or self.b is None or a is None:
            return
        b, masks, hub = self.b, self.session.masks, self.session.hub
        generation, a_model, last = hub.generation, hub.model, self._same
        known = last[2] if last is not None and last[0] == generation and last[1] is b else None
        # compared here, once per model state: a worker could read A's tensors while a training result loads into them
        same = known if known is not None else same_weights(a_model, b.model)
        self._same = (generation, b, same)
        self._passes.submit(lambda _state: BPass(a, b, run_b(b, a, masks), generation, same, a_model))

    def _on_b_pass(self, result: BPass) -> None:
        """The slot delivers only the newest request's pass: older ones were dropped as stale."""
        a, b, b_maps = result.a, result.b, result.b_maps
        diff = {kind: difference(a.maps[kind], b_maps.maps[kind]) for kind in a.maps}
        differs = output_differences(symbol_outputs(a), symbol_outputs(b_maps))
        self.last_frame = CompareFrame(
            a, b_maps, MappingProxyType(diff), differs, b.label, anchors_differ(a, b_maps), not result.same_weights
        )
        self._follow_pair(b, result.a_model, not result.same_weights)
        self.frame_changed.emit(self.last_frame)

    def _follow_pair(self, b: ModelB, a_model: object, different: bool) -> None:
        """A new pair of different trainings starts side by side; a pick made for the pair shown stands."""
        pair = self._different_pair
        if not different:
            self._different_pair = None
        elif pair is None or pair[0] is not b or pair[1]() is not a_model:
            self._different_pair = (b, weakref.ref(a_model))
            if self.view != "side_by_side":
                self.view = "side_by_side"
                self.view_changed.emit(self.view)

    def _on_pass_failed(self, text: str) -> None:
        self.failed.emit(f"Model B cannot run on this input: {text}")

    def _set_busy(self, busy: bool) -> None:
        self.busy_changed.emit(busy)


def kind_maps(frame: CompareFrame, side: str, kind: str) -> KindMaps | None:
    """One side's maps of a kind: "a", "b" or "diff"."""
    if side == "diff":
        return frame.diff[kind]
    return (frame.a if side == "a" else frame.b).maps[kind]
