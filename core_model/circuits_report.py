"""Everything read from one model's weights about its heads, in one call: each head's QK and OV circuits over tokens
and positions, how heads compose, and the two yardsticks a composition score is judged against.

`read_circuits` is the one entry `attention-playground circuits` and the Circuits tab both call, so neither assembles
the four analyses itself and their numbers cannot drift apart. A link "stands out" only above the 95th percentile of
both yardsticks: random heads' scores (which pack tightly, about half above their mean) and the model's own heads'
scores where no path exists (trained heads score above random ones whether or not they compose).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .analysis_budget import NO_KNOBS, Knobs, check_circuits
from .circuits import HeadCircuit, HeadRef, token_circuits
from .head_composition import (
    CompositionBaseline,
    CompositionScore,
    CompositionType,
    UnlinkedScores,
    composition_scores,
    random_baseline,
    unlinked_scores,
)
from .model import Seq2SeqTransformer
from .position_circuits import PositionCircuit, position_circuits

STEPS = ("the QK and OV circuits", "the position circuits", "the composition scores", "the random baseline")
DEFAULT_SAMPLES, DEFAULT_SEED = 100, 0  # the random baseline's heads and the seed of their matrices


@dataclass(frozen=True)
class LinkRanking:
    """The links above both yardsticks' 95th percentiles, largest score / baseline first, and each head's counts.

    A model may have millions of links: sorting and counting them is work for the caller's worker thread, so that a
    window only reads the first rows of an order made there."""

    links: tuple[CompositionScore, ...]
    per_head: dict[HeadRef, tuple[int, int]]  # head -> (its links in or out, those that stand out)


def link_bar(baseline: CompositionBaseline, unlinked: UnlinkedScores, kind: CompositionType) -> float:
    """The score a link of this type must pass to stand out: the higher of the two yardsticks' 95th percentiles."""
    return max(baseline.p95[kind], unlinked.p95[kind])


def link_ratio(link: CompositionScore, baseline: CompositionBaseline) -> float:
    """The link's score as a multiple of what random heads of the same shapes give for its type."""
    base = baseline.scores[link.type]
    return link.score / base if base > 0 else math.nan


def rank_links(
    composition: tuple[CompositionScore, ...], baseline: CompositionBaseline, unlinked: UnlinkedScores
) -> LinkRanking:
    """Every link judged against its type's `link_bar` once, those that stand out ordered by `link_ratio`."""
    bars = {kind: link_bar(baseline, unlinked, kind) for kind in baseline.p95}
    per_head: dict[HeadRef, list[int]] = {}
    standing = []
    for link in composition:
        up = link.score > bars[link.type]
        for ref in {link.source, link.target}:
            counts = per_head.setdefault(ref, [0, 0])
            counts[0] += 1
            counts[1] += up
        if up:
            standing.append(link)

    standing.sort(key=lambda link: link_ratio(link, baseline), reverse=True)
    return LinkRanking(tuple(standing), {ref: (n, up) for ref, (n, up) in per_head.items()})


@dataclass(frozen=True)
class CircuitsReport:
    """One model's circuits, composition scores and yardsticks; `ranking` when asked for."""

    heads: tuple[HeadCircuit, ...]  # head_refs order
    positions: tuple[PositionCircuit, ...]  # head_refs order
    composition: tuple[CompositionScore, ...]
    baseline: CompositionBaseline
    unlinked: UnlinkedScores
    n_positions: int
    ranking: LinkRanking | None = None

    def to_dict(self) -> dict:
        """The report as the `circuits` verb prints it (without the file's own fields: tokens, task, path)."""
        baseline, unlinked = self.baseline, self.unlinked
        return {
            "heads": [circuit.to_dict() for circuit in self.heads],
            "positions": [circuit.to_dict() for circuit in self.positions],
            "n_positions": self.n_positions,
            "composition": [score.to_dict() for score in self.composition],
            "baseline": dict(baseline.scores),
            "baseline_p95": dict(baseline.p95),
            "baseline_spread": dict(baseline.spread),
            "baseline_samples": baseline.samples,
            "unlinked": {"mean": dict(unlinked.mean), "p95": dict(unlinked.p95), "pairs": unlinked.pairs},
            "seed": baseline.seed,
        }


def read_circuits(
    model: Seq2SeqTransformer,
    n_positions: int,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    *,
    rank: bool = False,
    knobs: Knobs = NO_KNOBS,
    progress: Callable[[int, int], None] | None = None,
) -> CircuitsReport:
    """The four analyses of `model`'s weights (no source is run), refused with BudgetError before any of them when
    over the analysis budget (`knobs` names the options to lower). `progress(done, total)` comes before each of the
    four steps (STEPS[done] is the one starting) and once at the end; raising from it stops the work there.
    rank: also rank the links (LinkRanking), for a view that lists the strongest."""
    check_circuits(model.config, n_positions, samples, knobs)
    report = progress or (lambda _done, _total: None)
    total = len(STEPS)
    report(0, total)
    heads = tuple(token_circuits(model))
    report(1, total)
    positions = tuple(position_circuits(model, n_positions))
    report(2, total)
    composition, unlinked = tuple(composition_scores(model)), unlinked_scores(model)
    report(3, total)
    baseline = random_baseline(model.config, samples, seed)
    ranking = rank_links(composition, baseline, unlinked) if rank else None
    report(total, total)
    return CircuitsReport(heads, positions, composition, baseline, unlinked, n_positions, ranking)
