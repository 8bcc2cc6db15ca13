"""Token vocabulary: three specials then one-character task symbols."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ("<pad>", "<bos>", "<eos>")
N_SPECIALS = len(SPECIALS)  # ids below this are specials; a vocabulary is N_SPECIALS + its symbols
SYMBOL_POOL = "0123456789abcdefghijklmnopqrstuvwxyz"


def _check_n_symbols(n_symbols: int) -> None:
    if not 1 <= n_symbols <= len(SYMBOL_POOL):
        raise ValueError(f"n_symbols must be in [1, {len(SYMBOL_POOL)}], got {n_symbols}")


class VocabularyError(ValueError):
    """Input text holds a symbol the vocabulary does not know.

    `symbol` is the offending character, `position` its 0-based index in the text as typed (whitespace counts),
    `allowed` the vocabulary's symbols in id order, so a front end can point at the character and list choices.
    """

    def __init__(self, symbol: str, position: int, allowed: str) -> None:
        self.symbol, self.position, self.allowed = symbol, position, allowed
        super().__init__(self._text(position))

    def counted_from_one(self) -> str:
        """The same message with the position counted from 1, as the command line and the notebook report it."""
        return self._text(self.position + 1)

    def _text(self, position: int) -> str:
        return f"unknown symbol {self.symbol!r} at position {position}; allowed: {' '.join(self.allowed)}"


@dataclass(frozen=True)
class Vocabulary:
    """Maps text symbol by symbol; ids 0..2 are <pad>, <bos>, <eos>, task symbols follow."""

    symbols: str = SYMBOL_POOL[:10]

    def __post_init__(self) -> None:
        if not self.symbols or len(set(self.symbols)) != len(self.symbols):
            raise ValueError(f"symbols must be non-empty and distinct, got {self.symbols!r}")
        if any(s.isspace() for s in self.symbols):
            raise ValueError("symbols may not contain whitespace (spaces separate symbols in text)")

    @classmethod
    def of_size(cls, n_symbols: int) -> Vocabulary:
        """The first n symbols of 0-9a-z (one shared, immutable instance per size: the GUI asks on every key)."""
        _check_n_symbols(n_symbols)
        if cls is not Vocabulary:
            return cls(SYMBOL_POOL[:n_symbols])
        return _of_size(n_symbols)

    @staticmethod
    def size_for(n_symbols: int) -> int:
        """vocab_size a model needs for the first n symbols of the pool: the specials come first."""
        _check_n_symbols(n_symbols)
        return N_SPECIALS + n_symbols

    def __len__(self) -> int:
        return N_SPECIALS + len(self.symbols)

    @property
    def symbol_ids(self) -> range:
        return range(N_SPECIALS, len(self))

    def encode(self, text: str) -> list[int]:
        """Symbols to ids; whitespace is ignored; an unknown symbol raises VocabularyError (position in text).

        One dict lookup per symbol at C speed (the GUI encodes the source on every keystroke); only text with an
        unknown symbol is walked again, to find where it stands.
        """
        try:
            return list(map(self._ids.__getitem__, "".join(text.split())))  # split(): the same whitespace as isspace
        except KeyError:
            pos, ch = next((p, c) for p, c in enumerate(text) if not c.isspace() and c not in self._ids)
            raise VocabularyError(ch, pos, self.symbols) from None

    def token(self, idx: int) -> str:
        """Printable name of one id; an id outside the vocabulary is named `<unk:ID>` rather than refused.

        A model's vocabulary may be larger than its task's, so its output can hold ids this vocabulary has no
        symbol for; showing them keeps every display working.
        """
        idx = int(idx)
        return self._names[idx] if 0 <= idx < len(self._names) else unknown_token(idx)

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """Printable names of many ids (one tuple lookup each: the GUI names every position on every keystroke)."""
        names, ids = self._names, list(map(int, ids))
        if ids and not 0 <= min(ids) <= max(ids) < len(names):  # a negative index would read from the end
            return [names[i] if 0 <= i < len(names) else unknown_token(i) for i in ids]
        return list(map(names.__getitem__, ids))

    @functools.cached_property
    def _names(self) -> tuple[str, ...]:
        return (*SPECIALS, *self.symbols)

    @functools.cached_property
    def _ids(self) -> dict[str, int]:
        return {symbol: i + N_SPECIALS for i, symbol in enumerate(self.symbols)}

    def decode(self, ids: Sequence[int] | Iterable[int]) -> str:
        """Ids to text: stops at <eos>, skips <pad> and <bos>; an id outside the vocabulary reads `<unk:ID>`."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS:
                break
            if i >= N_SPECIALS:
                out.append(self.token(i))
        return "".join(out)


def unknown_token(idx: int) -> str:
    """The printable name of an id no vocabulary symbol has, e.g. `<unk:30>`."""
    return f"<unk:{idx}>"


@functools.cache
def _of_size(n_symbols: int) -> Vocabulary:
    """Vocabulary.of_size's shared instances (frozen, so sharing is safe)."""
    return Vocabulary(SYMBOL_POOL[:n_symbols])
