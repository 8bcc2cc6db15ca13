"""The range of every number the headless verbs accept, checked while parsing, before any model or tensor exists.

Each limit is generous for real use and far below what would allocate gigabytes or run for minutes. The values
mirror core_model's own caps (config.MAX_LEN, MAX_LAYERS, MAX_HEADS, MAX_VOCAB_SIZE, vocab.SYMBOL_POOL), written
out here so that parsing imports no torch; tests hold the two in step. `ranged(verb, option, help)` gives an
option's argparse keywords: a `type=` that refuses anything outside its range, and help text that states it.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from visualizer.cli.common import ArgumentError
from visualizer.state.failures import printable

EVERY_VERB = ("*",)  # a row that holds in every verb of the registry
MAX_POSITIONS = 4096  # core_model.config.MAX_LEN: no model has more positions
MAX_SOURCE = MAX_POSITIONS - 2  # tasks.max_source_len: <bos> and <eos> take two positions
TRAIN_MAX_SOURCE = 254  # tasks.max_source_len(ModelConfig().max_len): `train` builds the default 256 positions
MAX_SEED = 2**32 - 1
MAX_TEXT = 40  # characters of a number worth reading; longer input is refused without converting it
MAX_EXHAUSTIVE_SOURCES = 20_000  # eval --exhaustive: every source decoded greedily, seconds on one CPU thread
# eval's sweep: sources per length x the sum of each length squared, the attention cells greedy decoding visits.
# Decoding time grows with that product; the cap keeps a sweep to minutes where an unbounded one could take hours.
MAX_EVAL_CELLS = 300_000_000


@dataclass(frozen=True)
class Limit:
    """A closed range [low, high] of ints or of finite floats (`low_open`: low itself is excluded)."""

    low: int | float
    high: int | float
    kind: type = int
    low_open: bool = False

    def describe(self) -> str:
        """The range as an error message says it: "an integer from 1 to 64"."""
        low, high = _number(self.low), _number(self.high)
        if self.kind is int:
            return f"an integer from {low} to {high}"
        return f"a number above {low} and at most {high}" if self.low_open else f"a number from {low} to {high}"

    def help(self) -> str:
        """The range as --help says it: "range: 1 to 64"."""
        low, high = _number(self.low), _number(self.high)
        return f"range: above {low}, up to {high}" if self.low_open else f"range: {low} to {high}"

    def parse(self, text: str) -> int | float:
        """The value of `text`, or ArgumentTypeError with one line naming the range and what was given."""
        value = _convert(text, self.kind)
        if value is None or not self._contains(value):
            raise argparse.ArgumentTypeError(f"must be {self.describe()}, got {shown(text)}")
        return value

    def _contains(self, value: float) -> bool:
        if not math.isfinite(value) or value > self.high:
            return False
        return value > self.low if self.low_open else value >= self.low


@dataclass(frozen=True)
class Row:
    """One line of the table: an option, the verbs where it has this range, the range."""

    option: str
    verbs: tuple[str, ...]
    limit: Limit


TABLE: tuple[Row, ...] = (
    Row("--threads", EVERY_VERB, Limit(1, 64)),  # libgomp aborts near 5000; a toy model gains nothing past a few
    Row("--seed", EVERY_VERB, Limit(0, MAX_SEED)),
    Row("--steps", ("train",), Limit(1, 100_000)),
    Row("--batch-size", ("train",), Limit(1, 512)),
    Row("--lr", ("train",), Limit(1e-8, 10.0, float)),  # TrainConfig's own range
    Row("--adam-beta1", ("train",), Limit(0.0, 0.999, float)),  # TrainConfig takes [0, 1); 1 would never move
    Row("--symbols", ("train",), Limit(1, 36)),  # len(vocab.SYMBOL_POOL)
    Row("--min-len", ("train",), Limit(1, TRAIN_MAX_SOURCE)),
    Row("--max-len", ("train",), Limit(1, TRAIN_MAX_SOURCE)),
    Row("--runs", ("train",), Limit(0.0, 1.0, float)),  # TaskSpec.runs: a share of the training sources
    Row("--eval-n", ("train",), Limit(1, 10_000)),
    Row("--until", ("train",), Limit(0.0, 1.0, float)),  # an exact match; 0: never stop early
    Row("--n", ("eval",), Limit(1, 10_000)),  # per length; 1000 takes seconds per length on one CPU thread
    Row("--length", ("eval",), Limit(1, MAX_SOURCE)),
    Row("--exhaustive", ("eval",), Limit(1, 4)),  # and at most MAX_EXHAUSTIVE_SOURCES: exhaustive_check
    Row("--train-len", ("eval",), Limit(1, MAX_SOURCE)),
    Row("--n", ("heads",), Limit(1, 1_000)),  # every head is ablated on all N at once
    Row("--pads", ("views", "decode", "cell", "lens", "page"), Limit(0, MAX_SOURCE)),
    Row("--beam", ("decode",), Limit(1, 64)),  # beam_search.MAX_BEAM_WIDTH (test_cli_limits keeps them equal)
    Row("--samples", ("decode",), Limit(1, 256)),  # sampling.MAX_SAMPLES (test_cli_limits keeps them equal)
    Row("--max-new", ("decode",), Limit(1, MAX_POSITIONS)),
    Row("--temperature", ("decode",), Limit(0.001, 1000.0, float)),
    Row("--top-k", ("decode",), Limit(1, 1024)),  # config.MAX_VOCAB_SIZE
    Row("--top-p", ("decode",), Limit(0.0, 1.0, float, low_open=True)),
    Row("--layer", ("cell",), Limit(0, 23)),  # config.MAX_LAYERS - 1
    Row("--head", ("cell",), Limit(0, 63)),  # config.MAX_HEADS - 1
    Row("--query", ("cell",), Limit(0, MAX_POSITIONS - 1)),
    Row("--key", ("cell",), Limit(0, MAX_POSITIONS - 1)),
    Row("--position", ("patch",), Limit(0, MAX_POSITIONS - 1)),
    Row("--ig-steps", ("attribute",), Limit(1, 512)),  # attribution.MAX_IG_STEPS: one batch of m + 1 sources
    Row("--baseline-samples", ("circuits",), Limit(1, 10_000)),  # head_composition.MAX_BASELINE_SAMPLES
    Row("--positions", ("circuits",), Limit(1, 128)),  # position_circuits.MAX_POSITION_TABLE; n x n cells per head
)
LENGTHS = Limit(1, MAX_SOURCE)  # each end of eval's --lengths A-B
DEVICE = re.compile(r"cpu|mps|cuda(?::\d{1,2})?|auto")


def limit(verb: str, option: str) -> Limit:
    """The range of `option` in `verb` (KeyError for an option without one)."""
    for row in TABLE:
        if row.option == option and (verb in row.verbs or row.verbs == EVERY_VERB):
            return row.limit
    raise KeyError(f"{verb} {option}")


def ranged(verb: str, option: str, text: str, metavar: str | None = None) -> dict[str, Any]:
    """argparse keywords for a numeric option: its range-checking type and help that ends with the range."""
    bound = limit(verb, option)
    checker: Callable[[str], int | float] = bound.parse
    name = metavar or ("N" if bound.kind is int else "X")
    return {"type": checker, "help": f"{text} [{bound.help()}]", "metavar": name}


def device_name(text: str) -> str:
    """--device's value when it names a kind pick_device supports; anything else is one line listing them."""
    if DEVICE.fullmatch(text):
        return text
    from core_model.device import available_devices

    raise argparse.ArgumentTypeError(
        f"unknown device {shown(text)}; choose cpu, cuda, cuda:N or mps "
        f"(available devices: {', '.join(available_devices())})"
    )


