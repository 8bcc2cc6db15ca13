"""The task registry and what every task promises: batches that decode back to a valid source and its answer,
exact lengths on request, the same batch for the same seed, hard cases that are valid, a grammar that names the
rule a bad source breaks, and a TaskSpec that validates its size and lengths against its task."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest
import torch
from task_references import REFERENCES

from core_model import tasks
from core_model.checkpoint_records import stored_task
from core_model.task_rearrange import Rearrangement
from core_model.tasks import (
    TASK_NAMES,
    TASKS,
    Batch,
    TaskSpec,
    default_spec,
    expected_output,
    make_batch,
    task_named,
)
from core_model.vocab import BOS, EOS, PAD, Vocabulary


def rows(spec: TaskSpec, batch: Batch) -> list[tuple[str, str, list[int], list[int]]]:
    """Per row: the source and target as text, the decoder input and the labels."""
    vocab, out = spec.vocabulary, []
    for src, tgt_in, tgt_out in zip(batch.src.tolist(), batch.tgt_in.tolist(), batch.tgt_out.tolist()):
        source = vocab.decode([t for t in src if t not in (BOS, PAD)])
        out.append((source, vocab.decode(tgt_out), tgt_in, tgt_out))
    return out


def test_the_registry_holds_at_least_twelve_tasks_each_once():
    assert len(TASK_NAMES) >= 12 and len(set(TASK_NAMES)) == len(TASK_NAMES)
    assert TASK_NAMES[:3] == ("copy", "reverse", "sort") and tasks.DEFAULT_TASK == "copy"
    assert all(task_named(name) is TASKS[name] and TASKS[name].name == name for name in TASK_NAMES)
    for task in TASKS.values():
        assert task.description and "\n" not in task.description
        assert task.explanation.count(". ") >= 1  # a few sentences, not a label
    with pytest.raises(ValueError, match=r"task must be one of \['copy', 'reverse', 'sort', "):
        task_named("shuffle")


@pytest.mark.parametrize("name", TASK_NAMES)
@pytest.mark.parametrize("anchored", [False, True])
def test_batches_decode_to_valid_sources_and_their_answers(name, anchored):
    spec = default_spec(name, anchored=anchored, runs=0.3)
    ref = REFERENCES[name]
    batch = make_batch(spec, 64, torch.Generator().manual_seed(5))
    widest_source = max(len(source) for source, *_ in rows(spec, batch))
    widest_target = max(len(target) for _, target, *_ in rows(spec, batch))
    assert batch.src.shape == (64, widest_source + (2 if anchored else 0))  # each side padded on its own
    assert batch.tgt_in.shape == batch.tgt_out.shape == (64, widest_target + 1)
    for source, target, tgt_in, tgt_out in rows(spec, batch):
        assert ref.valid(source, spec.n_symbols) and spec.min_len <= len(source) <= spec.max_len
        assert target == ref.target(source, spec.n_symbols)
        ids = spec.vocabulary.encode(target)
        assert tgt_in == [BOS, *ids] + [PAD] * (widest_target - len(ids))
        assert tgt_out == [*ids, EOS] + [PAD] * (widest_target - len(ids))
    if anchored:
        assert (batch.src[:, 0] == BOS).all() and ((batch.src == EOS).sum(1) == 1).all()


@pytest.mark.parametrize("name", TASK_NAMES)
def test_every_length_in_range_is_drawn_and_only_valid_ones(name):
    spec = default_spec(name)
    drawn = {len(source) for source, *_ in rows(spec, make_batch(spec, 400, torch.Generator().manual_seed(0)))}
    assert drawn == set(spec.lengths())


@pytest.mark.parametrize("name", TASK_NAMES)
def test_a_requested_length_is_exact_and_an_invalid_one_names_the_rule(name):
    spec, task = default_spec(name), task_named(name)
    for length in task.valid_lengths(1, 20, spec.n_symbols):
        batch = make_batch(spec, 6, torch.Generator().manual_seed(length), length=length)
        assert {len(source) for source, *_ in rows(spec, batch)} == {length}
    for length in sorted(set(range(1, 21)) - set(task.valid_lengths(1, 20, spec.n_symbols)))[:3]:
        with pytest.raises(ValueError, match=f"got {length}$"):
            make_batch(spec, 2, torch.Generator().manual_seed(0), length=length)


@pytest.mark.parametrize(
    ("name", "n_symbols", "low", "high", "lengths"),
    [
        ("addition", 10, 1, 10, [3, 5, 7, 9]),
        ("addition", 10, 4, 4, []),
        ("interleave", 5, 1, 7, [2, 4, 6]),
        ("recall", 3, 1, 20, [4, 6, 8]),  # three keys: three pairs at most
        ("dyck_depth", 2, 3, 40, [4, 6, 8, 10, 12, 14, 16, 18]),
        ("histogram", 4, 5, 30, [5, 6, 7, 8, 9]),
        ("copy_memory", 10, 1, 4, [2, 3, 4]),
        ("copy", 10, 1, 4, [1, 2, 3, 4]),
    ],
)
def test_valid_lengths_lists_the_lengths_a_task_takes(name, n_symbols, low, high, lengths):
    assert list(task_named(name).valid_lengths(low, high, n_symbols)) == lengths
    assert len(task_named("copy").valid_lengths(1, 2**62, 10)) == 2**62  # a range: never walked


@pytest.mark.parametrize("name", TASK_NAMES)
def test_the_same_seed_gives_the_same_batch_and_the_stream_moves_on(name):
    spec = default_spec(name, runs=0.5)

    def tensors(batch: Batch) -> list[list[list[int]]]:
        return [batch.src.tolist(), batch.tgt_in.tolist(), batch.tgt_out.tolist()]

    gen = torch.Generator().manual_seed(42)
    first, second = make_batch(spec, 16, gen), make_batch(spec, 16, gen)
    again = make_batch(spec, 16, torch.Generator().manual_seed(42))
    other = make_batch(spec, 16, torch.Generator().manual_seed(43))
    assert tensors(first) == tensors(again)
    assert tensors(first) != tensors(second) and tensors(first) != tensors(other)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_hard_cases_examples_and_draws_are_valid_sources_of_the_length_asked(name):
    task, ref = task_named(name), REFERENCES[name]
    low, high = task.symbols_range
    rng = random.Random(0)
    for n in sorted({low, high, min(max(low, 3), high), task.default_symbols}):
        for length in task.valid_lengths(1, 20, n):
            hard = task.adversarial(n, length)
            sources = [*hard, task.example(n, length), task.draw(rng, n, length), task.draw_hard(rng, n, length)]
            assert hard and all(len(s) == length and ref.valid(s, n) for s in sources), (n, length, sources)


def test_hard_cases_hold_what_they_promise():
    assert "999+100" in task_named("addition").adversarial(10, 7)  # a carry all the way: 999 + 1 = 0001
    assert task_named("addition").target("999+100", 10) == "0001"
    assert "((((()))))" in task_named("dyck_depth").adversarial(2, 10)  # the deepest nesting
    assert "0000" in task_named("sort").adversarial(10, 4)  # a repeated symbol
    assert "a7b7c7?a" in task_named("recall").adversarial(8, 8)  # every value the same: reads every value slot


@pytest.mark.parametrize(
    ("name", "n_symbols", "source", "rule"),
    [
        ("addition", 10, "12+3", r"2m \+ 1 symbols"),
        ("addition", 10, "1+2+3", "one '[+]' between two numbers of equal length"),
        ("addition", 10, "123+4", "one '[+]' between two numbers of equal length"),
        ("addition", 10, "12345", "one '[+]' between two numbers of equal length"),
        ("addition", 2, "12+01", "symbol '2' at position 1 is not one addition reads; allowed: 0 1 [+]"),
        ("dyck_depth", 2, "(()", "an even number of symbols"),
        ("dyck_depth", 2, "())(", r"brackets must balance: the '\)' at position 2 closes nothing"),
        ("dyck_depth", 2, "((((", r"brackets must balance: 4 '\(' never closed"),
        ("dyck_depth", 2, "()" * 10, "2 to 18"),
        ("recall", 8, "a1b2?c", "the key after '[?]' must be one of the pairs' keys"),
        ("recall", 8, "a1a2?a", "the keys of a recall must be distinct"),
        ("recall", 8, "1a2b?a", r"key-value pairs \(a letter, then a digit\)"),
        ("recall", 8, "a1b2c3", r"key-value pairs \(a letter, then a digit\)"),
        ("recall", 8, "a1b2?", r"2p \+ 2 symbols"),
        ("recall", 2, "a1b2a1?a", "at most 6 for 2 distinct keys"),
        ("copy_memory", 10, "12", "symbols first, then a run of at least one blank"),
        ("copy_memory", 10, "__", "symbols first, then a run of at least one blank"),
        ("copy_memory", 10, "1_2_", "symbols first, then a run of at least one blank"),
        ("interleave", 10, "123", "two halves of equal length"),
        ("histogram", 4, "ab1", "symbol '1' at position 2 is not one histogram reads"),
        ("histogram", 4, "a" * 10, "1 to 9 symbols"),
        ("copy", 10, "12a", "symbol 'a' at position 2 is not one copy reads"),
        ("most_frequent", 4, "0125", "symbol '5' at position 3"),
        ("running_sum", 2, "0102", "symbol '2' at position 3"),
    ],
)
def test_a_bad_source_is_refused_with_the_rule_it_breaks(name, n_symbols, source, rule):
    problem = task_named(name).problem(source, n_symbols)
    assert problem is not None
    assert re.search(rule, problem), problem
    assert not REFERENCES[name].valid(source, n_symbols)


def test_a_spec_names_the_rule_of_source_ids_and_refuses_their_answer():
    spec = default_spec("addition")
    assert spec.source_problem(spec.vocabulary.encode("12+99")) is None
    assert spec.vocabulary.decode(spec.expected(spec.vocabulary.encode("12+99"))) == "021"
    assert spec.reads(spec.vocabulary.encode("12+99")) == ((0, 3), (0, 1, 3, 4), (1, 4))
    assert spec.depends(spec.vocabulary.encode("12+99")) == ((0, 3), (0, 1, 3, 4), (0, 1, 3, 4))
    bad = spec.vocabulary.encode("1+299")
    assert spec.source_problem(bad) == "an addition needs one '+' between two numbers of equal length"
    for call in (spec.expected, spec.reads, spec.depends):
        with pytest.raises(ValueError, match="one '[+]' between two numbers"):
            call(bad)
    assert "one-character symbols" in (spec.source_problem([3, 4, 99]) or "")  # an id past the vocabulary


def test_copy_reverse_and_sort_keep_their_ids_and_move_any_id():
    for name in ("copy", "reverse", "sort"):
        for n in (1, 7, 10, 36):
            assert TaskSpec(name, n_symbols=n).vocabulary is Vocabulary.of_size(n)  # the same shared instance
            assert TaskSpec(name, n_symbols=n).vocab_size == Vocabulary.size_for(n)
    assert expected_output(TaskSpec("reverse"), [3, 40, 5]) == [5, 40, 3]  # 40: past the vocabulary, still moved
    assert expected_output(TaskSpec("sort"), [9, 3, 40, 3]) == [3, 3, 9, 40]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"task": "addition", "n_symbols": 1},
            r"n_symbols must be an integer in \[2, 36\] for addition \(number base\)",
        ),
        ({"task": "dyck_depth", "n_symbols": 10}, "n_symbols must be 2 for dyck_depth .*its alphabet is fixed"),
        ({"task": "histogram", "n_symbols": 27}, r"\[1, 26\] for histogram \(number of letters\)"),
        ({"task": "copy", "n_symbols": True}, "n_symbols must be an integer"),
        ({"task": "addition", "min_len": 4, "max_len": 4}, r"max_len: the lengths 4 to 4 hold none addition takes"),
        ({"task": "recall", "n_symbols": 1, "min_len": 6, "max_len": 9}, "at most 4 for 1 distinct keys"),
        ({"task": "histogram", "min_len": 10, "max_len": 12}, "1 to 9 symbols"),
    ],
)
def test_a_spec_refuses_a_size_or_lengths_its_task_cannot_take(fields, message):
    with pytest.raises(ValueError, match=message):
        TaskSpec(**fields)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_default_specs_are_valid_and_their_vocabulary_holds_both_alphabets(name):
    spec, task = default_spec(name), task_named(name)
    symbols = spec.vocabulary.symbols
    assert set(task.source_alphabet(spec.n_symbols)) | set(task.target_alphabet(spec.n_symbols)) == set(symbols)
    assert spec.vocab_size == len(symbols) + 3
    assert (spec.min_len, spec.max_len) == task.training_lengths
    assert spec.source_problem(spec.vocabulary.encode(spec.default_source())) is None
    spec.check_fits(spec.max_len + 2)
    with pytest.raises(ValueError, match="max_len must be at most"):
        spec.check_fits(spec.max_len + 1)
    spec.check_vocab(spec.vocab_size)
    with pytest.raises(ValueError, match=f"vocab_size >= {spec.vocab_size}"):
        spec.check_vocab(spec.vocab_size - 1)


@dataclasses.dataclass(frozen=True)
class Twice(Rearrangement):
    """A test task whose output is the source written twice: longer than the source."""

    def picks(self, source: str) -> tuple[int, ...]:
        return tuple(range(len(source))) * 2

    def longest_target(self, length: int, n_symbols: int) -> int:
        return 2 * length


def test_check_fits_counts_the_longest_target(monkeypatch):
    twice = Twice("twice", "twice", "Write it twice.", "alphabet size", (1, 36), 10, (1, None), (1, 4))
    monkeypatch.setitem(tasks.TASKS, "twice", twice)
    monkeypatch.setattr(tasks, "TASK_NAMES", (*TASK_NAMES, "twice"))
    spec = TaskSpec("twice", min_len=1, max_len=5)
    assert spec.longest_target() == 10
    with pytest.raises(ValueError, match="outputs of up to 10 symbols; the model's max_len 11 leaves room for 9"):
        spec.check_fits(11)  # the source (5) fits 11 - 2 positions, its target (10) does not
    spec.check_fits(12)
    batch = make_batch(spec, 8, torch.Generator().manual_seed(0), length=5)
    assert batch.src.shape == (8, 5) and batch.tgt_in.shape == (8, 11)  # <bos> + 10 target symbols


def test_a_stored_task_of_an_earlier_version_loads_as_the_same_task():
    spec = stored_task({"task": "reverse", "n_symbols": 10, "min_len": 2, "max_len": 5})
    assert spec == TaskSpec("reverse", 10, 2, 5) and spec.vocabulary is Vocabulary.of_size(10)
    assert stored_task(None) == TaskSpec() and TaskSpec().task == "copy"
    with pytest.raises(ValueError, match="n_symbols must be 2 for dyck_depth"):
        stored_task({"task": "dyck_depth", "n_symbols": 10, "min_len": 2, "max_len": 4})


@pytest.mark.parametrize("name", TASK_NAMES)
def test_the_longest_target_never_shrinks_with_the_length_and_bounds_every_answer(name):
    """check_fits reads the longest target at the longest source: that is only right if it never decreases."""
    task, rng = task_named(name), random.Random(1)
    n = task.default_symbols
    lengths = list(task.valid_lengths(1, 30, n))
    bounds = [task.longest_target(length, n) for length in lengths]
    assert bounds == sorted(bounds)
    for length in lengths:
        for source in (*task.adversarial(n, length), *(task.draw(rng, n, length) for _ in range(20))):
            assert len(task.target(source, n)) <= task.longest_target(length, n)


def test_the_default_sources_of_sort_and_recall_show_the_task_not_a_shortcut():
    """A sorted source would make sort look like copy; a recall asking for the last key, or values in key order,
    would let position alone find the answer."""
    for length in range(2, 17):
        sort = task_named("sort").example(10, length)
        assert sorted(sort) != list(sort) and task_named("sort").problem(sort, 10) is None
    recall = default_spec("recall")
    source = recall.default_source()
    keys, values, query = source[:-2:2], source[1:-2:2], source[-1]
    assert task_named("recall").problem(source, recall.n_symbols) is None
    assert query != keys[-1] and query != keys[0]
    assert sorted(values) != list(values)
