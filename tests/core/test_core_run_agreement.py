"""path_agreement against a loop written here: per query, the run's argmax key and the direct path's over the keys
the run's mask lets it see within the table, and how many agree."""

from __future__ import annotations

import numpy as np

from core_model.run_agreement import path_agreement


def by_hand(direct: np.ndarray, run: np.ndarray, valid: np.ndarray) -> tuple[int, int]:
    matched = queries = 0
    for i in range(min(direct.shape[0], run.shape[0])):
        keys = [j for j in range(min(direct.shape[1], run.shape[1])) if valid[i, j]]
        if not keys:
            continue
        queries += 1
        best_run = max(keys, key=lambda j: (run[i, j], -j))  # the first on a tie
        best_direct = max(keys, key=lambda j: (direct[i, j], -j))
        matched += best_run == best_direct
    return matched, queries


def test_agreement_counts_the_queries_whose_run_key_the_direct_path_picks_among_the_keys_it_may_see():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n, tq, tk = rng.integers(1, 9, size=3)
        direct = rng.normal(size=(n, n)).round(1)  # rounding makes ties
        run = rng.normal(size=(tq, tk)).round(1)
        valid = rng.random((tq, tk)) < 0.7
        run[~valid] = 5.0  # a masked cell never counts, however large
        agreement = path_agreement(direct, run, valid)
        assert (agreement.matched, agreement.queries) == by_hand(direct, run, valid), trial
        assert len(agreement.run_keys) == min(n, tq)


def test_a_direct_path_that_prefers_the_next_key_agrees_with_a_run_that_looks_there():
    direct = np.eye(4, k=1) - np.eye(4)  # each query's best key is the next one; the last row's is a tie at 0
    run = np.eye(4, 6, k=1)
    agreement = path_agreement(direct, run, np.ones((4, 6), dtype=bool))
    assert agreement.to_dict() == {"run_keys": [1, 2, 3, 0], "direct_keys": [1, 2, 3, 0], "matched": 4, "queries": 4}