def exhaustive_help() -> str:
    """--exhaustive's help: how many sources K means depends on the checkpoint's symbols, so K's range is no bound."""
    return (
        f"also every source of length 1..K: n + n^2 + ... + n^K of them for n symbols (1,110 for K = 3 and 10 "
        f"symbols), refused above {MAX_EXHAUSTIVE_SOURCES:,} (K = 4 with 10 symbols, 2 with 36)"
    )


def exhaustive_check(k: int, n_symbols: int, longest: int) -> None:
    """Refuse --exhaustive K (ArgumentError, exit 2) past the model's `longest` source or the cap on sources."""
    if k > longest:
        raise ArgumentError(f"--exhaustive {k} is longer than this model takes ({longest})")
    count = sum(n_symbols**length for length in range(1, k + 1))
    if count > MAX_EXHAUSTIVE_SOURCES:
        raise ArgumentError(
            f"--exhaustive {k} means {count:,} sources for this model's {n_symbols} symbols; at "
            f"most {MAX_EXHAUSTIVE_SOURCES:,} are decoded: choose a smaller K"
        )


def lengths_help() -> str:
    """--lengths' help: its range, and the cap on the whole sweep it shares with --n."""
    return (
        "source lengths A to B (or one length A), at most the model's limit; default: the range the model was "
        f"trained on [range: 1 to {LENGTHS.high}; {EVAL_WORK_RULE}]"
    )


