"""The source field's rules: which text becomes token ids, and the one-line message when it cannot."""

from __future__ import annotations

from core_model import Vocabulary, VocabularyError
from core_model.recipe import TrainedLengths
from core_model.tasks import TaskSpec

from .model_hub import ModelHub
from .snapshots import InputError

DEFAULT_SOURCE = TaskSpec().default_source()  # "0123456789"


def check_source(text: str, task: TaskSpec, limit: int) -> tuple[InputError | None, list[int]]:
    """(None, ids) for a source of at most `limit` symbols that `task` takes, else (the error to show, []).

    The task's rules in order: its source alphabet (the message lists it and marks the symbol), then the lengths
    it takes and its grammar (the message is the rule broken: an addition's '+', a bracket never closed).
    """
    if len(text) > 4 * limit + 64:  # cheap refusal of pasted megabytes before looking at each symbol
        return InputError(
            "source", f"Input is too long ({len(text):,} characters); at most {limit} symbols fit this model"
        ), []
    definition = task.definition
    alphabet = definition.source_alphabet(task.n_symbols)
    for position, symbol in enumerate(text):
        if not symbol.isspace() and symbol not in alphabet:
            return InputError(
                "source",
                f"Unknown symbol {symbol!r} at position {position + 1}; {task.task} reads only "
                f"{' '.join(alphabet)} (spaces are ignored)",
                position,
            ), []
    ids = task.vocabulary.encode(text)
    if not ids:
        example = definition.example(task.n_symbols, task.lengths()[0])
        return InputError("source", f"Type a source sequence, e.g. {example}"), []
    if len(ids) > limit:
        return InputError("source", f"Input is too long ({len(ids)} symbols); at most {limit} fit this model"), []
    problem = task.source_problem(ids)
    if problem is not None:
        return InputError("source", problem[:1].upper() + problem[1:]), []
    return None, ids


def check_prefix(text: str, vocabulary: Vocabulary, limit: int) -> tuple[InputError | None, list[int]]:
    """(None, ids) for a usable target prefix (empty is fine) of at most `limit` symbols, else (the error, [])."""
    try:
        ids = vocabulary.encode(text)
    except VocabularyError as exc:
        return InputError(
            "prefix",
            f"Target prefix: unknown symbol {exc.symbol!r} at position {exc.position + 1}. "
            f"Allowed: {' '.join(exc.allowed)}",
            exc.position,
        ), []
    if len(ids) > limit:
        return InputError("prefix", f"Target prefix is too long ({len(ids)} symbols; at most {limit})"), []
    return None, ids


def length_note(length: int, trained: TrainedLengths | None, described: str) -> tuple[str, str, bool]:
    """(line, tooltip, outside): how a source of `length` symbols stands to the lengths the model was trained on.

    A source outside them is still run (a note, never a refusal): wrong tokens there are the model's limit, not a bug.
    `described` is ModelHub.trained_lengths_text() ("untrained" or "unknown" when `trained` is None). The line does
    not change with every keystroke (the tooltip names the length): a new line costs a re-elided label per frame.
    """
    if trained is None:
        line = "untrained model" if described == "untrained" else "unknown (the model's file does not say)"
        return line, f"Trained lengths: {described}. This source has {length} symbols.", False
    low, high = trained
    span = f"{low}-{high}" if low != high else f"{low}"
    if low <= length <= high:
        return f"{span} symbols", f"The model was trained on sources of {span} symbols; this one has {length}.", False
    longer = length > high
    return (
        f"{span} symbols; this source is {'longer' if longer else 'shorter'}: expect mistakes",
        f"The model was trained on sources of {span} symbols; this one has {length}, "
        f"{'beyond' if longer else 'outside'} them. It still runs, but wrong tokens here show the limit of what "
        f"it learned, not a bug (the Length lab measures how accuracy falls with length).",
        True,
    )


class TrainedNote:
    """length_note for the hub's current model; its trained lengths are read once per model, not once per frame."""

    def __init__(self, hub: ModelHub) -> None:
        self.hub = hub
        self._generation: int | None = None
        self._trained: tuple[TrainedLengths | None, str] = (None, "unknown")

    def __call__(self, length: int) -> tuple[str, str, bool]:
        if self._generation != self.hub.generation:  # a new model, new weights or a new task
            self._generation = self.hub.generation
            self._trained = (self.hub.trained_lengths, self.hub.trained_lengths_text())
        return length_note(length, *self._trained)
