"""The budget of the analyses: each `check_*` refuses an analysis whose cost (analysis_cost) is over either cap,
before anything is allocated, in one sentence that says the numbers and the largest values of the knobs that fit.

Every option has its range and every model size its cap (config.MAX_*), yet their products can still ask for
gigabytes or hours: circuits over a 1,024-token vocabulary, patching on a 4,094-symbol source, attribution at 254
symbols with 512 integrated-gradient steps. The headless verbs and the window's states call the same function, so
both refuse the same inputs in the same sentence; `Knobs` names the knobs as the caller's user knows them
("--source" or "the source"), and a knob without a name is never suggested.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .analysis_cost import (
    MAX_BYTES,
    MAX_WORK,
    Cost,
    attention_heads,
    attribution_cost_for,
    circuits_cost,
    composition_counts,
    lens_cost,
    patch_cost,
    patch_rows,
)
from .config import ModelConfig
from .vocab import EOS

if TYPE_CHECKING:
    from .model import Seq2SeqTransformer


class BudgetError(ValueError):
    """An analysis that would need more memory or work than an analysis may: one sentence with the numbers and
    what fits, for a command's stderr or under the field a person typed in."""

    @property
    def sentence(self) -> str:
        """The message as a window shows it: capitalised, with a full stop."""
        text = str(self)
        return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


@dataclass(frozen=True)
class Knobs:
    """The knobs a caller lets its user turn, as that user knows them; None: not offered, never suggested."""

    source: str | None = None  # "--source", "--clean", "the source"
    ig_steps: str | None = None  # "--ig-steps", "IG steps"
    positions: str | None = None  # "--positions"
    samples: str | None = None  # "--baseline-samples"


NO_KNOBS = Knobs()  # a refusal over the budget names no option to lower


def most_that_fit(cost_for: Callable[[int], Cost], low: int, high: int) -> int | None:
    """The largest n in [low, high] whose cost fits (costs grow with n); None when not even `low` does."""
    if high < low or not cost_for(low).fits:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if cost_for(middle).fits else (low, middle - 1)
    return low


def check(cost: Cost, what: str, fixes: list[str], stuck: str = "") -> None:
    """Refuse `cost` when over either cap: "<what> would need ...; <fixes joined by 'or'>" (or `stuck` when no
    knob helps)."""
    if cost.fits:
        return
    fix = ", or ".join(f for f in fixes if f) or stuck or "no smaller input fits"
    raise BudgetError(
        f"{what} would need about {_bytes(cost.bytes)} of memory and {_amount(cost.work)} multiply-adds; an analysis "
        f"may use {_bytes(MAX_BYTES)} and {_amount(MAX_WORK)} (about a minute on one CPU thread): {fix}"
    )