EVAL_WORK_RULE = f"n x the sum of each length squared at most {MAX_EVAL_CELLS:,}"


def eval_sources_that_fit(lengths: list[int], repeated: int) -> int:
    """The most random sources per length a sweep over `lengths` may decode besides `repeated` (< 1: none)."""
    return MAX_EVAL_CELLS // sum(length * length for length in lengths) - repeated


def eval_work_check(n: int, lengths: list[int], repeated: int, one_length: bool = False) -> None:
    """Refuse (ArgumentError, exit 2) a sweep over MAX_EVAL_CELLS: `n` random and `repeated` one-symbol sources
    per length. Each length's memory is bounded by its batches; this bounds the time, which nothing else does."""
    squares = sum(length * length for length in lengths)
    per_length = n + repeated
    if per_length * squares <= MAX_EVAL_CELLS:
        return
    most = eval_sources_that_fit(lengths, repeated)
    other = "a shorter --length" if one_length else "fewer lengths"
    fix = (
        f"use --n {most} or less, or {other}"
        if most >= 1
        else f"choose {other}" + ("" if one_length else " or shorter ones")
    )
    sources = f"{per_length:,} source{'s' * (per_length != 1)} per length"
    raise ArgumentError(
        f"eval would decode {sources} for {len(lengths):,} length{'s' * (len(lengths) != 1)}: "
        f"{per_length * squares:,} attention cells (n x the sum of each length squared), at most "
        f"{MAX_EVAL_CELLS:,}; {fix}"
    )


def length_range(text: str) -> tuple[int, int]:
    """eval's --lengths "A-B" (or "A") as (A, B), each end 1 to MAX_SOURCE; the model's own limit comes later."""
    match = re.fullmatch(r"\s*([0-9]{1,40})\s*(?:-\s*([0-9]{1,40})\s*)?", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"must look like A-B (e.g. 1-20) or one length, got {shown(text)}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if low < 1 or low > high or high > LENGTHS.high:
        raise argparse.ArgumentTypeError(f"must be A-B with 1 <= A <= B <= {LENGTHS.high}, got {shown(text)}")
    return low, high


def shown(text: str) -> str:
    """User input as a message shows it: numbers bare, other text quoted, control characters escaped, long input cut."""
    cut = text if len(text) <= MAX_TEXT else f"{text[:MAX_TEXT]}... ({len(text)} characters)"
    return f"'{printable(cut)}'" if not _looks_numeric(cut) else printable(cut)


def _looks_numeric(text: str) -> bool:
    return re.fullmatch(r"[-+]?[0-9]{1,40}(\.[0-9]*)?([eE][-+]?[0-9]+)?", text) is not None


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _convert(text: str, kind: type) -> int | float | None:
    """int(text) or float(text); None when it is not one or too long to be a number anyone meant.

    ASCII only: int() also reads other scripts' digits ("٣" is 3) and "1_000", which nobody typing a count means.
    """
    if len(text) > MAX_TEXT or not text.isascii() or "_" in text:
        return None
    try:
        return kind(text)
    except (ValueError, OverflowError):
        return None
