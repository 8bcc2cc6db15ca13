"""The shipped checkpoints: copy, reverse and sort per encoding right on every input (the task library's other
models: test_core_shipped_tasks.py), every model found by architecture and task.

The checks use the test's own data (itertools and its own random draws) and its own greedy loop (full recomputation
of the decoder at every step, no key/value cache), not core_model's evaluation code.
"""

from __future__ import annotations

import itertools
import shutil

import pytest
import torch

from core_model import ModelConfig
from core_model.checkpoint import load_checkpoint
from core_model.shipped import SHIPPED_CHECKPOINTS, SHIPPED_MODELS, find_shipped_checkpoint, is_shipped, resource_path
from core_model.vocab import BOS, EOS, N_SPECIALS, PAD

RANDOM_SOURCES = 1000  # random sources per model, lengths uniform over its training range
EXPECTED = {"copy": lambda s: list(s), "reverse": lambda s: s[::-1], "sort": sorted}
CLASSIC = tuple(f"{task}_{pe}.pt" for task in EXPECTED for pe in ("rope", "sinusoidal"))


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


def own_greedy(model, task, sources: list[list[int]]) -> list[list[int]]:
    """Greedy outputs (up to <eos>) of same-length sources, recomputing the whole decoder every step."""
    n = len(sources[0])
    rows = [[BOS, *s, EOS] if task.anchored else list(s) for s in sources]
    src = torch.tensor(rows)
    tgt = torch.full((len(sources), 1), BOS)
    with torch.no_grad():
        for _ in range(n + 1):
            nxt = model(src, tgt).log_probs[:, -1].argmax(-1, keepdim=True)
            tgt = torch.cat((tgt, nxt), dim=1)
    out = []
    for row in tgt[:, 1:].tolist():
        out.append(row[: row.index(EOS)] if EOS in row else row + [PAD])  # no <eos>: never right
    return out


def wrong(model, task, sources: list[list[int]]) -> list[tuple[list[int], list[int]]]:
    by_length: dict[int, list[list[int]]] = {}
    for s in sources:
        by_length.setdefault(len(s), []).append(s)
    bad = []
    for group in by_length.values():
        for s, got in zip(group, own_greedy(model, task, group)):
            if got != EXPECTED[task.task](s):
                bad.append((s, got))
    return bad


@pytest.fixture(scope="module", params=CLASSIC)
def shipped(request):
    ckpt = load_checkpoint(resource_path(request.param))
    return request.param, ckpt.build().eval(), ckpt


def test_one_model_per_task_and_encoding_with_the_default_architecture():
    found = set()
    for name in SHIPPED_CHECKPOINTS:
        ckpt = load_checkpoint(resource_path(name))
        vocab = max(ModelConfig().vocab_size, ckpt.task.vocab_size)  # the default's, unless the task needs more
        assert not ckpt.config.architecture_differs(ModelConfig(positional=ckpt.config.positional, vocab_size=vocab))
        found.add((ckpt.task.task, ckpt.config.positional))
        assert name == f"{ckpt.task.task}_{ckpt.config.positional}.pt"
    assert found == {(t, pe) for t, encodings in SHIPPED_MODELS.items() for pe in encodings}
    assert set(CLASSIC) <= set(SHIPPED_CHECKPOINTS)


def test_exact_on_every_source_of_length_1_to_3(shipped):
    name, model, ckpt = shipped
    symbols = range(N_SPECIALS, N_SPECIALS + ckpt.task.n_symbols)
    every = [list(p) for n in (1, 2, 3) for p in itertools.product(symbols, repeat=n)]
    assert len(every) == 1110
    assert wrong(model, ckpt.task, every) == [], name


def test_exact_on_every_repeated_symbol_source_of_its_training_range(shipped):
    name, model, ckpt = shipped
    task = ckpt.task
    assert task.min_len == 1 and task.max_len >= 12
    runs = [[sym] * n for n in range(1, task.max_len + 1) for sym in range(N_SPECIALS, N_SPECIALS + task.n_symbols)]
    assert wrong(model, task, runs) == [], name


def test_at_least_999_in_1000_random_sources_over_its_training_range(shipped):
    name, model, ckpt = shipped
    task = ckpt.task
    gen = torch.Generator().manual_seed(2026)
    lengths = torch.randint(task.min_len, task.max_len + 1, (RANDOM_SOURCES,), generator=gen).tolist()
    sources = [torch.randint(N_SPECIALS, N_SPECIALS + task.n_symbols, (n,), generator=gen).tolist() for n in lengths]
    assert len(wrong(model, task, sources)) <= RANDOM_SOURCES // 1000, name


def test_every_shipped_checkpoint_is_read_only_and_found_by_architecture_and_task():
    for name in SHIPPED_CHECKPOINTS:
        path = resource_path(name)
        assert path.is_file() and is_shipped(path)
        ckpt = load_checkpoint(path)
        found = find_shipped_checkpoint(ckpt.config, ckpt.task.task)
        assert found is not None and found[0] == path
    assert find_shipped_checkpoint(ModelConfig(), "reverse")[0].name == "reverse_rope.pt"
    assert find_shipped_checkpoint(ModelConfig(positional="sinusoidal"), "sort")[0].name == "sort_sinusoidal.pt"
    assert find_shipped_checkpoint(ModelConfig(d_model=32), "copy") is None


def test_copies_and_neighbours_of_a_shipped_checkpoint_are_not_shipped(tmp_path):
    shipped = resource_path(SHIPPED_CHECKPOINTS[0])
    copy = tmp_path / shipped.name
    shutil.copy(shipped, copy)
    assert not is_shipped(copy)
    assert not is_shipped(shipped.parent / "my-own-model.pt")
    assert is_shipped(shipped.parent / "." / shipped.name)  # the same file, spelled differently
