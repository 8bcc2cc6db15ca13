"""Toy task batches: correct targets, teacher-forcing layout, padding, determinism."""

from __future__ import annotations

import pytest
import torch

from core_model import BOS, EOS, PAD
from core_model.tasks import Batch, TaskSpec, expected_output, make_batch

CLASSIC = ("copy", "reverse", "sort")  # the tasks whose output is as long as the source


def rows(batch: Batch) -> list[tuple[list[int], list[int], list[int]]]:
    """Per sequence: the real source ids, the decoder input and the labels, as lists."""
    out = []
    for src, tgt_in, tgt_out in zip(batch.src.tolist(), batch.tgt_in.tolist(), batch.tgt_out.tolist()):
        out.append(([t for t in src if t != PAD], tgt_in, tgt_out))
    return out


@pytest.mark.parametrize("task", CLASSIC)
def test_targets_follow_the_task(task):
    spec = TaskSpec(task, n_symbols=7, min_len=1, max_len=9)
    batch = make_batch(spec, 200, torch.Generator().manual_seed(0))
    width = batch.src.shape[1]
    assert batch.tgt_in.shape == batch.tgt_out.shape == (200, width + 1)
    for source, tgt_in, tgt_out in rows(batch):
        n = len(source)
        body = expected_output(spec, source)
        assert tgt_in == [BOS] + body + [PAD] * (width - n)
        assert tgt_out == body + [EOS] + [PAD] * (width - n)


def test_expected_output_examples():
    assert expected_output(TaskSpec("copy"), [5, 3, 4]) == [5, 3, 4]
    assert expected_output(TaskSpec("reverse"), [5, 3, 4]) == [4, 3, 5]
    assert expected_output(TaskSpec("sort"), [5, 3, 4, 3]) == [3, 3, 4, 5]
    with pytest.raises(ValueError, match="task must be one of"):
        TaskSpec("add")


def test_variable_lengths_are_right_padded():
    spec = TaskSpec("copy", n_symbols=5, min_len=2, max_len=6)
    batch = make_batch(spec, 64, torch.Generator().manual_seed(1))
    lengths = (batch.src != PAD).sum(1)
    assert set(lengths.tolist()) == {2, 3, 4, 5, 6}  # every allowed length occurs in 64 draws
    assert batch.src.shape[1] == int(lengths.max())
    for row, n in zip(batch.src, lengths):
        assert (row[:n] != PAD).all() and (row[n:] == PAD).all()
        assert ((row[:n] >= 3) & (row[:n] < 8)).all()  # the first five symbols: ids 3..7
    assert batch.n_tokens == int(lengths.sum()) + 64  # every symbol plus one <eos> each


def test_fixed_length_override():
    spec = TaskSpec("reverse", min_len=2, max_len=4)
    batch = make_batch(spec, 8, torch.Generator().manual_seed(2), length=7)
    assert batch.src.shape == (8, 7) and (batch.src != PAD).all()


@pytest.mark.parametrize("task", CLASSIC)
def test_same_seed_same_batch(task):
    spec = TaskSpec(task, min_len=3, max_len=8)
    a = make_batch(spec, 16, torch.Generator().manual_seed(42))
    b = make_batch(spec, 16, torch.Generator().manual_seed(42))
    c = make_batch(spec, 16, torch.Generator().manual_seed(43))
    assert all(torch.equal(x, y) for x, y in zip((a.src, a.tgt_in, a.tgt_out), (b.src, b.tgt_in, b.tgt_out)))
    assert not torch.equal(a.src, c.src)


def test_generator_stream_advances():
    gen = torch.Generator().manual_seed(0)
    first, second = make_batch(TaskSpec(), 4, gen), make_batch(TaskSpec(), 4, gen)
    assert not torch.equal(first.src, second.src)


def test_batch_to_device():
    batch = make_batch(TaskSpec(), 2, torch.Generator().manual_seed(0)).to("cpu")
    assert batch.src.device.type == "cpu"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"task": "add"}, "task"),
        ({"n_symbols": 0}, "n_symbols"),
        ({"n_symbols": 37}, "n_symbols"),
        ({"min_len": 0}, "min_len"),
        ({"min_len": 5, "max_len": 4}, "max_len"),
    ],
)
def test_invalid_task_spec(kwargs, field):
    with pytest.raises(ValueError, match=field):
        TaskSpec(**kwargs)


def test_vocabulary_of_spec():
    assert TaskSpec(n_symbols=4).vocabulary.symbols == "0123"


# --- domain rules: how long a source may be, how big a vocabulary must be, the default source --------------------


@pytest.mark.parametrize("model_max_len", [3, 12, 256])
def test_max_source_len_leaves_room_for_bos_and_eos(model_max_len):
    from core_model.tasks import SEQUENCE_OVERHEAD, max_source_len

    n = max_source_len(model_max_len)
    assert SEQUENCE_OVERHEAD == 2
    assert n + len(["<bos>", "<eos>"]) == model_max_len  # <bos> + n symbols + <eos> fill the model exactly
    spec = TaskSpec(min_len=1, max_len=n)
    batch = make_batch(spec, 4, torch.Generator().manual_seed(0), length=n)
    assert batch.tgt_in.shape[1] + 1 == model_max_len  # <bos> + body, and the <eos> label still fits


def test_check_fits_names_the_limit():
    TaskSpec(min_len=1, max_len=10).check_fits(12)  # 10 + 2 == 12: fits exactly
    with pytest.raises(ValueError, match=r"max_len must be at most 9 .*max_len 11.*got 10"):
        TaskSpec(min_len=1, max_len=10).check_fits(11)
    with pytest.raises(ValueError, match="at most 0"):
        TaskSpec(min_len=1, max_len=1).check_fits(2)


@pytest.mark.parametrize("n_symbols", [1, 7, 10, 36])
def test_task_vocab_size_counts_specials(n_symbols):
    spec = TaskSpec(n_symbols=n_symbols)
    assert spec.vocab_size == n_symbols + len(["<pad>", "<bos>", "<eos>"])
    batch = make_batch(spec, 64, torch.Generator().manual_seed(1))
    assert int(batch.tgt_in.max()) < spec.vocab_size  # every id a batch holds fits a model of that size


@pytest.mark.parametrize(
    ("n_symbols", "max_len", "expected"),
    [
        (10, 10, "0123456789"),
        (3, 7, "0120120"),
        (12, 5, "01234"),
        (1, 3, "000"),
        (36, 1, "0"),
    ],
)
def test_default_source_repeats_or_cuts_the_symbols(n_symbols, max_len, expected):
    spec = TaskSpec(n_symbols=n_symbols, min_len=1, max_len=max_len)
    assert spec.default_source() == expected
    assert TaskSpec().default_source() == "0123456789"
    ids = spec.vocabulary.encode(spec.default_source())
    assert len(ids) == max_len and sorted(set(ids)) == list(spec.vocabulary.symbol_ids)[: min(n_symbols, max_len)]


@pytest.mark.parametrize("n_symbols", [1, 10, 36])
def test_check_vocab_admits_exactly_the_symbols_plus_three_specials(n_symbols):
    task = TaskSpec(n_symbols=n_symbols)
    needed = n_symbols + len(("<pad>", "<bos>", "<eos>"))  # counted here, independently of the vocabulary module
    task.check_vocab(needed)
    task.check_vocab(needed + 5)
    with pytest.raises(ValueError, match=f"vocab_size >= {needed}"):
        task.check_vocab(needed - 1)
