"""evaluate_lengths against the test's own greedy loop (one sequence at a time, full recomputation, no cache)."""

from __future__ import annotations

import contextlib

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.length_eval import (
    evaluate_lengths,
    exhaustive_sources,
    greedy_outputs,
    repeated_symbol_sources,
    wrong_sources,
)
from core_model.stopping import Stop
from core_model.tasks import TaskSpec, make_batch
from core_model.training import TrainConfig, Trainer
from core_model.vocab import BOS, EOS

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


@pytest.fixture(scope="module")
def legacy():
    """A small RoPE copy model trained briefly without anchor: right on many sources, wrong on "33", so figures are
    neither 0 nor 1."""
    torch.set_num_threads(1)
    task = TaskSpec("copy", n_symbols=5, min_len=1, max_len=6)
    model = build_model(ModelConfig(d_model=32, n_heads=2, d_ff=64, max_len=32), seed=0)
    trainer = Trainer(model, task, TrainConfig(steps=150, batch_size=32, lr=5e-3, device="cpu"))
    for _ in trainer.train_steps():
        pass
    return model.eval(), task


def own_greedy(model, src_ids: list[int], steps: int) -> list[int]:
    """Argmax decoding recomputing the whole decoder at every step; stops after <eos>."""
    src = torch.tensor([src_ids])
    out = [BOS]
    with torch.no_grad():
        for _ in range(steps):
            nxt = int(model(src, torch.tensor([out])).log_probs[0, -1].argmax())
            out.append(nxt)
            if nxt == EOS:
                break
    return out[1:]


def own_figures(model, task: TaskSpec, length: int, n: int, seed: int) -> tuple[float, float]:
    """Exact match and token accuracy by the test's own loop on the documented sources (make_batch, seed)."""
    batch = make_batch(task, n, torch.Generator().manual_seed(seed), length)
    exact = correct = 0
    for src, want in zip(batch.src.tolist(), batch.tgt_out.tolist()):
        got = own_greedy(model, src, length + 1)
        got = (got + [0] * (length + 1))[: length + 1]
        exact += got == want
        correct += sum(g == w for g, w in zip(got, want))
    return exact / n, correct / (n * (length + 1))


def test_figures_equal_an_independent_greedy_loop(legacy):
    model, task = legacy
    sweep = evaluate_lengths(model, task, [1, 2, 3, 24], n=40, seed=5, batch_size=16)
    assert sweep.lengths == (1, 2, 3, 24) and sweep.task == "copy"
    for length, result in sweep.per_length.items():
        exact, acc = own_figures(model, task, length, 40, 5)
        assert (result.exact_match, result.token_accuracy, result.n) == (exact, pytest.approx(acc, abs=1e-12), 40)
    assert sweep.per_length[2].exact_match < 1.0  # "33" -> "3": the figures are not trivially 1


def test_a_length_gives_the_same_figure_in_any_range_and_batch_size(legacy):
    model, task = legacy
    alone = evaluate_lengths(model, task, [2], n=60, seed=9, batch_size=60).per_length[2]
    in_range = evaluate_lengths(model, task, [1, 2, 3], n=60, seed=9, batch_size=7).per_length[2]
    assert alone == in_range
    other_seed = evaluate_lengths(model, task, [2], n=60, seed=10).per_length[2]
    assert other_seed.exact_match != alone.exact_match or other_seed.token_accuracy != alone.token_accuracy


def test_progress_counts_sources_and_a_stop_raised_there_ends_the_sweep(legacy):
    model, task = legacy
    seen = []
    sweep = evaluate_lengths(model, task, [1, 2], n=10, batch_size=4, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(4, 20), (8, 20), (10, 20), (14, 20), (18, 20), (20, 20)] and sweep.lengths == (1, 2)
    reported = []

    def stop_at_fourth(done: int, total: int) -> None:
        reported.append(done)
        if len(reported) == 4:
            raise Stop

    with pytest.raises(Stop):
        evaluate_lengths(model, task, [1, 2, 3], n=10, batch_size=4, progress=stop_at_fourth)
    assert reported == [4, 8, 10, 14]  # no batch ran after the report that asked to stop


def test_position_scaling_is_entered_around_each_length(legacy):
    model, task = legacy
    entered = []

    @contextlib.contextmanager
    def scaling(m, length):
        assert m is model
        entered.append(length)
        yield

    evaluate_lengths(model, task, [3, 1], n=4, position_scaling=scaling)
    assert entered == [3, 1]


def test_bad_lengths_are_refused(legacy):
    model, task = legacy
    for bad in ([0], [31], [2.5]):
        with pytest.raises(ValueError, match="length must be an integer"):
            evaluate_lengths(model, task, bad, n=2)
    with pytest.raises(ValueError, match="n must be"):
        evaluate_lengths(model, task, [1], n=0)


def test_source_sets():
    task = TaskSpec(n_symbols=3)
    assert repeated_symbol_sources(task, [1, 3]) == [[3], [4], [5], [3, 3, 3], [4, 4, 4], [5, 5, 5]]
    every = exhaustive_sources(task, 3)
    assert len(every) == 3 + 9 + 27 == len({tuple(s) for s in every})
    assert all(1 <= len(s) <= 3 and set(s) <= {3, 4, 5} for s in every)


def test_greedy_outputs_and_wrong_sources_match_the_own_loop(legacy):
    model, task = legacy
    sources = repeated_symbol_sources(task, [1, 2, 5]) + [[3, 4, 5], [9, 8, 7, 6]]
    outputs = greedy_outputs(model, task, sources, batch_size=3)
    for source, got in zip(sources, outputs):
        own = own_greedy(model, source, len(source) + 1)
        assert got == (own[: own.index(EOS)] if EOS in own else own + [0])
    wrong = wrong_sources(model, task, sources)
    assert [s for s, _ in wrong] == [s for s, o in zip(sources, outputs) if o != s]
    right = [tuple(s) for s, o in zip(sources, outputs) if o == s]
    for symbol in task.vocabulary.symbol_ids:  # one output for "3", "33", "33333": right for one length at most
        assert sum(set(s) == {symbol} for s in right) <= 1


@pytest.mark.parametrize("anchored", [False, True])
def test_a_rope_encoder_without_anchor_cannot_tell_00_from_0000(anchored):
    """Any RoPE model, trained or not: values carry no position, so a one-symbol source's memory has no length."""
    model = build_model(ModelConfig(), seed=1).eval()
    task = TaskSpec(anchored=anchored)
    tgt = torch.tensor([[BOS, 3]])
    with torch.no_grad():
        short, long = (model(torch.tensor([task.source_ids([3] * k)]), tgt).log_probs for k in (2, 4))
    differ = float((short - long).abs().max())
    assert (differ > 1e-3) if anchored else (differ < 1e-5)
