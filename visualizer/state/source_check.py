"""The source field's rules: which text becomes token ids, and the one-line message when it cannot."""
from __future__ import annotations

from core_model import Vocabulary, VocabularyError
from core_model.tasks import TaskSpec

from .snapshots import InputError

DEFAULT_SOURCE = TaskSpec().default_source()  # "0123456789"


def check_source(text: str, vocabulary: Vocabulary, limit: int) -> tuple[InputError | None, list[int]]:
    """(None, ids) for a usable source of at most `limit` symbols, else (the error to show, [])."""
    if len(text) > 4 * limit + 64:  # cheap refusal of pasted megabytes before looking at each symbol
        return InputError("source", f"Input is too long ({len(text):,} characters); at most {limit} symbols "
                          "fit this model"), []
    try:
        ids = vocabulary.encode(text)
    except VocabularyError as exc:
        return InputError("source", f"Unknown symbol {exc.symbol!r} at position {exc.position + 1}. "
                          f"Allowed: {' '.join(exc.allowed)} (spaces are ignored)", exc.position), []
    if not ids:
        return InputError("source", f"Type a source sequence, e.g. {DEFAULT_SOURCE}"), []
    if len(ids) > limit:
        return InputError("source", f"Input is too long ({len(ids)} symbols); at most {limit} fit this model"), []
    return None, ids
