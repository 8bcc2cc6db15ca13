"""Tasks that count or compare the whole source: histogram, most frequent symbol, dedupe.

No output here can be found by position alone: each one depends on which symbols stand elsewhere in the source, so
a head that solves them attends by content (to every copy of a symbol), not along a diagonal.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from .task import Task, Truth, copied_reads, holding
from .task_rearrange import cycled, pool, repeated_symbols, runs_draw
from .vocab import SYMBOL_POOL

LETTERS = SYMBOL_POOL[10:]  # histogram's source symbols: letters, so they never look like its counts
COUNTS = SYMBOL_POOL[1:10]  # histogram's outputs: a count of 1 to 9, one digit each


def letters(n_symbols: int) -> str:
    return LETTERS[:n_symbols]


@dataclass(frozen=True)
class Histogram(Task):
    """Each position's symbol's count in the whole source (RASP's `hist`), written as one digit."""

    def source_alphabet(self, n_symbols: int) -> str:
        return letters(n_symbols)

    def target_alphabet(self, n_symbols: int) -> str:
        return COUNTS

    def length_rule(self, n_symbols: int) -> str:
        return f"histogram takes sources of 1 to {len(COUNTS)} symbols (a count is one digit)"

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return "".join(rng.choices(letters(n_symbols), k=length))

    def draw_hard(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return runs_draw(rng, letters(n_symbols), length)

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """Every count the same (one symbol; all distinct), and two symbols whose counts differ by one."""
        alphabet = letters(n_symbols)
        distinct = (alphabet[:length],) if len(alphabet) >= length else ()
        return repeated_symbols(alphabet, length) + distinct

    def example(self, n_symbols: int, length: int) -> str:
        return cycled(letters(n_symbols), length)

    def target(self, source: str, n_symbols: int) -> str:
        counts = Counter(source)
        return "".join(SYMBOL_POOL[counts[symbol]] for symbol in source)

    def reads(self, source: str, n_symbols: int) -> Truth:
        return tuple(holding(source, symbol) for symbol in source)  # the positions it counts: its own symbol's

    def depends(self, source: str, n_symbols: int) -> Truth:
        everything = tuple(range(len(source)))  # any position can turn into, or stop being, this symbol
        return tuple(everything for _ in source)


@dataclass(frozen=True)
class MostFrequent(Task):
    """The symbol that occurs most often; on a tie, the one first in the alphabet."""

    def source_alphabet(self, n_symbols: int) -> str:
        return pool(n_symbols)

    def target_alphabet(self, n_symbols: int) -> str:
        return pool(n_symbols)

    def longest_target(self, length: int, n_symbols: int) -> int:
        return 1

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return "".join(rng.choices(pool(n_symbols), k=length))

    def draw_hard(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return rng.choice(self.adversarial(n_symbols, length) + (runs_draw(rng, pool(n_symbols), length),))

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """Ties (the rule decides), a late winner by one, and a winner that never stands first."""
        alphabet = pool(n_symbols)
        if len(alphabet) == 1:
            return (alphabet * length,)
        low, high = alphabet[0], alphabet[-1]
        tie = cycled(high + low, length)  # equal counts (even lengths): the alphabet's first wins
        late = low * ((length - 1) // 2) + high * (length - (length - 1) // 2)  # the later symbol, by one
        spread = cycled(alphabet, length)
        return (tie, late, spread, *repeated_symbols(alphabet, length))

    def target(self, source: str, n_symbols: int) -> str:
        counts = Counter(source)
        best = max(counts.values())
        return min((symbol for symbol in counts if counts[symbol] == best), key=SYMBOL_POOL.index)

    def reads(self, source: str, n_symbols: int) -> Truth:
        return copied_reads(source, self.target(source, n_symbols))

    def depends(self, source: str, n_symbols: int) -> Truth:
        return (tuple(range(len(source))),)


@dataclass(frozen=True)
class Dedupe(Task):
    """Each symbol's first occurrence, in source order."""

    def source_alphabet(self, n_symbols: int) -> str:
        return pool(n_symbols)

    def target_alphabet(self, n_symbols: int) -> str:
        return pool(n_symbols)

    def longest_target(self, length: int, n_symbols: int) -> int:
        return min(length, n_symbols)

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return "".join(rng.choices(pool(n_symbols), k=length))

    def draw_hard(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return runs_draw(rng, pool(n_symbols), length)

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """Nothing repeats, everything repeats, and a pattern that comes back (only its first pass is output)."""
        alphabet = pool(n_symbols)
        return (cycled(alphabet, length), *repeated_symbols(alphabet, length), cycled(alphabet[:3], length))

    def example(self, n_symbols: int, length: int) -> str:
        alphabet = pool(n_symbols)
        return cycled(alphabet[: max(1, min(len(alphabet), length // 2))], length)

    def firsts(self, source: str) -> tuple[int, ...]:
        """Where each output symbol first stands."""
        return tuple(j for j, symbol in enumerate(source) if symbol not in source[:j])

    def target(self, source: str, n_symbols: int) -> str:
        return "".join(source[j] for j in self.firsts(source))

    def reads(self, source: str, n_symbols: int) -> Truth:
        return copied_reads(source, self.target(source, n_symbols))

    def depends(self, source: str, n_symbols: int) -> Truth:
        # a symbol before the first occurrence could have been new (shifting the output) or this symbol itself;
        # nothing after it can change what was first
        return tuple(tuple(range(j + 1)) for j in self.firsts(source))
