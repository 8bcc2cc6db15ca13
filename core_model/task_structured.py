"""Tasks whose sources have a grammar beyond their alphabet: associative recall and Dyck-1 bracket depth.

Recall is a lookup by content (find the key equal to the query, answer the symbol after it): the induction-head
pattern. The bracket depth is a running count the decoder can keep itself, one step per bracket.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .task import Task, Truth, holding
from .task_counting import letters
from .vocab import SYMBOL_POOL

VALUES = SYMBOL_POOL[:10]  # recall's values: digits, so they never look like its keys
ASK = "?"
OPEN, CLOSE = "(", ")"
DEPTHS = SYMBOL_POOL[:10]  # bracket depths 0 to 9, one digit each (18 brackets nest at most 9 deep)


@dataclass(frozen=True)
class Recall(Task):
    """Key-value pairs (a letter, then a digit), then '?' and one of the keys: output that key's value."""

    def source_alphabet(self, n_symbols: int) -> str:
        return VALUES + letters(n_symbols) + ASK

    def target_alphabet(self, n_symbols: int) -> str:
        return VALUES

    LENGTH_STEP = 2

    def max_length(self, n_symbols: int) -> int:
        return 2 * n_symbols + 2  # keys are distinct: one pair per key at most

    def length_rule(self, n_symbols: int) -> str:
        return (
            "a recall needs key-value pairs, then '?' and a key: 2p + 2 symbols (4, 6, 8, ...), at most "
            f"{self.max_length(n_symbols)} for {n_symbols} distinct keys"
        )

    def grammar_problem(self, source: str, n_symbols: int) -> str | None:
        keys, pairs = letters(n_symbols), source[:-2]
        if (
            source[-2] != ASK
            or source[-1] not in keys
            or any(symbol not in (keys if j % 2 == 0 else VALUES) for j, symbol in enumerate(pairs))
        ):
            return "a recall is key-value pairs (a letter, then a digit), then '?' and a key"
        if len(set(pairs[::2])) != len(pairs) // 2:
            return "the keys of a recall must be distinct"
        if source[-1] not in pairs[::2]:
            return "the key after '?' must be one of the pairs' keys"
        return None

    def longest_target(self, length: int, n_symbols: int) -> int:
        return 1

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        p = (length - 2) // 2
        keys = rng.sample(letters(n_symbols), p)
        values = rng.choices(VALUES, k=p)
        return "".join(k + v for k, v in zip(keys, values)) + ASK + rng.choice(keys)

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """Every value the same; the query the first key and the last; keys backwards and values counting down."""
        p, keys = (length - 2) // 2, letters(n_symbols)
        forward = keys[:p]
        backward = forward[::-1]
        same = "".join(k + VALUES[7] for k in forward) + ASK + forward[0]
        counting = "".join(k + VALUES[j % 10] for j, k in enumerate(forward)) + ASK + forward[-1]
        down = "".join(k + VALUES[9 - j % 10] for j, k in enumerate(backward)) + ASK + backward[p // 2]
        return (counting, same, down)

    def example(self, n_symbols: int, length: int) -> str:
        """Values that do not follow their keys' order and a query from the middle: the answer is found only by
        matching the key (a value in key order, or the last key, would let position alone find it)."""
        p, keys = (length - 2) // 2, letters(n_symbols)
        pairs = "".join(k + VALUES[(3 * j + 5) % 10] for j, k in enumerate(keys[:p]))
        return pairs + ASK + keys[max(0, p // 2 - 1)]

    def pairs_of(self, source: str) -> int:
        return (len(source) - 2) // 2

    def match(self, source: str) -> int:
        """The position of the value the query asks for."""
        return source[:-2:2].index(source[-1]) * 2 + 1

    def target(self, source: str, n_symbols: int) -> str:
        return source[self.match(source)]

    def reads(self, source: str, n_symbols: int) -> Truth:
        return (holding(source, self.target(source, n_symbols)),)  # values are digits: only value slots hold one

    def depends(self, source: str, n_symbols: int) -> Truth:
        # every key is compared with the query; the matching pair's value is the answer
        keys = range(0, len(source) - 2, 2)
        return (tuple(sorted({*keys, self.match(source), len(source) - 1})),)


@dataclass(frozen=True)
class DyckDepth(Task):
    """A balanced string of brackets; output i is the nesting depth after bracket i."""

    def source_alphabet(self, n_symbols: int) -> str:
        return OPEN + CLOSE

    def target_alphabet(self, n_symbols: int) -> str:
        return DEPTHS

    LENGTH_STEP = 2

    def length_rule(self, n_symbols: int) -> str:
        high = self.max_length(n_symbols)
        return f"balanced brackets come in pairs: an even number of symbols, 2 to {high} (depths are one digit)"

    def grammar_problem(self, source: str, n_symbols: int) -> str | None:
        depth = 0
        for position, symbol in enumerate(source):
            depth += 1 if symbol == OPEN else -1
            if depth < 0:
                return f"brackets must balance: the ')' at position {position} closes nothing"
        if depth:
            return f"brackets must balance: {depth} '(' never closed"
        return None

    def draw(self, rng: random.Random, n_symbols: int, length: int) -> str:
        out, depth = [], 0
        for step in range(length):
            left = length - step  # brackets still to place, `depth` of them needed to close
            opens = depth == 0 or (depth < left - 1 and rng.random() < 0.5)
            out.append(OPEN if opens else CLOSE)
            depth += 1 if opens else -1
        return "".join(out)

    def adversarial(self, n_symbols: int, length: int) -> tuple[str, ...]:
        """The deepest nesting, none at all, and the deepest nesting after a flat start."""
        half = length // 2
        deepest, flat = OPEN * half + CLOSE * half, (OPEN + CLOSE) * half
        late = (OPEN + CLOSE) * (half // 2) + OPEN * (half - half // 2) + CLOSE * (half - half // 2)
        return (deepest, flat, late)

    def example(self, n_symbols: int, length: int) -> str:
        half = length // 2
        return (OPEN * (half - half // 2) + CLOSE * (half - half // 2) + (OPEN + CLOSE) * (half // 2))[:length]

    def target(self, source: str, n_symbols: int) -> str:
        out, depth = [], 0
        for symbol in source:
            depth += 1 if symbol == OPEN else -1
            out.append(DEPTHS[depth])
        return "".join(out)

    def reads(self, source: str, n_symbols: int) -> Truth:
        return tuple((i,) for i in range(len(source)))  # this bracket; the depth before it is the previous output

    def depends(self, source: str, n_symbols: int) -> Truth:
        return tuple(tuple(range(i + 1)) for i in range(len(source)))
