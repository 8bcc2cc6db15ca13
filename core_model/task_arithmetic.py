"""Tasks that compute digits: addition with carries, and the running sum modulo n.

Their outputs are not copies of source symbols, so `reads` is what the algorithm adds at that step (the two digits
of one place and of the place below, whose digits give its carry; the one new term) and `depends` is everything
that reaches it through the carries or the running total. Both are written least significant first, the order in
which a decoder that emits left to right has every input of a digit before it writes the digit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .task import Positions, Task, Truth
from .task_rearrange import cycled, pool, repeated_symbols
from .vocab import SYMBOL_POOL

PLUS = "+"


def digits(n_symbols: int) -> str:
    """The digits of base n: 0-9 then a-z."""
    return pool(n_symbols)


def value(digit: str) -> int:
    return SYMBOL_POOL.index(digit)


@dataclass(frozen=True)
class Addition(Task):
    """a + b for two numbers of m digits in base n, written least significant digit first; the sum has m + 1."""

    def source_alphabet(self, n_symbols: int) -> str:
        return digits(n_symbols) + PLUS

    def target_alphabet(self, n_symbols: int) -> str:
        return digits(n_symbols)

    LENGTH_STEP = 2

    def length_rule(self, n_symbols: int) -> str:
        return "an addition needs one '+' between two numbers of equal length: 2m + 1 symbols (3, 5, 7, ...)"

    def grammar_problem(self, source: str, n_symbols: int) -> str | None:
        m = len(source) // 2
        if source.count(PLUS) != 1 or source[m] != PLUS:
            return "an addition needs one '+' between two numbers of equal length"
        return None

    def longest_target(self, length: int, n_symbols: int) -> int:
        return length // 2 + 1

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        m = length // 2
        return "".join(rng.choices(digits(n_symbols), k=m)) + PLUS + "".join(rng.choices(digits(n_symbols), k=m))

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """A carry all the way (top digits plus 1), one that stops just short, every digit the largest, zeros."""
        m, alphabet = length // 2, digits(n_symbols)
        top, zero, one = alphabet[-1], alphabet[0], alphabet[1]
        unit = one + zero * (m - 1)
        return (
            top * m + PLUS + unit,
            unit + PLUS + top * m,
            top * (m - 1) + zero + PLUS + unit,
            top * m + PLUS + top * m,
            zero * m + PLUS + zero * m,
        )

    def example(self, n_symbols: int, length: int) -> str:
        m, alphabet = length // 2, digits(n_symbols)
        return cycled(alphabet[1:], m) + PLUS + cycled(alphabet[::-1], m)

    def target(self, source: str, n_symbols: int) -> str:
        m, base = len(source) // 2, n_symbols
        out, carry = [], 0
        for k in range(m):
            total = value(source[k]) + value(source[m + 1 + k]) + carry
            out.append(SYMBOL_POOL[total % base])
            carry = total // base
        return "".join(out) + SYMBOL_POOL[carry]

    def places(self, source: str, k: int) -> Positions:
        """The positions of both numbers' digits at place k."""
        return (k, len(source) // 2 + 1 + k)

    def reads(self, source: str, n_symbols: int) -> Truth:
        """Digit k adds place k and the carry into it. The carry is read from the place below: its two digits with
        the digit just written (the decoder's previous output) say whether that place carried, without the chain of
        places under it. The final digit is the carry out of the top place, read the same way."""
        m = len(source) // 2
        below = [tuple(sorted({*self.places(source, k), *self.places(source, k - 1)})) for k in range(1, m)]
        return (self.places(source, 0), *below, self.places(source, m - 1))

    def depends(self, source: str, n_symbols: int) -> Truth:
        m = len(source) // 2  # place k and every place below it, whose carries can reach it
        return tuple(
            tuple(sorted(p for j in range(min(k, m - 1) + 1) for p in self.places(source, j))) for k in range(m + 1)
        )


@dataclass(frozen=True)
class RunningSum(Task):
    """Prefix sums modulo n: output i is (s0 + ... + si) mod n, each term one base-n digit."""

    def source_alphabet(self, n_symbols: int) -> str:
        return digits(n_symbols)

    def target_alphabet(self, n_symbols: int) -> str:
        return digits(n_symbols)

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        return "".join(rng.choices(digits(n_symbols), k=length))

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """Terms that cancel in pairs (the total keeps coming back to 0), then every one-symbol source."""
        alphabet = digits(n_symbols)
        cancel = cycled(alphabet[1] + alphabet[-1], length)  # 1 + (n - 1) = n = 0 mod n
        return (cancel, *repeated_symbols(alphabet, length))

    def example(self, n_symbols: int, length: int) -> str:
        return cycled(digits(n_symbols)[1:], length)

    def target(self, source: str, n_symbols: int) -> str:
        out, total = [], 0
        for digit in source:
            total = (total + value(digit)) % n_symbols
            out.append(SYMBOL_POOL[total])
        return "".join(out)

    def reads(self, source: str, n_symbols: int) -> Truth:
        return tuple((i,) for i in range(len(source)))  # the new term; the total so far is the previous output

    def depends(self, source: str, n_symbols: int) -> Truth:
        return tuple(tuple(range(i + 1)) for i in range(len(source)))