def _bytes(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def _amount(n: int) -> str:
    for size, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if n >= size:
            return f"{n / size:.1f} {word}"
    return f"{n:,}"


def _shorter(knobs: Knobs, cost_for: Callable[[int], Cost], n_symbols: int) -> str:
    """'use at most N symbols in --source' when a shorter source fits, else ''."""
    if knobs.source is None or n_symbols <= 1:
        return ""
    most = most_that_fit(cost_for, 1, n_symbols - 1)
    return f"use at most {most} symbols in {knobs.source}" if most is not None else ""


def output_len(n_symbols: int, asked_symbols: int, asked_output: int) -> int:
    """The output a shorter source is expected to have: the same ratio of output to source as the one asked."""
    return max(1, math.ceil(asked_output * n_symbols / max(1, asked_symbols)))


def check_patch(config: ModelConfig, n_symbols: int, src_len: int, tgt_len: int, knobs: Knobs) -> None:
    """Refuse patching a source of n_symbols (src_len encoder positions, tgt_len decoder positions) over budget."""
    overhead = src_len - n_symbols

    def cost_for(n: int) -> Cost:
        return patch_cost(config, n + overhead, output_len(n, n_symbols, tgt_len))

    what = f"patching on {n_symbols} symbols ({patch_rows(config, src_len):,} patched runs)"
    check(cost_for(n_symbols), what, [_shorter(knobs, cost_for, n_symbols)])


def check_lens(config: ModelConfig, n_symbols: int, src_len: int, tgt_len: int, knobs: Knobs) -> None:
    """Refuse the lens of a source of n_symbols whose output is expected to be tgt_len tokens, over budget."""
    overhead = src_len - n_symbols

    def cost_for(n: int) -> Cost:
        return lens_cost(config, n + overhead, output_len(n, n_symbols, tgt_len))

    check(cost_for(n_symbols), f"the logit lens on {n_symbols} symbols", [_shorter(knobs, cost_for, n_symbols)])


def check_attribute(
    config: ModelConfig, n_symbols: int, src_len: int, tgt_len: int, ig_steps: int, knobs: Knobs
) -> None:
    """Refuse attribution (with the lens the window shows beside it) over budget; suggest fewer IG steps and a
    shorter source where either fits."""
    overhead = src_len - n_symbols

    def cost_for(n: int, steps: int = ig_steps) -> Cost:
        return attribution_cost_for(config, n + overhead, n, steps)(output_len(n, n_symbols, tgt_len))

    fixes = [_shorter(knobs, cost_for, n_symbols)]
    if knobs.ig_steps is not None and ig_steps > 1:
        steps = most_that_fit(lambda m: cost_for(n_symbols, m), 1, ig_steps - 1)
        fixes.insert(0, f"use {knobs.ig_steps} {steps} or less" if steps is not None else "")
    what = f"attribution with {ig_steps} IG steps on {n_symbols} symbols"
    check(cost_for(n_symbols), what, fixes)


def output_cap(cost_for: Callable[[int], Cost], expected: int, longest: int) -> int:
    """How many tokens greedy decoding may write for an analysis: the most whose analysis fits, from `expected`
    (what the task's answer needs, already checked) up to `longest` (the model's positions)."""
    return most_that_fit(cost_for, min(expected, longest), longest) or min(expected, longest)


def check_output(written: int, ended: bool, cap: int, longest: int, what: str, knobs: Knobs) -> None:
    """Refuse an analysis whose greedy output ran to `cap` tokens without <eos> where the model had room for more:
    analysing a longer output is over budget."""
    if ended or cap >= longest or written < cap:
        return
    source = f"; use a shorter {knobs.source}" if knobs.source else ""
    raise BudgetError(
        f"the model wrote {written:,} tokens for this source without <eos>; {what} of a longer output would need more "
        f"than an analysis may use ({_bytes(MAX_BYTES)}, {_amount(MAX_WORK)} multiply-adds){source}"
    )


def check_circuits(config: ModelConfig, n_positions: int, samples: int, knobs: Knobs) -> None:
    """Refuse reading the circuits over budget; name --positions or --baseline-samples only where lowering them
    fits, and say so when the model alone is too large."""
    fixed, _ = circuits_cost(config, n_positions, samples)
    heads = attention_heads(config)
    what = f"reading the circuits of {heads:,} heads over {config.vocab_size:,} tokens and {n_positions} positions"
    if not fixed.fits:
        links, _unlinked = composition_counts(config)
        check(
            fixed,
            what,
            [],
            f"the model alone ({heads:,} heads, {config.vocab_size:,} tokens, {links:,} composition links) is over "
            "that, whatever the options",
        )
    fixes = []
    if knobs.positions is not None and n_positions > 1:
        most = most_that_fit(lambda n: _total(circuits_cost(config, n, samples)), 1, n_positions - 1)
        fixes.append(f"use {knobs.positions} {most} or less" if most is not None else "")
    if knobs.samples is not None and samples > 1:
        most = most_that_fit(lambda s: _total(circuits_cost(config, n_positions, s)), 1, samples - 1)
        fixes.append(f"use {knobs.samples} {most} or less" if most is not None else "")
    check(_total(circuits_cost(config, n_positions, samples)), what, fixes)


def _total(parts: tuple[Cost, Cost]) -> Cost:
    return parts[0] + parts[1]


def analysis_output(
    model: Seq2SeqTransformer,
    src: Sequence[int],
    n_tokens: int,
    cost_for: Callable[[int], Cost],
    expected: int,
    what: str,
    knobs: Knobs,
    progress: Callable[[int, int], None] | None = None,
) -> list[int]:
    """The model's greedy output for an analysis of it: decoding stops at the longest output whose analysis
    (`cost_for(output tokens)`) fits, and BudgetError says so when the model had not written <eos> by then.

    `expected`: the output the task's answer needs, <eos> included, which the caller checked fits already.
    `progress(written, most)` after each token."""
    from .decoding import greedy_output, max_output_len

    longest = max_output_len(model)
    cap = output_cap(cost_for, expected, longest)
    on_token = None if progress is None else (lambda written: progress(written, cap))
    output = greedy_output(model, src, n_tokens, max_new_tokens=cap, on_token=on_token)
    check_output(len(output), bool(output) and output[-1] == EOS, cap, longest, what, knobs)
    return output
