"""The shipped models of the task library beyond copy, reverse and sort: each right on every length it was trained
on, on random sources (at least 99 in 100 of each length) and on every one of its task's hard cases.

Expected outputs come from the test's own reference of each task (tests/task_references.py) and outputs from the
test's own greedy loop (the whole decoder recomputed at every step); only the sources are drawn by the task.
"""

from __future__ import annotations

import random

import pytest
import torch
from task_references import REFERENCES

from core_model.checkpoint import load_checkpoint
from core_model.shipped import SHIPPED_CHECKPOINTS, SHIPPED_MODELS, resource_path
from core_model.vocab import BOS, EOS

PER_LENGTH = 200  # random sources of each trained length
LIBRARY = tuple(name for name in SHIPPED_CHECKPOINTS if name.rsplit("_", 1)[0] not in ("copy", "reverse", "sort"))

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


def own_greedy(model, task, sources: list[str]) -> list[str]:
    """Greedy outputs (up to <eos>; "?" where none was written) of same-length sources."""
    vocab = task.vocabulary
    rows = [task.source_ids(vocab.encode(s)) for s in sources]
    src = torch.tensor(rows)
    tgt = torch.full((len(sources), 1), BOS)
    with torch.no_grad():
        for _ in range(task.longest_target() + 1):
            nxt = model(src, tgt).log_probs[:, -1].argmax(-1, keepdim=True)
            tgt = torch.cat((tgt, nxt), dim=1)
    out = []
    for row in tgt[:, 1:].tolist():
        out.append(vocab.decode(row) if EOS in row else "?")
    return out


def wrong(model, task, sources: list[str]) -> list[tuple[str, str]]:
    reference = REFERENCES[task.task]
    got = own_greedy(model, task, sources)
    return [(s, g) for s, g in zip(sources, got) if g != reference.target(s, task.n_symbols)]


@pytest.fixture(scope="module", params=LIBRARY or ["none"])
def shipped(request):
    if request.param == "none":
        pytest.fail("no shipped model of the task library beyond copy, reverse and sort")
    ckpt = load_checkpoint(resource_path(request.param))
    return request.param, ckpt.build().eval(), ckpt.task


def test_every_listed_model_is_a_rope_model_of_its_task():
    for task, encodings in SHIPPED_MODELS.items():
        assert "rope" in encodings, task
        for pe in encodings:
            ckpt = load_checkpoint(resource_path(f"{task}_{pe}.pt"))
            assert (ckpt.task.task, ckpt.config.positional) == (task, pe)
            assert ckpt.config.vocab_size >= ckpt.task.vocab_size


def test_at_least_99_in_100_random_sources_of_every_trained_length(shipped):
    name, model, task = shipped
    rng = random.Random(2026)
    for length in task.lengths():
        sources = [task.definition.draw(rng, task.n_symbols, length) for _ in range(PER_LENGTH)]
        bad = wrong(model, task, sources)
        assert len(bad) <= PER_LENGTH // 100, (name, length, bad[:3])


def test_right_on_every_hard_case_of_every_trained_length(shipped):
    name, model, task = shipped
    for length in task.lengths():
        cases = list(task.definition.adversarial(task.n_symbols, length))
        assert wrong(model, task, cases) == [], (name, length)
