"""core_model.circuits_report.read_circuits, the one entry the circuits verb and the Circuits tab call: it refuses
over the budget before any work, reports each of its steps and stops when its progress callback raises, and its
ranking of the links is the one a brute-force reading of the definition gives."""

from __future__ import annotations

import math

import pytest

from core_model import ModelConfig, build_model
from core_model.analysis_budget import BudgetError
from core_model.circuits_report import STEPS, read_circuits
from core_model.head_composition import composition_scores
from core_model.position_circuits import position_circuits

SMALL = ModelConfig(vocab_size=13, d_model=16, n_heads=2, d_ff=32, max_len=12)


class Stop(Exception):
    pass


def test_a_model_over_the_budget_is_refused_before_the_first_step():
    model = build_model(ModelConfig(vocab_size=1024, d_model=16, n_heads=2, d_ff=32), seed=0)
    calls = []
    with pytest.raises(BudgetError, match="the model alone"):
        read_circuits(model, 12, progress=lambda done, total: calls.append((done, total)))
    assert calls == []


def test_progress_comes_before_each_step_and_at_the_end_and_raising_stops_the_work():
    model = build_model(SMALL, seed=0)
    calls = []
    report = read_circuits(model, 8, samples=10, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(k, len(STEPS)) for k in range(len(STEPS) + 1)]
    assert report.n_positions == 8 and report.positions[0].scores.shape[0] == 8

    def stop_at_two(done: int, _total: int) -> None:
        if done == 2:
            raise Stop

    with pytest.raises(Stop):
        read_circuits(model, 8, samples=10, progress=stop_at_two)


def test_the_parts_are_the_analyses_own_and_the_ranking_follows_its_definition():
    model = build_model(SMALL, seed=1)
    report = read_circuits(model, 8, samples=20, seed=3, rank=True)
    assert [s.to_dict() for s in report.composition] == [s.to_dict() for s in composition_scores(model)]
    assert [p.to_dict() for p in report.positions] == [p.to_dict() for p in position_circuits(model, 8)]
    assert report.baseline.samples == 20 and report.baseline.seed == 3
    # brute force: a link stands out above the higher 95th percentile of its type; largest score / baseline first
    bar = {kind: max(report.baseline.p95[kind], report.unlinked.p95[kind]) for kind in report.baseline.p95}
    out = [link for link in report.composition if link.score > bar[link.type]]
    out.sort(key=lambda link: -link.score / report.baseline.scores[link.type])
    assert report.ranking is not None
    assert [link.to_dict() for link in report.ranking.links] == [link.to_dict() for link in out]
    for head, (links, standing) in report.ranking.per_head.items():
        mine = [link for link in report.composition if head in (link.source, link.target)]
        assert links == len(mine) and standing == sum(link in out for link in mine)
    assert all(math.isfinite(link.score) for link in report.composition)
    assert read_circuits(model, 8, samples=20, seed=3).ranking is None  # the verb asks for none
