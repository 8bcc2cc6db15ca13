"""The Causal tab's patching model: a clean and a corrupted source, the patching run, and its result.

The numbers are core_model.patching's, on the same encoder inputs and expected outputs `attention-playground patch`
builds, so the tab shows what the CLI prints. The run is one batched pass on a copy of the model, in a task slot.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import QObject, Signal

from core_model.analysis_budget import BudgetError, Knobs
from core_model.config import ModelConfig
from core_model.model import Seq2SeqTransformer
from core_model.patching import PatchResult, labels_for
from core_model.source_patching import check_patch_sources, patch_sources
from core_model.tasks import TaskSpec, expected_output, max_source_len

from .analysis import AnalysisState
from .model_hub import ModelHub
from .source_check import check_source
from .worker_api import SlotFactory, TaskStateApi

MODEL_CHANGED = "The model changed while patching ran: press Patch again for this model."
KNOBS = Knobs(source="the sources")  # what a refusal over the budget asks to shorten


@dataclass(frozen=True)
class PatchFrame:
    """One finished run, with the tokens its tables are labelled by."""

    result: PatchResult
    clean: str  # the sources as typed
    corrupt: str
    source_tokens: tuple[str, ...]  # the clean encoder input (anchors included): the sweep's columns
    corrupt_tokens: tuple[str, ...]  # the corrupted encoder input
    clean_token: str  # the tokens the metric compares at result.position
    corrupt_token: str
    clean_output: tuple[str, ...] = ()  # the expected outputs the decoder is scored on (with <eos>)
    corrupt_output: tuple[str, ...] = ()


@dataclass(frozen=True)
class PatchInputError(Exception):
    """Why the sources or the position cannot be patched, and which field to mark."""

    field: Literal["clean", "corrupt", "position"]
    message: str
    position: int | None = None  # 0-based index of the offending character in the field's text

    def __str__(self) -> str:
        return self.message


def check_pair(
    task: TaskSpec, model_max_len: int, clean: str, corrupt: str, position: int | None
) -> tuple[list[int], list[int]]:
    """The two sources' symbol ids, or PatchInputError naming the field: unknown symbols, lengths, no difference."""
    limit = max_source_len(model_max_len)
    ids = []
    fields: tuple[tuple[Literal["clean", "corrupt"], str], ...] = (("clean", clean), ("corrupt", corrupt))
    for field, text in fields:
        error, found = check_source(text, task, limit)
        if error is not None:
            raise PatchInputError(field, error.message, error.position)
        ids.append(found)
    clean_ids, corrupt_ids = ids
    if len(clean_ids) != len(corrupt_ids):
        raise PatchInputError(
            "corrupt",
            f"The corrupted source has {len(corrupt_ids)} symbols; it needs {len(clean_ids)}, as the clean one",
        )
    clean_labels = labels_for(expected_output(task, clean_ids))
    corrupt_labels = labels_for(expected_output(task, corrupt_ids))
    if clean_labels == corrupt_labels:
        raise PatchInputError("corrupt", "Both sources have the same expected output: change a symbol that matters")
    if position is not None:
        if not 0 <= position < len(clean_labels):
            raise PatchInputError("position", f"Output positions run 0-{len(clean_labels) - 1}")
        if clean_labels[position] == corrupt_labels[position]:
            raise PatchInputError(
                "position",
                f"Both expected outputs have {task.vocabulary.token(clean_labels[position])} at position {position}: "
                "nothing to compare",
            )
    return clean_ids, corrupt_ids


def check_budget(task: TaskSpec, config: ModelConfig, clean_ids: list[int]) -> None:
    """PatchInputError on the clean field when patching these sources is over the analysis budget: the check
    `attention-playground patch` makes, in the window's words."""
    try:
        check_patch_sources(config, task, clean_ids, KNOBS)
    except BudgetError as error:
        raise PatchInputError("clean", error.sentence) from None


def _minus(value: float) -> str:
    """Three decimals with a typographic minus, as the formula beside it writes one."""
    return f"{value:.3f}".replace("-", "−")


def propose_corruption(text: str, task: TaskSpec) -> str:
    """A corruption of the source the task still takes and answers differently: the symbol nearest the middle
    changed (to the next of the task's source alphabet that works), else two neighbours swapped (a bracket string
    stays balanced only so); the text itself when nothing works."""
    chars = [c for c in text if not c.isspace()]
    try:
        ids = task.vocabulary.encode("".join(chars))
        answer = task.expected(ids) if ids else None
    except ValueError:  # not a source of this task: the plain next-symbol change, for the field to refuse
        answer = None
    if answer is None:
        return _next_symbol(chars, task) if chars else text
    for candidate in _corruptions(chars, task.definition.source_alphabet(task.n_symbols)):
        ids = task.vocabulary.encode(candidate)
        if task.source_problem(ids) is None and task.expected(ids) != answer:
            return candidate
    return "".join(chars)


