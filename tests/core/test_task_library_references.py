"""Every task against the reference written in tests/task_references.py, on hypothesis-drawn sources: the expected
output, both ground-truth sets (reads, depends) and the grammar.

`depends` is also checked for what it promises: changing the symbol at a position outside it, alone, never changes
that output, on any source the grammar accepts.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from task_references import REFERENCES, Sets

from core_model.tasks import TASK_NAMES, task_named


def as_sets(truth: tuple[tuple[int, ...], ...]) -> Sets:
    assert all(list(p) == sorted(set(p)) for p in truth), "positions come ascending, each once"
    return [set(p) for p in truth]


def test_every_task_has_a_reference():
    assert set(REFERENCES) == set(TASK_NAMES)


@pytest.mark.parametrize("name", TASK_NAMES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_output_and_ground_truth_match_the_reference(name, data):
    task, ref = task_named(name), REFERENCES[name]
    n = data.draw(ref.sizes, label="n_symbols")
    source = data.draw(ref.sources(n), label="source")
    assert ref.valid(source, n)
    assert task.problem(source, n) is None
    target = task.target(source, n)
    assert target == ref.target(source, n)
    reads, depends = task.reads(source, n), task.depends(source, n)
    assert len(reads) == len(depends) == len(target) <= task.longest_target(len(source), n)
    assert as_sets(reads) == ref.reads(source, n)
    assert as_sets(depends) == ref.depends(source, n)


@pytest.mark.parametrize("name", TASK_NAMES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_position_outside_depends_never_changes_that_output(name, data):
    """Change one symbol (to every other one the task reads); wherever the grammar still accepts the source, every
    output whose `depends` leaves that position out stays as it was."""
    task, ref = task_named(name), REFERENCES[name]
    n = data.draw(ref.sizes, label="n_symbols")
    source = data.draw(ref.sources(n), label="source")
    target, depends = ref.target(source, n), task.depends(source, n)
    for j, other in itertools.product(range(len(source)), ref.alphabet(n)):
        changed = source[:j] + other + source[j + 1 :]
        if other == source[j] or not ref.valid(changed, n):
            continue
        new = ref.target(changed, n)
        for i, positions in enumerate(depends):
            if j not in positions:
                assert i < len(new) and new[i] == target[i], (changed, i)


@pytest.mark.parametrize("name", TASK_NAMES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_the_grammar_agrees_with_the_reference(name, data):
    """Any string over the task's symbols, and a valid source with one symbol changed (the near misses a random
    string seldom is): the task names a rule exactly when the reference refuses the string."""
    task, ref = task_named(name), REFERENCES[name]
    n = data.draw(ref.sizes, label="n_symbols")
    anything = data.draw(st.text(alphabet=ref.alphabet(n), min_size=1, max_size=12), label="any string")
    source = data.draw(ref.sources(n), label="source")
    j = data.draw(st.integers(0, len(source) - 1), label="position")
    near = source[:j] + data.draw(st.sampled_from(ref.alphabet(n)), label="symbol") + source[j + 1 :]
    for text in (anything, near):
        assert (task.problem(text, n) is None) == ref.valid(text, n), text
