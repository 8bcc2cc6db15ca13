"""Beam search and sampling in the decoder stepper: settings, a cancellable run off the GUI thread, the result.

The search decodes exactly what the stepper decodes (the session's source with its padding, masks, head gates and
length limit, choosing among the task symbols and <eos>), so a hypothesis shown in the grids is the same sequence
with the same log-probabilities, and the numbers equal `attention-playground decode CKPT SOURCE --pads N --max-new M`
for default masks and heads. A sample's tree edges are the log-probabilities the sampler saw, so they add up to the
sample's score exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch
from PySide6.QtCore import QObject, Signal

from core_model import MaskSpec
from core_model.beam_search import MAX_BEAM_WIDTH, ROOT, BeamNode, Hypothesis, beam_search
from core_model.inputs import encoder_input
from core_model.model import HeadGates, Seq2SeqTransformer
from core_model.sampling import MAX_SAMPLES, SamplingConfig, sample_decode
from core_model.tasks import max_source_len

from .playground import PlaygroundSession
from .worker_api import SlotFactory

log = logging.getLogger(__name__)
Mode = Literal["beam", "sample"]
KEY_PARTS = ("the model", "the source", "the padding", "the masks", "the task", "the heads switched off")  # of a key


@dataclass(frozen=True)
class BeamSettings:
    """What the controls set; sampling ignores `width`, beam search ignores the sampling fields."""

    mode: Mode = "beam"
    width: int = 3  # K; 1 is greedy
    temperature: float = 1.0
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1: off
    seed: int = 0
    samples: int = 5

    def __post_init__(self) -> None:
        if self.mode not in ("beam", "sample"):
            raise ValueError(f"mode must be 'beam' or 'sample', got {self.mode!r}")
        if not (1 <= self.width <= MAX_BEAM_WIDTH and 1 <= self.samples <= MAX_SAMPLES and self.top_k >= 0):
            raise ValueError(f"width must be 1 to {MAX_BEAM_WIDTH}, samples 1 to {MAX_SAMPLES}, top_k >= 0")
        self.sampling()  # temperature and top_p checked by SamplingConfig

    def sampling(self) -> SamplingConfig:
        return SamplingConfig(self.temperature, self.top_k or None, self.top_p if self.top_p < 1 else None)


@dataclass(frozen=True)
class SearchInputs:
    """A snapshot of what the stepper decodes, taken on the GUI thread when Run is pressed."""

    model: Seq2SeqTransformer
    src: torch.Tensor  # (1, S) with the shown padding
    masks: MaskSpec
    gates: HeadGates | None
    max_new: int
    labels: tuple[str, ...]  # token label per id
    expected: tuple[str, ...]  # the task's expected output + <eos>
    key: tuple  # what makes a result stale when it changes, one entry per KEY_PARTS


@dataclass(frozen=True)
class BeamOutcome:
    """One finished search as plain data: hypotheses best first, the tree, greedy and the expected output."""

    settings: BeamSettings
    hypotheses: tuple[Hypothesis, ...]
    nodes: tuple[BeamNode, ...]
    greedy: Hypothesis
    labels: tuple[str, ...]
    expected: tuple[str, ...]
    key: tuple = field(repr=False, default=())

    def words(self, tokens: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(self.labels[t] for t in tokens)

    def path(self, node: int) -> tuple[int, ...]:
        """Node indices from the first token to `node`."""
        out = []
        while node != ROOT:
            out.append(node)
            node = self.nodes[node].parent
        return tuple(reversed(out))

    def tokens_to(self, node: int) -> tuple[int, ...]:
        return tuple(self.nodes[i].token for i in self.path(node))


def sample_tree(hyps: tuple[Hypothesis, ...]) -> tuple[tuple[BeamNode, ...], tuple[Hypothesis, ...]]:
    """Samples merged into a prefix tree (all nodes kept), so they draw and click like beam hypotheses."""
    nodes: list[BeamNode] = []
    index: dict[tuple[int, ...], int] = {}
    out = []
    for hyp in hyps:
        parent, score = ROOT, 0.0
        for step, (tok, lp) in enumerate(zip(hyp.tokens, hyp.token_log_probs)):
            prefix = hyp.tokens[: step + 1]
            score += lp
            if prefix not in index:
                nodes.append(BeamNode(parent, tok, step, lp, score, True))
                index[prefix] = len(nodes) - 1
            parent = index[prefix]
        out.append(Hypothesis(hyp.tokens, hyp.log_prob, hyp.finished, parent, hyp.token_log_probs))
    return tuple(nodes), tuple(out)


def what_changed(old: tuple, new: tuple) -> str:
    """Name what differs between two search keys: "The model", "The source and the masks"."""
    parts = [name for name, a, b in zip(KEY_PARTS, old, new) if a != b] or ["the input"]
    text = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return text[0].upper() + text[1:]


def run_search(inputs: SearchInputs, settings: BeamSettings, on_step: Callable[[int], None]) -> BeamOutcome:
    """The job: greedy for comparison, then the beam search or the samples (worker thread, no Qt)."""
    m, src, n_tokens = inputs.model, inputs.src, len(inputs.labels)  # labels: one per task vocabulary id
    with torch.no_grad():
        greedy = beam_search(
            m, src, 1, inputs.max_new, inputs.masks, inputs.gates, lambda _pos: on_step(0), n_tokens
        ).best  # cancellable; progress counts the search only
        if settings.mode == "beam":
            result = beam_search(m, src, settings.width, inputs.max_new, inputs.masks, inputs.gates, on_step, n_tokens)
            nodes, hyps = result.nodes, result.hypotheses
        else:
            gen = torch.Generator(device=src.device).manual_seed(settings.seed)
            drawn = sample_decode(
                m,
                src,
                settings.samples,
                settings.sampling(),
                gen,
                inputs.max_new,
                inputs.masks,
                inputs.gates,
                on_step,
                n_tokens,
            )
            nodes, hyps = sample_tree(tuple(sorted(drawn, key=lambda h: -h.log_prob)))
    return BeamOutcome(settings, hyps, nodes, greedy, inputs.labels, inputs.expected, inputs.key)


class BeamState(QObject):
    """Runs a search on request and shows a chosen hypothesis by driving the stepper (reset, then force)."""

    outcome_changed = Signal(object)  # BeamOutcome or None
    running_changed = Signal(bool)
    progressed = Signal(int, int)  # position, limit
    message_changed = Signal(str)
    shown_changed = Signal(int)  # the node whose hypothesis the grids show (ROOT: none)
    settings_changed = Signal(object)  # BeamSettings: the state owns them, the panel shows them

    def __init__(self, session: PlaygroundSession, make_slot: SlotFactory) -> None:
        super().__init__()
        self.session = session
        self._limit: int = 0  # the newest search's length limit
        self._asked: tuple = ()  # and its key (what it was run for)
        # one search at a time; a search whose inputs changed meanwhile (model, source, masks, …) is overtaken
        self._search = make_slot("The search", self, context=self._key)
        self._search.overtaken.connect(
            lambda: self._ended(f"{what_changed(self._asked, self._key())} changed during the search: press Run again")
        )
        self._search.progressed.connect(lambda pos: self.progressed.emit(pos, self._limit))
        self._search.finished.connect(self._finished)
        self._search.failed.connect(self._ended)
        self._search.cancelled.connect(lambda: self._ended("Cancelled"))
        self.settings = BeamSettings()
        self.outcome: BeamOutcome | None = None
        self.shown = ROOT
        session.frame_changed.connect(self._check_stale)

    @property
    def running(self) -> bool:
        return self._search.running

    def set_settings(self, settings: BeamSettings) -> None:
        """The settings the next search runs with (a running one keeps those it started with)."""
        if settings != self.settings:
            self.settings = settings
            self.settings_changed.emit(settings)

    def inputs(self) -> SearchInputs:
        """What the stepper decodes now (GUI thread)."""
        s = self.session
        vocab, hub = s.vocabulary, s.hub
        ids = encoder_input(vocab.encode(s.source_text), s.extra_pads, anchored=hub.task.anchored)
        return SearchInputs(
            hub.model,
            torch.tensor([ids], device=hub.device),
            s.masks,
            s.head_gates(),
            max_source_len(hub.config.max_len),
            tuple(vocab.token(i) for i in range(len(vocab))),
            tuple(vocab.tokens(s.expected_ids())) + ("<eos>",),
            self._key(),
        )

    def _key(self) -> tuple:
        """What a search's result depends on besides its settings: the model, source, pads, masks, task, heads off."""
        s = self.session
        off = tuple((k, tuple(zip(*(~v).nonzero()))) for k, v in sorted(s.gates().items()))  # (layer, head) pairs
        return (s.hub.generation, s.source_text, s.extra_pads, s.masks, s.task, off)

    def run(self) -> None:
        """Start a search with the current settings (ignored while one runs)."""
        if self._search.running:
            return
        if self.session.last_frame is None:
            self.message_changed.emit("Type a source sequence first")
            return
        inputs, settings = self.inputs(), self.settings
        self._limit, self._asked = inputs.max_new, inputs.key
        self._search.submit(lambda state: run_search(inputs, settings, state.step))
        self.running_changed.emit(True)
        self.message_changed.emit("Searching…")

    def cancel(self) -> None:
        self._search.cancel()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Cancel the search and wait for it (closing the window): no job outlives the objects it reports to."""
        return self._search.shutdown(timeout_ms)

    def _ended(self, message: str) -> None:
        self.running_changed.emit(False)
        self.message_changed.emit(message)

    def _finished(self, outcome: BeamOutcome) -> None:
        self.outcome, self.shown = outcome, ROOT
        n = len(outcome.hypotheses)
        self._ended(
            f"{n} hypotheses, {len(outcome.nodes)} nodes expanded"
            if outcome.settings.mode == "beam"
            else f"{n} samples (seed {outcome.settings.seed}), "
            f"{len({h.tokens for h in outcome.hypotheses})} different sequences"
        )
        self.outcome_changed.emit(outcome)
        self.shown_changed.emit(ROOT)

    def show_node(self, node: int) -> None:
        """Drive the stepper through the node's hypothesis so the grids show its decoder attention."""
        if self.outcome is None or not 0 <= node < len(self.outcome.nodes):
            return
        if self._say_if_stale():
            return
        if self.session.target_prefix.strip():
            self.message_changed.emit("Clear the target prefix to show a hypothesis (the search starts at <bos>)")
            return
        self.shown = node
        self.session.reset_decoding()
        for token in self.outcome.tokens_to(node):
            self.session.force(token)
        self.shown_changed.emit(node)

    def _check_stale(self, _frame: object) -> None:
        if self.outcome is not None and not self._search.running:
            self._say_if_stale()

    def _say_if_stale(self) -> bool:
        """Say what changed since the shown search (the model, the source, ...); True when something did."""
        key = self._key()
        if self.outcome is None or self.outcome.key == key:
            return False
        self.message_changed.emit(f"{what_changed(self.outcome.key, key)} changed since this search: press Run again")
        return True
