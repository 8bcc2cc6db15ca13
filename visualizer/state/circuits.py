"""The Circuits tab's model: every head's QK and OV circuits over tokens, its copying score, and how heads compose.

The numbers are core_model.circuits', core_model.position_circuits' and core_model.head_composition's, with the
defaults of `attention-playground circuits` (the baseline's 100 samples and seed 0, the task's positions), so the tab
shows what the CLI prints. They are read from the weights alone (no source is run), on a copy of the model, in a task
slot that reports each of its steps and stops between them. A link is listed only above the 95th percentile of two
yardsticks: random heads' scores (which pack tightly, about half above their mean) and the model's own heads' scores
where no path exists (trained heads score above random ones whether or not they compose).
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal

from core_model.analysis_budget import BudgetError, Knobs, check_circuits
from core_model.circuits import HeadCircuit, HeadRef, token_circuits
from core_model.head_composition import (
    CompositionBaseline,
    CompositionScore,
    CompositionType,
    UnlinkedScores,
    composition_scores,
    random_baseline,
    unlinked_scores,
)
from core_model.model import Seq2SeqTransformer
from core_model.position_circuits import PositionCircuit, default_positions, position_circuits

from .model_hub import ModelHub
from .worker_api import SlotFactory, TaskStateApi

DEFAULT_SAMPLES, DEFAULT_SEED = 100, 0  # the CLI's --baseline-samples and --seed
STEPS = ("the QK and OV circuits", "the position circuits", "the composition scores", "the random baseline")
PRESS = "press Compute (Ctrl+Return) to read this model's circuits."
# The QK and OV tables are drawn cell by cell on the GUI thread (a QTableWidget item each): 64 tokens make 4,096
# cells a table, 1.5x the largest task vocabulary (42); 300 tokens took the window most of a minute to draw.
MAX_SHOWN_TOKENS = 64


@dataclass(frozen=True)
class CircuitsFrame:
    """One model's circuits, composition scores and baseline, with the tokens that label the tables."""

    tokens: tuple[str, ...]  # the whole vocabulary, specials included: the tables' rows and columns
    heads: tuple[HeadCircuit, ...]  # head_refs order
    positions: tuple[PositionCircuit, ...]  # head_refs order
    composition: tuple[CompositionScore, ...]
    baseline: CompositionBaseline
    unlinked: UnlinkedScores
    model_name: str = ""  # "the reverse model (reverse_rope.pt)": what the status line names
    anchored: bool = False  # sources are <bos> symbols <eos> (position 0 of a source is <bos>), else symbols alone
    positional: str = "rope"  # the model's position encoding: "rope" or "sinusoidal"
    ranking: LinkRanking | None = None  # made on the pool thread; None: ranked here, on first use

    def circuit(self, ref: HeadRef) -> HeadCircuit:
        return next(h for h in self.heads if h.ref == ref)

    def position(self, ref: HeadRef) -> PositionCircuit:
        return next(p for p in self.positions if p.ref == ref)

    def bar(self, kind: CompositionType) -> float:
        """The score a link of this type must pass: the higher of the two yardsticks' 95th percentiles."""
        return max(self.baseline.p95[kind], self.unlinked.p95[kind])

    def above_noise(self, link: CompositionScore) -> bool:
        """Above both yardsticks' 95th percentiles: 1 random pair in 20, 1 unlinked trained pair in 20, get there."""
        return link.score > self.bar(link.type)

    def ratio(self, link: CompositionScore) -> float:
        """The score as a multiple of what random heads of the same shapes give for its type."""
        base = self.baseline.scores[link.type]
        return link.score / base if base > 0 else math.nan

    @property
    def ranked(self) -> LinkRanking:
        return self.ranking if self.ranking is not None else rank_links(self.composition, self.baseline, self.unlinked)

    def strongest(self, n: int, only: HeadRef | None = None) -> tuple[CompositionScore, ...]:
        """The n links furthest above the baseline (score / baseline, largest first), only those above_noise; with
        `only`, just the links into or out of that head."""
        mine = (link for link in self.ranked.links if only in (None, link.source, link.target))
        return tuple(itertools.islice(mine, n))

    @property
    def standing_out(self) -> int:
        return len(self.ranked.links)

    def counts(self, only: HeadRef | None = None) -> tuple[int, int]:
        """(links, links that stand out) of the whole model, or into or out of `only`."""
        if only is None:
            return len(self.composition), len(self.ranked.links)
        return self.ranked.per_head.get(only, (0, 0))


@dataclass(frozen=True)
class LinkRanking:
    """The links above both yardsticks' 95th percentiles, largest score / baseline first, and each head's counts.

    A model may have millions of links: sorting and counting them is work for the pool thread, so that the window
    only reads the first rows of an order made there."""

    links: tuple[CompositionScore, ...]
    per_head: dict[HeadRef, tuple[int, int]]  # head -> (its links in or out, those that stand out)


def rank_links(
    composition: tuple[CompositionScore, ...], baseline: CompositionBaseline, unlinked: UnlinkedScores
) -> LinkRanking:
    """CircuitsFrame.above_noise and .ratio over every link, done once (see LinkRanking)."""
    bars = {kind: max(baseline.p95[kind], unlinked.p95[kind]) for kind in baseline.p95}
    per_head: dict[HeadRef, list[int]] = {}
    standing = []
    for link in composition:
        up = link.score > bars[link.type]
        for ref in {link.source, link.target}:
            counts = per_head.setdefault(ref, [0, 0])
            counts[0] += 1
            counts[1] += up
        if up:
            standing.append(link)

    def ratio(link: CompositionScore) -> float:
        base = baseline.scores[link.type]
        return link.score / base if base > 0 else math.nan

    standing.sort(key=ratio, reverse=True)
    return LinkRanking(tuple(standing), {ref: (n, up) for ref, (n, up) in per_head.items()})


