"""One output or expected token as the decoder panel draws it: its colour class, colours and tooltip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from PySide6.QtCore import QRect

CHIP_COLOURS = {  # state -> (background, text)
    "correct": ("#2e7d32", "#ffffff"),
    "wrong": ("#c62828", "#ffffff"),
    "unknown": ("#737373", "#ffffff"),  # white text on it reads at 4.7:1 (WCAG AA)
    "expected": ("#eceff1", "#37474f"),
}
STATE_TIPS = {
    "correct": "matches the expected token",
    "wrong": "differs from the expected token",
    "unknown": "no expected token here",
    "expected": "expected token",
}


class Chip(NamedTuple):
    """One token as drawn: where, what and how (a named tuple: a frame lays out dozens)."""

    row: int  # 0 = output, 1 = expected
    index: int  # type: ignore[assignment]  # a field may shadow tuple.index; mypy types it as the method
    text: str
    state: str  # "correct", "wrong", "unknown" or "expected"
    forced: bool
    rect: QRect

    @property
    def tooltip(self) -> str:
        return f"{self.text!r} at position {self.index}: {STATE_TIPS[self.state]}" + (
            "; forced by you" if self.forced else ""
        )

    @property
    def colours(self) -> tuple[str, str]:
        """(background, text) colour names."""
        return CHIP_COLOURS[self.state]


def first_difference(a: Sequence, b: Sequence) -> int | float:
    """Index of the first item where a and b differ (a missing item differs); infinity when they are equal.

    A binary search over slice comparisons (each one C-speed): a keystroke at the end of a 128-token row compared
    item by item in Python cost more than the rest of its layout."""
    if len(a) == len(b) and a == b:
        return float("inf")
    lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo]; the first difference is at or before hi
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def chip_state(correct: bool | None) -> str:
    """Colour class of an output token."""
    return "unknown" if correct is None else ("correct" if correct else "wrong")
