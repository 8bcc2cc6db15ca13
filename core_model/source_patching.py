"""Patching two sources of a task: every head, every layer and every encoder position of the corrupted run given the
clean run's value, teacher-forced on the task's expected outputs (core_model.patching's metric and sweep).

`patch_sources` is the one entry `attention-playground patch` and the Causal tab's patching both call: it builds the
encoder inputs and expected outputs the same way for both, refuses over the analysis budget before any pass, and
runs in passes that stay within it. Both sources must be ones the task takes (its alphabet, lengths and grammar): a
corrupted addition must keep its "+", a corrupted recall its distinct keys, or there is no expected output to
teacher-force and the model never saw such a source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from .analysis_budget import NO_KNOBS, Knobs, check_patch
from .analysis_cost import patch_chunk
from .config import ModelConfig
from .model import Seq2SeqTransformer
from .patching import PatchResult, patch_effects
from .tasks import TaskSpec, expected_output


def check_patch_pair(task: TaskSpec, clean: Sequence[int], corrupt: Sequence[int]) -> None:
    """ValueError naming the source and the task's rule when the clean or the corrupted source is not one the task
    takes."""
    for name, ids in (("clean", clean), ("corrupted", corrupt)):
        problem = task.source_problem(list(ids))
        if problem:
            raise ValueError(f"the {name} source: {problem}")


def check_patch_sources(config: ModelConfig, task: TaskSpec, clean: Sequence[int], knobs: Knobs = NO_KNOBS) -> None:
    """BudgetError when patching sources as long as `clean` is over the analysis budget: `patch_sources`'s own first
    check, for a front end that refuses the input where it was typed before it starts anything."""
    tgt_len = len(expected_output(task, list(clean))) + 1  # <bos> and the clean expected output, teacher-forced
    check_patch(config, len(clean), len(task.source_ids(list(clean))), tgt_len, knobs)


def patch_sources(
    model: Seq2SeqTransformer,
    task: TaskSpec,
    clean: Sequence[int],
    corrupt: Sequence[int],
    position: int | None = None,
    *,
    knobs: Knobs = NO_KNOBS,
    progress: Callable[[int, int], None] | None = None,
) -> PatchResult:
    """Patch `corrupt` (symbol ids, as long as `clean`) with `clean`'s values at output `position` (None: the first
    position where the expected outputs differ). BudgetError before any work when over budget (`knobs` names what
    to lower); `progress(done, total)` after each pass of patched runs, and raising from it stops the work there.
    A source the task does not take is a ValueError naming its rule (`check_patch_pair`)."""
    check_patch_pair(task, clean, corrupt)
    check_patch_sources(model.config, task, clean, knobs)
    src_clean = task.source_ids(list(clean))
    target = expected_output(task, list(clean))
    tgt_len = len(target) + 1
    with torch.no_grad():
        return patch_effects(
            model,
            src_clean,
            task.source_ids(list(corrupt)),
            target,
            expected_output(task, list(corrupt)),
            position,
            rows_per_pass=patch_chunk(model.config, len(src_clean), tgt_len),
            progress=progress,
        )
