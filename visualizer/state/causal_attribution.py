"""The Causal tab's per-source analyses: the logit lens and attribution beside attention, for one source.

Both read the model's own greedy output, teacher-forced, exactly as `attention-playground lens` and `attribute` do,
so the tab shows what the CLI prints. The work (a greedy decode, the lens, integrated gradients, occlusion, the
attention views) runs on a copy of the model in a task slot, reporting progress per output position.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, Signal

from core_model.analysis_budget import BudgetError, Knobs
from core_model.attribution import MAX_IG_STEPS, Attribution
from core_model.logit_lens import LogitLens
from core_model.model import Seq2SeqTransformer
from core_model.source_analysis import SourceAnalysis, analyse_source, check_source_analysis
from core_model.tasks import TaskSpec, max_source_len

from .analysis import AnalysisState
from .model_hub import ModelHub
from .snapshots import InputError
from .source_check import check_source
from .worker_api import SlotFactory, TaskStateApi

DEFAULT_IG_STEPS = 32  # the CLI's default
SATURATED = 0.05  # gradient x delta below this share of occlusion's largest magnitude: saturated
ROUGH_IG = 0.10  # a completeness gap above this share of f(x) - f(baseline): too few integrated-gradient steps
MODEL_CHANGED = "The model changed while this ran: press Analyse again for this model."
KNOBS = Knobs(source="the source", ig_steps="IG steps")  # what a refusal over the budget asks to lower


def ig_gap_and_span(attribution: Attribution) -> tuple[float, float]:
    """The largest completeness gap and the largest f(x) − f(baseline), over the output positions."""
    gap = float(np.abs(attribution.completeness_gap).max(initial=0.0))
    return gap, float(np.abs(attribution.f_input - attribution.f_baseline).max(initial=0.0))


@dataclass(frozen=True)
class AttributionFrame:
    """One source's lens, attributions, attention views and agreement, with the tokens that label them."""

    text: str
    source_tokens: tuple[str, ...]  # encoder input, anchors included
    output_tokens: tuple[str, ...]  # the model's greedy output, <eos> included
    lens: LogitLens
    attribution: Attribution
    views: dict[str, np.ndarray]  # attention view name -> (T, S)
    agreement: dict[str, dict[str, list[float | None]]]  # method -> view -> rho per output position
    top1: dict[str, dict[str, list[bool | None]]]  # method -> view -> same top symbol, per output position

    @property
    def ig_gap_share(self) -> float:
        """The largest completeness gap as a share of the largest f(x) − f(baseline): how much of the change
        integrated gradients leave unexplained (0 = exact; a Riemann sum with few steps leaves more)."""
        gap, span = ig_gap_and_span(self.attribution)
        return gap / span if span > 0 else 0.0

    @property
    def rough_ig(self) -> bool:
        return self.ig_gap_share > ROUGH_IG

    @property
    def saturated(self) -> bool:
        """Gradient x delta all but vanishes where occlusion says the source matters: the model is saturated."""
        occlusion = float(np.abs(self.attribution.occlusion).max(initial=0.0))
        return occlusion > 0 and float(np.abs(self.attribution.gradient_x_delta).max()) < SATURATED * occlusion


@dataclass(frozen=True)
class AnalysisInputs:
    """What one run analyses, taken on the GUI thread."""

    model: Seq2SeqTransformer
    task: TaskSpec
    ids: list[int]
    ig_steps: int


def analyse_copy(state: TaskStateApi, inputs: AnalysisInputs) -> SourceAnalysis:
    """A task: core_model's analyse_source with the lens, on a copy of the model taken on the pool thread (a later
    weight load cannot reach it); progress per output position, and Cancel stops a long decoding too."""
    model = copy.deepcopy(inputs.model).eval()

    def progress(done: int, total: int) -> None:
        state.check()
        state.report((done, total))

    return analyse_source(
        model,
        inputs.task,
        inputs.ids,
        inputs.ig_steps,
        lens=True,
        knobs=KNOBS,
        decoding=lambda _written, _most: state.check(),
        progress=progress,
    )


class AttributionState(AnalysisState):
    """The source and IG steps; `run` analyses them in the background; a new model clears the result.
    frame_changed carries an AttributionFrame | None."""

    input_error = Signal(object)  # snapshots.InputError | None, for the source field
    CLEARED = "The model changed: press Analyse to analyse this model."
    DROPPED = MODEL_CHANGED

    def __init__(self, hub: ModelHub, make_slot: SlotFactory, parent: QObject | None = None) -> None:
        super().__init__(hub, make_slot, "Attribution", parent)
        self.ig_steps = DEFAULT_IG_STEPS
        self.frame: AttributionFrame | None = None
        self._asked = ""  # the source of the latest run, as typed

    def run(self, text: str, ig_steps: int | None = None) -> bool:
        """Check the source and start (with `ig_steps`, else the last used); False (and input_error) when it cannot
        be analysed."""
        if ig_steps is not None:
            self.ig_steps = max(1, min(MAX_IG_STEPS, int(ig_steps)))
        error, ids = check_source(text, self.hub.task, max_source_len(self.hub.model.config.max_len))
        if error is None:
            error = self._over_budget(ids)
        self.input_error.emit(error)
        if error is not None:
            return False
        self._asked = text
        status = "Decoding, then the lens, integrated gradients and occlusion..."
        self._start(status, analyse_copy, AnalysisInputs(self.hub.model, self.hub.task, ids, self.ig_steps))
        return True

    def _over_budget(self, ids: list[int]) -> InputError | None:
        """The source field's error when the lens and attribution of `ids` are over the analysis budget: the check
        `attention-playground attribute` makes, so the tab never starts what the command refuses."""
        task, config = self.hub.task, self.hub.model.config
        try:
            check_source_analysis(config, task, ids, self.ig_steps, KNOBS)
        except BudgetError as error:
            return InputError("source", error.sentence)
        return None

    def _frame_for(self, found: SourceAnalysis) -> AttributionFrame:
        vocab = self.hub.task.vocabulary
        assert found.lens is not None  # asked for by analyse_copy
        return AttributionFrame(
            self._asked,
            tuple(vocab.tokens(found.source)),
            tuple(vocab.tokens(found.output)),
            found.lens,
            found.attribution,
            found.views,
            found.agreement,
            found.top1,
        )

    def _summary(self, frame: AttributionFrame) -> str:
        gap, span = ig_gap_and_span(frame.attribution)
        return (
            f"Integrated gradients with {frame.attribution.ig_steps} steps: largest completeness gap {gap:.3f} nats, "
            f"against f(x) − f(baseline) of up to {span:.2f} (more steps shrink the gap)."
        )
