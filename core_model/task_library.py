"""The tasks the playground knows, each one value: what it asks, its algorithm in a few sentences, its sizes.

Their classes are grouped by family, a module each: task_classic (copy, reverse, sort), task_rearrange (by
position), task_counting (by content), task_arithmetic, task_structured (a grammar beyond the alphabet).
core_model.tasks builds the registry from LIBRARY, in this order; docs/TASKS.md describes every task at more length.
"""

from __future__ import annotations

from .task import Task, Training
from .task_arithmetic import Addition, RunningSum
from .task_classic import Copy, Reverse, Sort
from .task_counting import Dedupe, Histogram, MostFrequent
from .task_rearrange import CopyMemory, Interleave, Rotate
from .task_structured import DyckDepth, Recall

ALPHABET = "alphabet size"
POOL = (1, 36)  # the free-symbol tasks take the first 1 to 36 symbols of 0-9a-z
ANY_LENGTH = (1, None)
# A task's `training` is what its Trainer recipe changes of the app's fast default (300 steps at 6e-3): the steps
# and rate measured to take it from scratch to 99 % exact match on every trained length (tests/benchmarks, the
# "time to 99% EM from scratch" rows), with a margin of a few hundred steps.

LIBRARY: tuple[Task, ...] = (
    Copy(
        name="copy",
        description="Output the source as it is.",
        explanation=(
            "Output position i reads source position i. A cross-attention head can do it by position alone: a "
            "diagonal. Where a symbol repeats, any of its copies gives the right answer, so a head may look at "
            "another one."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=10,
        length_range=ANY_LENGTH,
        training_lengths=(1, 16),
    ),
    Reverse(
        name="reverse",
        description="Output the source backwards.",
        explanation=(
            "Output position i reads source position n - 1 - i, counted from the end. The model must know where "
            "the source ends, so its cross attention is an anti-diagonal anchored on the last symbol."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=10,
        length_range=ANY_LENGTH,
        training_lengths=(1, 16),
        training=Training(steps=2000, lr=3e-3),
    ),
    Sort(
        name="sort",
        description="Output the source's symbols in alphabet order (0-9, then a-z).",
        explanation=(
            "Each output is the smallest symbol not yet written, repeats counted. No position says which symbol "
            "that is, so a head attends by content: to every copy of the symbol due next, wherever it stands."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=10,
        length_range=ANY_LENGTH,
        training_lengths=(1, 16),
        training=Training(steps=3000, lr=2e-3, batch_size=64),
    ),
    Rotate(
        name="rotate1",
        description="Rotate the source left by one: its first symbol moves to the end.",
        explanation=(
            "Output position i reads source position i + 1, and the last output wraps around to position 0. Its "
            "cross attention is a diagonal shifted by one, with one cell in the far corner: the last output must "
            "know it is the last."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=10,
        length_range=ANY_LENGTH,
        training_lengths=(1, 16),
        training=Training(steps=600),
        k=1,
    ),
    Rotate(
        name="rotate2",
        description="Rotate the source left by two: its first two symbols move to the end.",
        explanation=(
            "Output position i reads source position (i + 2) mod n: a diagonal shifted by two that wraps around "
            "for the last two outputs. A one-symbol source rotates onto itself."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=10,
        length_range=ANY_LENGTH,
        training_lengths=(1, 16),
        training=Training(steps=600),
        k=2,
    ),
    Interleave(
        name="interleave",
        description="Zip the source's two halves: the first symbol of each half, then the second of each, ...",
        explanation=(
            "Even outputs 2t read position t of the first half, odd outputs 2t + 1 read position t of the second "
            "half, which starts at n / 2. The cross attention is two diagonals of half slope, the model "
            "alternating between them and finding the middle from the source's length."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=10,
        length_range=(2, None),
        training_lengths=(2, 16),
        training=Training(steps=600),
    ),
    CopyMemory(
        name="copy_memory",
        description="Symbols, then a run of blanks '_' as a delay: output the symbols.",
        explanation=(
            "Output position i reads source position i, as in copy, but the output stops where the blanks start. "
            "The model must find the first blank to know when to write <eos>, and never copy the delay."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=10,
        length_range=(2, None),
        training_lengths=(2, 16),
    ),
    Dedupe(
        name="dedupe",
        description="Output each symbol once, where it first occurs, in source order.",
        explanation=(
            "Walk the source and keep a symbol unless it stood earlier. Output t is the t-th new symbol; where it "
            "stands depends on every symbol before it, so the cross attention runs along the source, skipping "
            "repeats."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=10,
        length_range=ANY_LENGTH,
        training_lengths=(1, 16),
        training=Training(steps=3000, lr=3e-3),
    ),
    Histogram(
        name="histogram",
        description="For each position, how often its letter occurs in the whole source (RASP's hist), as 1-9.",
        explanation=(
            "Output i counts the positions holding the same letter as position i. Attention can count: a head "
            "that spreads its weight evenly over every copy of the letter gives each copy 1/count, and the layers "
            "after it turn that fraction into a number. Sources are letters, so they never look like the counts."
        ),
        symbols_meaning="number of letters",
        symbols_range=(1, 26),
        default_symbols=4,
        length_range=(1, 9),
        training_lengths=(1, 9),
        training=Training(steps=1500, lr=3e-3),
    ),
    MostFrequent(
        name="most_frequent",
        description="The symbol that occurs most often; on a tie, the one first in the alphabet (0-9, then a-z).",
        explanation=(
            "Count every symbol and output the one with the highest count, the smallest of those tied. The one "
            "output depends on every position; a head can spread its weight over every copy of the winner."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=POOL,
        default_symbols=4,
        length_range=ANY_LENGTH,
        training_lengths=(1, 16),
    ),
    Addition(
        name="addition",
        description="Add two numbers of equal length, each written backwards: 12+99 is 21 + 99 = 120, written 021.",
        explanation=(
            "Add place by place, lowest first, carrying into the next place, as by hand. The digits are written "
            "least significant first so that each output digit needs only the places before it and their carry: "
            "the decoder can write the sum left to right. Digit k reads place k of both numbers (two cells per "
            "row), and the carry makes it depend on every place below. The sum has one digit more than each "
            "number: the last carry."
        ),
        symbols_meaning="number base",
        symbols_range=(2, 36),
        default_symbols=10,
        length_range=(3, None),
        training_lengths=(3, 15),
        training=Training(steps=2000, lr=3e-3),
    ),
    RunningSum(
        name="running_sum",
        description="Prefix sums modulo n: output i is the sum of the first i + 1 digits, mod n.",
        explanation=(
            "Keep a running total: add each digit and reduce mod n. Output i depends on every digit up to i, but "
            "the decoder has just written the total before it, so cross attention need only read digit i: a plain "
            "diagonal, the sum hidden in the decoder's self attention."
        ),
        symbols_meaning="modulus",
        symbols_range=(2, 36),
        default_symbols=10,
        length_range=ANY_LENGTH,
        training_lengths=(1, 16),
    ),
    Recall(
        name="recall",
        description="Key-value pairs (a letter, then a digit), then '?' and a key: output that key's value.",
        explanation=(
            "Find the pair whose key equals the query and output the digit after it: the lookup an induction head "
            "does. The answer comes from one value slot, but which one depends on comparing the query with every "
            "key."
        ),
        symbols_meaning="number of keys",
        symbols_range=(1, 26),
        default_symbols=8,
        length_range=(4, 54),
        training_lengths=(4, 18),
        training=Training(steps=6000, lr=1e-3, batch_size=64),
    ),
    DyckDepth(
        name="dyck_depth",
        description="A balanced string of brackets: output the nesting depth after each bracket.",
        explanation=(
            "Keep a counter: '(' adds one, ')' takes one away. Output i depends on every bracket up to i, but the "
            "decoder's previous output is the depth before it, so cross attention need only read bracket i. "
            "Sources are at most 18 brackets, so a depth is one digit."
        ),
        symbols_meaning=ALPHABET,
        symbols_range=(2, 2),
        default_symbols=2,
        length_range=(2, 18),
        training_lengths=(2, 16),
    ),
)