Found = tuple[
    tuple[HeadCircuit, ...],
    tuple[PositionCircuit, ...],
    tuple[CompositionScore, ...],
    CompositionBaseline,
    UnlinkedScores,
    LinkRanking,
]


def read_circuits(state: TaskStateApi, model: Seq2SeqTransformer, samples: int, seed: int, n_positions: int) -> Found:
    """A task: the four analyses on a copy of `model` taken on the pool thread, and the links ranked; progress and
    cancel between them."""
    state.step((0, len(STEPS)))
    model = copy.deepcopy(model).eval()
    heads = tuple(token_circuits(model))
    state.step((1, len(STEPS)))
    positions = tuple(position_circuits(model, n_positions))
    state.step((2, len(STEPS)))
    composition, unlinked = tuple(composition_scores(model)), unlinked_scores(model)
    state.step((3, len(STEPS)))
    baseline = random_baseline(model.config, samples, seed)
    ranking = rank_links(composition, baseline, unlinked)
    state.report((4, len(STEPS)))
    return heads, positions, composition, baseline, unlinked, ranking


class CircuitsState(QObject):
    """`compute` reads the hub's model in the background; a new model clears the result."""

    frame_changed = Signal(object)  # CircuitsFrame | None (None: nothing yet, or the model changed since)
    running_changed = Signal(bool)
    progress_changed = Signal(int, int)  # steps done, steps in all (0, 0: idle)
    message = Signal(str)

    def __init__(self, hub: ModelHub, make_slot: SlotFactory, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.samples, self.seed = DEFAULT_SAMPLES, DEFAULT_SEED
        self.frame: CircuitsFrame | None = None
        self._slot = make_slot("Reading the circuits", self, context=lambda: hub.generation)
        self._slot.progressed.connect(self._on_progress)
        self._slot.finished.connect(self._on_result)
        self._slot.failed.connect(self._end)
        self._slot.cancelled.connect(lambda: self._end("Cancelled; the previous result (if any) stays."))
        self._slot.overtaken.connect(lambda: self._end("The model changed while this ran: " + PRESS))
        self._generation = hub.generation  # the model the frame and a running read belong to
        hub.model_changed.connect(self._on_model_changed)

    @property
    def running(self) -> bool:
        return self._slot.running

    def compute(self) -> None:
        """Read the hub's model (a running computation is superseded); a model over the analysis budget is refused
        in the status line, as `attention-playground circuits` refuses it, and so is one whose tables have more
        tokens than the tab can draw; then nothing runs."""
        config = self.hub.model.config
        n_positions = default_positions(config, self.hub.task)  # the CLI's default --positions
        if config.vocab_size > MAX_SHOWN_TOKENS:
            self.message.emit(
                f"This model has {config.vocab_size:,} tokens: each head's QK and OV tables would be "
                f"{config.vocab_size:,} x {config.vocab_size:,} cells, and the tab draws at most {MAX_SHOWN_TOKENS} x "
                f"{MAX_SHOWN_TOKENS}; `attention-playground circuits FILE --json` prints them."
            )
            return
        try:
            check_circuits(config, n_positions, self.samples, Knobs())
        except BudgetError as error:
            self.message.emit(error.sentence)
            return
        self.running_changed.emit(True)
        self.progress_changed.emit(0, len(STEPS))
        self.message.emit("Reading the circuits from the weights...")
        self._slot.submit(read_circuits, self.hub.model, self.samples, self.seed, n_positions)

    def cancel(self) -> None:
        self._slot.cancel()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        return self._slot.shutdown(timeout_ms)

    def _on_progress(self, done_total: tuple[int, int]) -> None:
        done, total = done_total
        self.progress_changed.emit(done, total)
        if done < total:
            self.message.emit(f"Step {done + 1} of {total}: {STEPS[done]}...")

    def _on_result(self, found: tuple) -> None:
        heads, positions, composition, baseline, unlinked, ranking = found
        tokens = tuple(self.hub.task.vocabulary.tokens(range(self.hub.model.config.vocab_size)))
        self.frame = CircuitsFrame(
            tokens,
            heads,
            positions,
            composition,
            baseline,
            unlinked,
            self._model_name(),
            self.hub.task.anchored,
            self.hub.model.config.positional,
            ranking,
        )
        self.frame_changed.emit(self.frame)
        self._end(
            f"The {self.frame.model_name}: {len(heads)} heads over {len(tokens)} tokens and "
            f"{positions[0].scores.shape[0] if positions else 0} positions; {len(composition)} composition links, "
            f"{self.frame.standing_out} stand out (above 95 % of random heads' and of unlinked heads' scores)."
        )

    def _model_name(self) -> str:
        """The task's model and where it came from: "reverse model (reverse_rope.pt)"."""
        origin = self.hub.origin
        return f"{self.hub.task.task} model" + (f" ({origin})" if origin else "")

    def _end(self, text: str) -> None:
        self.running_changed.emit(False)
        self.progress_changed.emit(0, 0)
        self.message.emit(text)

    def _on_model_changed(self) -> None:
        if self._generation == self.hub.generation:  # the same weights on another device: the result still holds
            return
        self._generation = self.hub.generation
        if self._slot.running:  # its result would be for the model gone: dropped, and the reason said below
            self._slot.discard()
            self.running_changed.emit(False)
            self.progress_changed.emit(0, 0)
        if self.frame is not None:
            self.frame = None
            self.frame_changed.emit(None)
        self.message.emit("The model changed: " + PRESS)
