"""Tasks whose output copies source positions in an order fixed by the layout: rotate, interleave, copy-memory.

Each output symbol is the symbol at one source position (`picks`), so the ground truth is simple and exact: the
output reads every position holding its symbol (ties count) and depends on the one position it copies. What the
learner sees is the order: a diagonal shifted and wrapped (rotate), two interleaved diagonals of half the slope
(interleave), a diagonal that ends before the padding of blanks (copy-memory).
"""

from __future__ import annotations

import random
from abc import abstractmethod
from dataclasses import dataclass

from .task import Task, Truth, copied_reads
from .vocab import SYMBOL_POOL

BLANK = "_"  # copy-memory's delay symbol


def pool(n_symbols: int) -> str:
    """The first n symbols of 0-9a-z: the alphabet of every task over free symbols (ids as Vocabulary.of_size)."""
    return SYMBOL_POOL[:n_symbols]


def cycled(symbols: str, length: int) -> str:
    """`symbols` repeated or cut to `length` ("0120120" for "012" and 7)."""
    return (symbols * (length // max(1, len(symbols)) + 1))[:length]


def runs_draw(rng: random.Random, alphabet: str, length: int) -> str:
    """Runs of repeated symbols: each symbol repeats its left neighbour with a probability drawn per source (1 for a
    quarter of them, so one-symbol sources are common), as the copy family's vectorised `runs` draw does."""
    stay = 1.0 if rng.random() < 0.25 else rng.random()
    out = [rng.choice(alphabet)]
    for _ in range(length - 1):
        out.append(out[-1] if rng.random() < stay else rng.choice(alphabet))
    return "".join(out)


def repeated_symbols(alphabet: str, length: int) -> tuple[str, ...]:
    """Hard cases of free-symbol tasks: every one-symbol source, then two halves of two symbols, then the alphabet
    backwards: sources a position-blind or count-blind shortcut gets wrong."""
    ones = tuple(symbol * length for symbol in alphabet)
    halves = (alphabet[0] * (length // 2) + alphabet[-1] * (length - length // 2),) if len(alphabet) > 1 else ()
    backwards = (cycled(alphabet[::-1], length),) if len(alphabet) > 1 else ()
    return ones + halves + backwards


@dataclass(frozen=True)
class Rearrangement(Task):
    """A task whose output symbol i is a copy of the source symbol at picks(source)[i]."""

    @abstractmethod
    def picks(self, source: str) -> tuple[int, ...]:
        """The source position each output symbol copies."""

    def source_alphabet(self, n_symbols: int) -> str:
        return pool(n_symbols)

    def target_alphabet(self, n_symbols: int) -> str:
        return pool(n_symbols)

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return "".join(rng.choices(pool(n_symbols), k=length))

    def draw_hard(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return runs_draw(rng, pool(n_symbols), length)

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        return repeated_symbols(pool(n_symbols), length)

    def example(self, n_symbols: int, length: int) -> str:
        return cycled(pool(n_symbols), length)

    def target(self, source: str, n_symbols: int) -> str:
        return "".join(source[p] for p in self.picks(source))

    def reads(self, source: str, n_symbols: int) -> Truth:
        return copied_reads(source, self.target(source, n_symbols))

    def depends(self, source: str, n_symbols: int) -> Truth:
        return tuple((p,) for p in self.picks(source))


@dataclass(frozen=True)
class Rotate(Rearrangement):
    """Rotate left by k: output i is source symbol (i + k) mod n."""

    k: int = 1

    def picks(self, source: str) -> tuple[int, ...]:
        n = len(source)
        return tuple((i + self.k) % n for i in range(n))


@dataclass(frozen=True)
class Interleave(Rearrangement):
    """The two halves zipped: x0 y0 x1 y1 ... for a source x0..x(m-1) y0..y(m-1)."""

    LENGTH_STEP = 2

    def length_rule(self, n_symbols: int) -> str:
        return "interleave needs two halves of equal length: an even number of symbols (2, 4, 6, ...)"

    def picks(self, source: str) -> tuple[int, ...]:
        m = len(source) // 2
        return tuple(i // 2 + (m if i % 2 else 0) for i in range(2 * m))


@dataclass(frozen=True)
class CopyMemory(Rearrangement):
    """Symbols, then a run of blanks as a delay; the output is the symbols."""

    def source_alphabet(self, n_symbols: int) -> str:
        return pool(n_symbols) + BLANK

    def length_rule(self, n_symbols: int) -> str:
        return f"copy_memory needs at least one symbol and one blank {BLANK!r}: 2 or more symbols"

    def grammar_problem(self, source: str, n_symbols: int) -> str | None:
        m = len(source.rstrip(BLANK))
        if m == 0 or m == len(source) or BLANK in source[:m]:
            return f"copy_memory needs symbols first, then a run of at least one blank {BLANK!r} (and nothing after)"
        return None

    def longest_target(self, length: int, n_symbols: int) -> int:
        return length - 1

    def picks(self, source: str) -> tuple[int, ...]:
        return tuple(range(len(source.rstrip(BLANK))))

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        m = rng.randint(1, length - 1)
        return "".join(rng.choices(pool(n_symbols), k=m)) + BLANK * (length - m)

    def draw_hard(self, rng: random.Random, n_symbols: int, length: int) -> str:
        m = rng.randint(1, length - 1)
        return runs_draw(rng, pool(n_symbols), m) + BLANK * (length - m)

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """The longest delay (one symbol), no delay to speak of (one blank), and repeated symbols before half blanks."""
        alphabet, half = pool(n_symbols), length // 2
        shortest = tuple(symbol + BLANK * (length - 1) for symbol in alphabet)
        longest = (cycled(alphabet, length - 1) + BLANK,)
        halves = tuple(source + BLANK * (length - half) for source in repeated_symbols(alphabet, half)) if half else ()
        return longest + shortest + halves

    def example(self, n_symbols: int, length: int) -> str:
        m = max(1, length // 2)
        return cycled(pool(n_symbols), m) + BLANK * (length - m)
