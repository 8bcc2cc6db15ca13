"""TaskSpec's two data options for the shipped models: runs of repeated symbols, and anchored sources."""

from __future__ import annotations

import pytest
import torch

from core_model import BOS, EOS, PAD
from core_model.tasks import TaskSpec, expected_output, make_batch


def test_without_runs_the_random_stream_is_the_plain_uniform_draw():
    spec = TaskSpec("copy", n_symbols=7, min_len=2, max_len=9)
    batch = make_batch(spec, 50, torch.Generator().manual_seed(3))
    gen = torch.Generator().manual_seed(3)  # the draws, written out independently
    lengths = torch.randint(2, 10, (50,), generator=gen)
    symbols = torch.randint(3, 10, (50, int(lengths.max())), generator=gen)
    for row, n, sym in zip(batch.src.tolist(), lengths.tolist(), symbols.tolist()):
        assert row == sym[:n] + [PAD] * (len(row) - n)


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_runs_make_one_symbol_sources_common_and_targets_stay_right(task):
    spec = TaskSpec(task, n_symbols=10, min_len=4, max_len=12, runs=1.0)
    batch = make_batch(spec, 2000, torch.Generator().manual_seed(0))
    one_symbol = repeats = 0
    for src, tgt_out in zip(batch.src.tolist(), batch.tgt_out.tolist()):
        ids = [t for t in src if t != PAD]
        assert tgt_out[: len(ids) + 1] == expected_output(spec, ids) + [EOS]
        one_symbol += len(set(ids)) == 1
        repeats += any(a == b for a, b in zip(ids, ids[1:]))
    assert 0.2 < one_symbol / 2000 < 0.4  # a quarter forced, plus rows whose drawn probability is near 1
    assert repeats / 2000 > 0.85  # uniform draws of length >= 4 over 10 symbols: about 0.27 to 0.66


def test_a_fraction_of_runs_changes_only_that_fraction_of_rows():
    plain = make_batch(TaskSpec(min_len=8, max_len=8), 4000, torch.Generator().manual_seed(1))
    mixed = make_batch(TaskSpec(min_len=8, max_len=8, runs=0.25), 4000, torch.Generator().manual_seed(1))
    one_symbol = sum(len(set(row)) == 1 for row in mixed.src.tolist())
    assert 0.04 < one_symbol / 4000 < 0.12 and sum(len(set(row)) == 1 for row in plain.src.tolist()) == 0


def test_anchored_sources_are_wrapped_and_targets_unchanged():
    plain = make_batch(TaskSpec("reverse", min_len=1, max_len=6), 30, torch.Generator().manual_seed(2))
    anchored = make_batch(
        TaskSpec("reverse", min_len=1, max_len=6, anchored=True), 30, torch.Generator().manual_seed(2)
    )
    assert torch.equal(plain.tgt_in, anchored.tgt_in) and torch.equal(plain.tgt_out, anchored.tgt_out)
    assert anchored.src.shape == (30, plain.src.shape[1] + 2)
    for p, a in zip(plain.src.tolist(), anchored.src.tolist()):
        ids = [t for t in p if t != PAD]
        assert a == [BOS, *ids, EOS] + [PAD] * (len(a) - len(ids) - 2)
    assert TaskSpec(anchored=True).source_ids([5, 6]) == [BOS, 5, 6, EOS] and TaskSpec().source_ids([5, 6]) == [5, 6]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"runs": 1.5}, "runs must be a number in"),
        ({"runs": -0.1}, "runs must be a number in"),
        ({"anchored": 1}, "anchored must be one of"),
    ],
)
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TaskSpec(**kwargs)
