"""The causal lab's costs: a full head-patching sweep and attribution at source length 16, on a shipped model, and
reading every head's circuits and composition scores from the weights.

The patching baseline is the same two batched forward passes the sweep makes (clean and corrupt together, then one
row per patched head, per attention layer and per encoder position) with no hooks: the ratio is what patching adds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from core_model import EOS
from core_model.attribution import attribute
from core_model.checkpoint import load_checkpoint
from core_model.circuits import token_circuits
from core_model.head_composition import composition_scores, random_baseline, unlinked_scores
from core_model.inputs import decoder_input
from core_model.patching import patch_effects
from core_model.position_circuits import default_positions, position_circuits
from core_model.shipped import resource_path
from core_model.tasks import expected_output

CLEAN, CORRUPT = "3141592653589793", "3141592653989793"  # length 16, one symbol changed


@dataclass(frozen=True)
class CausalTimes:
    patch_sweep_s: float
    same_forwards_s: float
    attribute_s: float
    circuits_s: float  # token and position circuits, composition, both yardsticks (the Circuits tab's work)


def _median_seconds(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(device: torch.device, repeats: int = 5, ig_steps: int = 32) -> CausalTimes:
    """Median seconds of each, after one warm-up call, on the shipped copy model (RoPE)."""
    ckpt = load_checkpoint(resource_path("copy_rope.pt"))
    model, task = ckpt.build(device).eval(), ckpt.task
    vocab = task.vocabulary
    clean, corrupt = vocab.encode(CLEAN), vocab.encode(CORRUPT)
    src_clean, src_corrupt = task.source_ids(clean), task.source_ids(corrupt)
    targets = expected_output(task, clean), expected_output(task, corrupt)
    config = model.config
    modules = config.n_encoder_layers + 2 * config.n_decoder_layers
    rows = (config.n_heads + 1) * modules + config.n_encoder_layers * len(src_clean)
    pair = torch.tensor([src_clean, src_corrupt], device=device)
    tgt = torch.tensor([decoder_input(targets[0])], device=device)

    def forwards() -> None:
        with torch.no_grad():
            model(pair, tgt.expand(2, -1))
            model(pair[1:].expand(rows, -1), tgt.expand(rows, -1))

    def sweep() -> None:
        patch_effects(model, src_clean, src_corrupt, *targets)

    def attribution() -> None:
        attribute(model, src_clean, [*targets[0], EOS], vocab.symbol_ids, ig_steps=ig_steps)

    def circuits() -> None:
        token_circuits(model)
        position_circuits(model, default_positions(config, task))
        composition_scores(model)
        unlinked_scores(model)
        random_baseline(config)

    for work in (forwards, sweep, attribution, circuits):
        work()
    return CausalTimes(
        _median_seconds(sweep, repeats),
        _median_seconds(forwards, repeats),
        _median_seconds(attribution, repeats),
        _median_seconds(circuits, repeats),
    )
