"""Reference implementations of every task, written here independently of core_model.task_library: plain
Python written another way on purpose (integers for addition, dicts for recall, slices for rotate, str.count for
histogram, ...), with hypothesis strategies for their valid sources. The task tests compare the library with them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st

POOL = "0123456789abcdefghijklmnopqrstuvwxyz"
LETTERS = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
Sets = list[set[int]]


@dataclass(frozen=True)
class Reference:
    """One task as this test understands it."""

    sizes: st.SearchStrategy[int]  # n_symbols
    sources: Callable[[int], st.SearchStrategy[str]]  # valid sources for a size
    valid: Callable[[str, int], bool]
    target: Callable[[str, int], str]
    reads: Callable[[str, int], Sets]
    depends: Callable[[str, int], Sets]
    alphabet: Callable[[int], str]  # every symbol a source may hold


def free_text(n: int, low: int = 1, high: int = 12) -> st.SearchStrategy[str]:
    return st.text(alphabet=POOL[:n], min_size=low, max_size=high)


def free_valid(low: int = 1, even: bool = False) -> Callable[[str, int], bool]:
    return lambda s, n: len(s) >= low and set(s) <= set(POOL[:n]) and (not even or len(s) % 2 == 0)


def ties(source: str, target: str) -> Sets:
    """Where each output symbol could have been copied from."""
    where: dict[str, set[int]] = {}
    for j, symbol in enumerate(source):
        where.setdefault(symbol, set()).add(j)
    return [set(where[symbol]) for symbol in target]


# ----- the copy family and other rearrangements -----
def rotate(k: int) -> Reference:
    def target(s: str, n: int) -> str:
        cut = k % len(s)
        return s[cut:] + s[:cut]

    return Reference(
        st.integers(1, 36),
        free_text,
        free_valid(),
        target,
        lambda s, n: ties(s, target(s, n)),
        lambda s, n: [{(i + k) % len(s)} for i in range(len(s))],
        lambda n: POOL[:n],
    )


def interleave_target(s: str, n: int) -> str:
    half = len(s) // 2
    return "".join(a + b for a, b in zip(s[:half], s[half:]))


def interleave_depends(s: str, n: int) -> Sets:
    half = len(s) // 2
    return [p for t in range(half) for p in ({t}, {half + t})]


def memory_valid(s: str, n: int) -> bool:
    data, blank, rest = s.partition("_")
    return bool(data) and bool(blank) and set(rest) <= {"_"} and set(data) <= set(POOL[:n])


def memory_sources(n: int) -> st.SearchStrategy[str]:
    return st.tuples(free_text(n, 1, 8), st.integers(1, 6)).map(lambda pair: pair[0] + "_" * pair[1])


def sort_target(s: str, n: int) -> str:
    return "".join(symbol * s.count(symbol) for symbol in POOL)  # a counting sort over the pool's order


def everything(s: str, outputs: int) -> Sets:
    return [set(range(len(s))) for _ in range(outputs)]


# ----- counting -----
def hist_target(s: str, n: int) -> str:
    return "".join(str(s.count(symbol)) for symbol in s)


def most_frequent_target(s: str, n: int) -> str:
    return sorted(set(s), key=lambda symbol: (-s.count(symbol), POOL.index(symbol)))[0]


def dedupe_target(s: str, n: int) -> str:
    seen: set[str] = set()
    out = ""
    for symbol in s:
        if symbol not in seen:
            seen.add(symbol)
            out += symbol
    return out


def dedupe_depends(s: str, n: int) -> Sets:
    return [set(range(s.index(symbol) + 1)) for symbol in dedupe_target(s, n)]


# ----- arithmetic -----
def number(digits: str, base: int) -> int:
    return int(digits[::-1], base)  # int() reads the most significant digit first


def addition_sources(base: int) -> st.SearchStrategy[str]:
    digits = POOL[:base]

    def pair(m: int) -> st.SearchStrategy[str]:
        side = st.text(alphabet=digits, min_size=m, max_size=m)
        return st.tuples(side, side).map(lambda ab: ab[0] + "+" + ab[1])

    return st.integers(1, 7).flatmap(pair)


def addition_valid(s: str, base: int) -> bool:
    left, plus, right = s.partition("+")
    return bool(plus) and len(left) == len(right) >= 1 and set(left + right) <= set(POOL[:base])


def addition_target(s: str, base: int) -> str:
    left, _, right = s.partition("+")
    total = number(left, base) + number(right, base)
    out = ""
    for _ in range(len(left) + 1):
        total, digit = divmod(total, base)
        out += POOL[digit]
    return out


def place(j: int, m: int) -> int:
    """The place value index of source position j in an addition of two m-digit numbers."""
    return j if j < m else j - m - 1


def addition_reads(s: str, base: int) -> Sets:
    """Digit k reads places k and k - 1 (the carry in); the last digit, the carry out, the top place."""
    m = len(s) // 2
    wanted = [{0}, *({k - 1, k} for k in range(1, m)), {m - 1}]
    return [{j for j in range(len(s)) if j != m and place(j, m) in places} for places in wanted]


def addition_depends(s: str, base: int) -> Sets:
    m = len(s) // 2
    return [{j for j in range(len(s)) if j != m and place(j, m) <= k} for k in range(m + 1)]


def running_target(s: str, n: int) -> str:
    sums = itertools.accumulate(POOL.index(symbol) for symbol in s)
    return "".join(POOL[total % n] for total in sums)


# ----- structured -----
def recall_sources(n: int) -> st.SearchStrategy[str]:
    keys = LETTERS[:n]

    def build(p: int) -> st.SearchStrategy[str]:
        chosen = st.permutations(keys).map(lambda order: order[:p])
        values = st.text(alphabet=DIGITS, min_size=p, max_size=p)
        return st.tuples(chosen, values).flatmap(
            lambda kv: st.sampled_from(kv[0]).map(lambda q: "".join(a + b for a, b in zip(*kv)) + "?" + q)
        )

    return st.integers(1, min(n, 8)).flatmap(build)


def recall_valid(s: str, n: int) -> bool:
    body, ask, query = s[:-2], s[-2:-1], s[-1:]
    keys, values = body[0::2], body[1::2]
    return (
        len(s) >= 4
        and len(body) % 2 == 0
        and ask == "?"
        and set(keys) <= set(LETTERS[:n])
        and set(values) <= set(DIGITS)
        and len(set(keys)) == len(keys)
        and query in keys
    )


def recall_target(s: str, n: int) -> str:
    return dict(zip(s[:-2:2], s[1:-2:2]))[s[-1]]


def recall_depends(s: str, n: int) -> Sets:
    keys = set(range(0, len(s) - 2, 2))
    return [keys | {len(s) - 1, 2 * s[:-2:2].index(s[-1]) + 1}]


def dyck_sources(n: int) -> st.SearchStrategy[str]:
    nested = st.recursive(
        st.just("()"),
        lambda inner: st.lists(inner, min_size=1, max_size=3).map(lambda parts: "(" + "".join(parts) + ")"),
    )
    return st.lists(nested, min_size=1, max_size=4).map("".join).filter(lambda s: len(s) <= 18)


def dyck_valid(s: str, n: int) -> bool:
    depths = list(itertools.accumulate(1 if c == "(" else -1 for c in s))
    return 2 <= len(s) <= 18 and set(s) <= set("()") and min(depths) >= 0 and depths[-1] == 0


def dyck_target(s: str, n: int) -> str:
    return "".join(str(d) for d in itertools.accumulate(1 if c == "(" else -1 for c in s))


def step_by_step(s: str, n: int) -> Sets:
    return [{i} for i in range(len(s))]


def prefix(s: str, n: int) -> Sets:
    return [set(range(i + 1)) for i in range(len(s))]


REFERENCES: dict[str, Reference] = {
    "copy": Reference(
        st.integers(1, 36),
        free_text,
        free_valid(),
        lambda s, n: s,
        lambda s, n: ties(s, s),
        lambda s, n: [{i} for i in range(len(s))],
        lambda n: POOL[:n],
    ),
    "reverse": Reference(
        st.integers(1, 36),
        free_text,
        free_valid(),
        lambda s, n: s[::-1],
        lambda s, n: ties(s, s[::-1]),
        lambda s, n: [{len(s) - 1 - i} for i in range(len(s))],
        lambda n: POOL[:n],
    ),
    "sort": Reference(
        st.integers(1, 36),
        free_text,
        free_valid(),
        sort_target,
        lambda s, n: ties(s, sort_target(s, n)),
        lambda s, n: everything(s, len(s)),
        lambda n: POOL[:n],
    ),
    "rotate1": rotate(1),
    "rotate2": rotate(2),
    "interleave": Reference(
        st.integers(1, 36),
        lambda n: free_text(n, 1, 6).flatmap(lambda a: free_text(n, len(a), len(a)).map(lambda b: a + b)),
        free_valid(2, even=True),
        interleave_target,
        lambda s, n: ties(s, interleave_target(s, n)),
        interleave_depends,
        lambda n: POOL[:n],
    ),
    "copy_memory": Reference(
        st.integers(1, 36),
        memory_sources,
        memory_valid,
        lambda s, n: s.split("_")[0],
        lambda s, n: ties(s.split("_")[0], s.split("_")[0]),
        lambda s, n: [{i} for i in range(len(s.split("_")[0]))],
        lambda n: POOL[:n] + "_",
    ),
    "dedupe": Reference(
        st.integers(1, 36),
        free_text,
        free_valid(),
        dedupe_target,
        lambda s, n: ties(s, dedupe_target(s, n)),
        dedupe_depends,
        lambda n: POOL[:n],
    ),
    "histogram": Reference(
        st.integers(1, 26),
        lambda n: st.text(alphabet=LETTERS[:n], min_size=1, max_size=9),
        lambda s, n: 1 <= len(s) <= 9 and set(s) <= set(LETTERS[:n]),
        hist_target,
        lambda s, n: [{j for j, other in enumerate(s) if other == symbol} for symbol in s],
        lambda s, n: everything(s, len(s)),
        lambda n: LETTERS[:n],
    ),
    "most_frequent": Reference(
        st.integers(1, 36),
        free_text,
        free_valid(),
        most_frequent_target,
        lambda s, n: ties(s, most_frequent_target(s, n)),
        lambda s, n: everything(s, 1),
        lambda n: POOL[:n],
    ),
    "addition": Reference(
        st.integers(2, 36),
        addition_sources,
        addition_valid,
        addition_target,
        addition_reads,
        addition_depends,
        lambda n: POOL[:n] + "+",
    ),
    "running_sum": Reference(
        st.integers(2, 36),
        free_text,
        free_valid(),
        running_target,
        step_by_step,
        prefix,
        lambda n: POOL[:n],
    ),
    "recall": Reference(
        st.integers(1, 26),
        recall_sources,
        recall_valid,
        recall_target,
        lambda s, n: [{j for j in range(1, len(s) - 2, 2) if s[j] == recall_target(s, n)}],
        recall_depends,
        lambda n: DIGITS + LETTERS[:n] + "?",
    ),
    "dyck_depth": Reference(
        st.just(2),
        dyck_sources,
        dyck_valid,
        dyck_target,
        step_by_step,
        prefix,
        lambda n: "()",
    ),
}
