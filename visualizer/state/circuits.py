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
from dataclasses import dataclass

from PySide6.QtCore import QObject

from core_model.analysis_budget import BudgetError, Knobs, check_circuits
from core_model.circuits import HeadCircuit, HeadRef
from core_model.circuits_report import (
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    STEPS,
    CircuitsReport,
    LinkRanking,
    link_bar,
    link_ratio,
    rank_links,
    read_circuits,
)
from core_model.head_composition import CompositionBaseline, CompositionScore, CompositionType, UnlinkedScores
from core_model.model import Seq2SeqTransformer
from core_model.position_circuits import PositionCircuit, default_positions

from .analysis import AnalysisState
from .model_hub import ModelHub
from .worker_api import SlotFactory, TaskStateApi

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
        return link_bar(self.baseline, self.unlinked, kind)

    def above_noise(self, link: CompositionScore) -> bool:
        """Above both yardsticks' 95th percentiles: 1 random pair in 20, 1 unlinked trained pair in 20, get there."""
        return link.score > self.bar(link.type)

    def ratio(self, link: CompositionScore) -> float:
        """The score as a multiple of what random heads of the same shapes give for its type."""
        return link_ratio(link, self.baseline)

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


def read_copy(
    state: TaskStateApi, model: Seq2SeqTransformer, samples: int, seed: int, n_positions: int
) -> CircuitsReport:
    """A task: core_model's read_circuits on a copy of `model` taken on the pool thread (a later weight load cannot
    reach it), the links ranked there too; progress and cancel between its steps."""
    model = copy.deepcopy(model).eval()
    return read_circuits(model, n_positions, samples, seed, rank=True, progress=lambda *done: state.step(done))


class CircuitsState(AnalysisState):
    """`compute` reads the hub's model in the background; a new model clears the result. frame_changed carries a
    CircuitsFrame | None."""

    CLEARED = "The model changed: " + PRESS
    DROPPED = "The model changed while this ran: " + PRESS
    IDLE_CLEARED = "The model changed: " + PRESS

    def __init__(self, hub: ModelHub, make_slot: SlotFactory, parent: QObject | None = None) -> None:
        super().__init__(hub, make_slot, "Reading the circuits", parent)
        self.samples, self.seed = DEFAULT_SAMPLES, DEFAULT_SEED
        self.frame: CircuitsFrame | None = None

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
        model, total = self.hub.model, len(STEPS)
        status = "Reading the circuits from the weights..."
        self._start(status, read_copy, model, self.samples, self.seed, n_positions, total=total)

    def _progress_text(self, done: int, total: int) -> str:
        return f"Step {done + 1} of {total}: {STEPS[done]}..." if done < total else ""

    def _frame_for(self, report: CircuitsReport) -> CircuitsFrame:
        tokens = tuple(self.hub.task.vocabulary.tokens(range(self.hub.model.config.vocab_size)))
        return CircuitsFrame(
            tokens,
            report.heads,
            report.positions,
            report.composition,
            report.baseline,
            report.unlinked,
            self._model_name(),
            self.hub.task.anchored,
            self.hub.model.config.positional,
            report.ranking,
        )

    def _summary(self, frame: CircuitsFrame) -> str:
        return (
            f"The {frame.model_name}: {len(frame.heads)} heads over {len(frame.tokens)} tokens and "
            f"{frame.positions[0].scores.shape[0] if frame.positions else 0} positions; {len(frame.composition)} "
            f"composition links, {frame.standing_out} stand out (above 95 % of random heads' and of unlinked heads' "
            "scores)."
        )

    def _model_name(self) -> str:
        """The task's model and where it came from: "reverse model (reverse_rope.pt)"."""
        origin = self.hub.origin
        return f"{self.hub.task.task} model" + (f" ({origin})" if origin else "")
