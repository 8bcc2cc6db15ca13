"""docs/SHIPPED_MODELS.md's table of the task library's models, recomputed row by row: greedy exact match on 1,000
sources of every trained length (drawn by the task with random.Random(1234), the worst length quoted), every hard
case of every trained length, and the steps and seconds the checkpoint says its training took.

Outputs come from tests/core/test_core_shipped_tasks.py's own greedy loop, expected outputs from the test's own
reference of each task.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from core.test_core_shipped_tasks import LIBRARY, wrong

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path

ROOT = Path(__file__).resolve().parents[2]
PER_LENGTH = 1000

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest: one torch thread per test


def row(name: str) -> str:
    """The table's row for `name` (a file of resources/), as the doc writes it."""
    ckpt = load_checkpoint(resource_path(name))
    model, task = ckpt.build().eval(), ckpt.task
    rng = random.Random(1234)
    worst, worst_length, hard, hard_right = 1.0, None, 0, 0
    lengths = list(task.lengths())
    for length in lengths:
        sources = [task.definition.draw(rng, task.n_symbols, length) for _ in range(PER_LENGTH)]
        exact = 1 - len(wrong(model, task, sources)) / PER_LENGTH
        if exact < worst:
            worst, worst_length = exact, length
        cases = list(task.definition.adversarial(task.n_symbols, length))
        hard += len(cases)
        hard_right += len(cases) - len(wrong(model, task, cases))
    shown = "100 %" if worst_length is None else f"{worst * 100:.1f} % (length {worst_length})"
    seconds = ckpt.extra.final_metrics["seconds"]
    steps = ckpt.extra.train_config["steps"]
    return (
        f"| `{name.removesuffix('.pt')}` | {lengths[0]}-{lengths[-1]} | {task.n_symbols} | {shown} | "
        f"{hard_right} of {hard} | {steps:,} | {seconds:.0f} s |"
    )


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", LIBRARY)
def test_the_docs_row_of_each_library_model_is_what_it_gives(name: str):
    text = (ROOT / "docs" / "SHIPPED_MODELS.md").read_text(encoding="utf-8")
    quoted = [line for line in text.splitlines() if line.startswith(f"| `{name.removesuffix('.pt')}` |")]
    assert len(quoted) == 1, f"docs/SHIPPED_MODELS.md has no single row for {name}"
    assert quoted[0] == row(name)
    assert re.search(r"\| \d[\d,]* \| \d+ s \|$", quoted[0])