def _corruptions(chars: list[str], alphabet: str) -> Iterator[str]:
    """One-symbol changes, positions from the middle outwards, each symbol's alphabet successors in turn; then
    swaps of two neighbours from the middle outwards."""
    middle = len(chars) // 2
    order = sorted(range(len(chars)), key=lambda i: (abs(i - middle), i))
    for i in order:
        start = alphabet.index(chars[i]) if chars[i] in alphabet else -1
        for step in range(1, len(alphabet)):
            yield "".join([*chars[:i], alphabet[(start + step) % len(alphabet)], *chars[i + 1 :]])
    for i in order:
        if i + 1 < len(chars) and chars[i] != chars[i + 1]:
            yield "".join([*chars[:i], chars[i + 1], chars[i], *chars[i + 2 :]])


def _next_symbol(chars: list[str], task: TaskSpec) -> str:
    """The middle symbol replaced by the next of the task's source alphabet (wrapping round)."""
    alphabet = task.definition.source_alphabet(task.n_symbols)
    middle = len(chars) // 2
    current = alphabet.index(chars[middle]) if chars[middle] in alphabet else -1
    return "".join([*chars[:middle], alphabet[(current + 1) % len(alphabet)], *chars[middle + 1 :]])


def patch_copy(
    state: TaskStateApi,
    model: Seq2SeqTransformer,
    task: TaskSpec,
    clean: list[int],
    corrupt: list[int],
    position: int | None,
) -> PatchResult:
    """A task: core_model's patch_sources on a copy of `model` taken on the pool thread (a later weight load cannot
    reach it); Cancel (or a new run) stops it between two passes."""
    model = copy.deepcopy(model).eval()
    return patch_sources(model, task, clean, corrupt, position, knobs=KNOBS, progress=lambda *_: state.check())


def marked(tokens: tuple[str, ...], position: int) -> str:
    """An output as one string with the token at `position` in brackets (<eos> only when it is the one marked)."""
    shown = tokens if position >= len(tokens) - 1 else tokens[:-1]
    return "".join(f"[{t}]" if i == position else t for i, t in enumerate(shown))


class PatchState(AnalysisState):
    """The two sources and the chosen position; `run` patches every head; errors name the field they belong to.
    frame_changed carries a PatchFrame | None."""

    input_error = Signal(object)  # InputError | None: shown under the field it names ("clean", "corrupt", "position")
    CLEARED = "The model changed: press Patch to patch this model."
    DROPPED = MODEL_CHANGED
    CANCELLED = ""

    def __init__(self, hub: ModelHub, make_slot: SlotFactory, parent: QObject | None = None) -> None:
        super().__init__(hub, make_slot, "Patching", parent)
        self.frame: PatchFrame | None = None
        self._asked = ("", "")  # the sources of the latest run, as typed

    def propose(self, clean: str) -> str:
        """A one-symbol corruption of `clean` for the hub's task."""
        return propose_corruption(clean, self.hub.task)

    def run(self, clean: str, corrupt: str, position: int | None = None) -> bool:
        """Check both sources and start patching; False (and input_error) when they cannot be patched."""
        try:
            clean_ids, corrupt_ids = check_pair(self.hub.task, self.hub.model.config.max_len, clean, corrupt, position)
            check_budget(self.hub.task, self.hub.model.config, clean_ids)
        except PatchInputError as error:
            self.input_error.emit(error)
            return False
        self.input_error.emit(None)
        self._asked = (clean, corrupt)
        status = "Patching every head and every encoder position..."
        self._start(status, patch_copy, self.hub.model, self.hub.task, clean_ids, corrupt_ids, position)
        return True

    def _frame_for(self, result: PatchResult) -> PatchFrame:
        clean, corrupt = self._asked
        vocab, task = self.hub.task.vocabulary, self.hub.task
        clean_ids, corrupt_ids = task.source_ids(vocab.encode(clean)), task.source_ids(vocab.encode(corrupt))
        return PatchFrame(
            result,
            clean,
            corrupt,
            tuple(vocab.tokens(clean_ids)),
            tuple(vocab.tokens(corrupt_ids)),
            vocab.token(result.clean_token),
            vocab.token(result.corrupt_token),
            tuple(vocab.tokens(labels_for(expected_output(task, vocab.encode(clean))))),
            tuple(vocab.tokens(labels_for(expected_output(task, vocab.encode(corrupt))))),
        )

    def _summary(self, frame: PatchFrame) -> str:
        result = frame.result
        return (
            f"Metric at output position {result.position} (0-based, in brackets below): "
            f"log p({frame.clean_token!r}) − log p({frame.corrupt_token!r}) = "
            f"{_minus(result.clean_metric)} clean, {_minus(result.corrupt_metric)} corrupted.\n"
            f"Expected outputs: {marked(frame.clean_output, result.position)} clean, "
            f"{marked(frame.corrupt_output, result.position)} corrupted."
        )
