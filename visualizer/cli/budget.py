"""How many attention weights a verb would hold at once, checked once the model is known and before any pass runs;
the analyses (patch, lens, attribute, circuits) use core_model.analysis_budget instead, as the window does.

Each number a verb takes has its own range (limits.py), but their product can still ask for gigabytes: 1,000 head
sequences of 254 symbols, 512 IG steps on a long source, a batch of 512 at the longest length, a view of 4,000
pads. A pass holds every head's map of every layer for every sequence of its batch (the views copy them again as
float64), so their count, layers x heads x queries x keys x batch, bounds the memory a verb needs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from visualizer.cli.common import ArgumentError, ProgressBar

T = TypeVar("T")

MAX_WEIGHTS = 100_000_000  # attention weights held at once: a few hundred MB with the copies a verb makes


def attention_weights(config: Any, batch: int, src_len: int, tgt_len: int) -> int:
    """Weights of one pass over `batch` sequences: encoder self, decoder self and cross maps of every layer and head."""
    per_head = config.n_encoder_layers * src_len**2 + config.n_decoder_layers * (tgt_len**2 + tgt_len * src_len)
    return batch * config.n_heads * per_head


def check_budget(weights: int, what: str, hint: str) -> None:
    """Refuse, in one line with what to lower, a run that would hold more than MAX_WEIGHTS weights at once."""
    if weights > MAX_WEIGHTS:
        raise ArgumentError(
            f"{what} would hold {weights:,} attention weights at once, more than the {MAX_WEIGHTS:,} a command may; "
            f"{hint}"
        )


def lower_to(option: str, per_unit: int, spent: int = 0) -> str:
    """ "use --n 63 or less": the most units of `per_unit` weights that fit, less `spent` units the run adds on its
    own (IG's pass at the input itself); "" when not even one fits."""
    most = MAX_WEIGHTS // max(1, per_unit) - spent
    return f"use {option} {most} or less" if most >= 1 else ""


@contextmanager
def analysis_refusals() -> Iterator[None]:
    """core_model.analysis_budget's refusal as a bad argument: one line and exit status 2, like every budget here."""
    from core_model.analysis_budget import BudgetError

    try:
        yield
    except BudgetError as exc:
        raise ArgumentError(str(exc)) from None


def decoding_bar() -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """(progress, close) for an analysis's greedy decoding: its tokens counted on stderr once it has run a moment (a
    short output prints nothing), the bar made when the most tokens it may write is known; `close` ends its line."""
    bars: list[ProgressBar] = []

    def progress(written: int, most: int) -> None:
        if not bars:
            bars.append(ProgressBar(most, sys.stderr, quiet_start=True))
        bars[0].count(written, "tokens decoded")

    def close() -> None:
        for bar in bars:
            bar.close()
        bars.clear()

    return progress, close


def decoded(decode: Callable[[Callable[[int, int], None]], T]) -> T:
    """An analysis's greedy decoding, `decode(progress)` (its tokens, or the analysis that runs on them), with its
    tokens counted on stderr (`decoding_bar`)."""
    progress, close = decoding_bar()
    try:
        return decode(progress)
    finally:
        close()
