"""The length lab's two jobs as plain functions: they run on a worker thread, report snapshots and poll for a stop.

LengthLabState submits them to its task slots; nothing here touches Qt or the state, so a job holds only the
settings it was started with.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from functools import partial

from core_model.length_curves import length_curve, rope_length_scaling
from core_model.length_eval import LengthResult
from core_model.length_probe import LengthProbe, probe_source, run_probe
from core_model.tasks import max_source_len

from .length_lab_snapshots import CurvePoint, LabModel, ModelSource, ProbePair, SweepPlan, load_source, sweep_plan

SCALED = {"none": "", "pi": " + PI", "ntk": " + NTK"}  # appended to a RoPE model's name when it is stretched
YIELD_S = 0.002  # the job sleeps this long at each poll (between batches) so the GUI thread gets the GIL and a core
PROBE_SEED = 0


def evaluate_pair(
    sources: tuple[ModelSource, ...],
    n: int,
    seed: int,
    scaling: str,
    report: Callable[[object], None],
    check: Callable[[], None],
) -> tuple[tuple[LabModel, ...], SweepPlan, tuple[tuple[LengthResult, ...], ...]]:
    """Score each model at every length of the sweep; reports ("plan", models, plan), then one CurvePoint a length.
    `check` raises the task layer's Cancelled (a core_model Stop) once the run is cancelled."""

    def between_batches(_done: int, _total: int) -> None:  # also hands the GIL and the core to the GUI
        time.sleep(YIELD_S)
        check()

    models = tuple(load_source(s) for s in sources)
    plan = sweep_plan(models, n, seed, scaling)
    report(("plan", models, plan))
    curves: list[tuple[LengthResult, ...]] = []
    for slot, lab_model in enumerate(models):
        model = lab_model.checkpoint.build()
        kind = scaling if lab_model.positional == "rope" else "none"
        lengths = [x for x in plan.lengths if x <= max_source_len(model.config.max_len)]
        curves.append(
            length_curve(
                model,
                lab_model.task,
                lengths,
                n=n,
                seed=seed,
                scaling=kind,
                progress=partial(_report_point, report, slot),
                batches=between_batches,
            )
        )
    return models, plan, tuple(curves)


def _report_point(report: Callable[[object], None], slot: int, point: LengthResult) -> None:
    """One length's result of model `slot`, reported as it arrives."""
    report(CurvePoint(slot, point))


def probe_pair(
    length: int,
    source_kind: str,
    sources: tuple[ModelSource, ...],
    models: tuple[LabModel, ...],
    scaling: str,
    check: Callable[[], None],
) -> ProbePair:
    """Both models' cross-attention on one source of `length` (None for a model that cannot read that length).

    `models` are the ones the last evaluation loaded (empty: load `sources`); `check` raises when the job is stopped.
    """
    loaded = models or tuple(load_source(s) for s in sources)
    probes: list[LengthProbe | None] = []
    for lab_model in loaded:
        check()
        model, task = lab_model.checkpoint.build(), lab_model.task
        if length > max_source_len(model.config.max_len):
            probes.append(None)
            continue
        kind = scaling if lab_model.positional == "rope" else "none"
        hook = rope_length_scaling(model, kind, task.max_len)  # as the curve: stretched to this length
        with hook(model, length) if hook is not None else nullcontext():
            probes.append(run_probe(model, task, probe_source(task, length, PROBE_SEED, source_kind)))
    labels = tuple(
        m.label + (SCALED[scaling] if m.positional == "rope" and length > m.task.max_len else "") for m in loaded
    )  # the maps say when a RoPE model was stretched to this length
    return ProbePair(length, source_kind, labels, tuple(m.task for m in loaded), tuple(probes))
