"""The recipe of the shipped models as data: resources/train_shipped.py trains with exactly the numbers the shipped
checkpoints store, and the trained lengths are read from what a checkpoint says, never guessed."""

from __future__ import annotations

from pathlib import Path

import pytest

from core_model.checkpoint import load_checkpoint
from core_model.checkpoint_records import CheckpointExtra
from core_model.checkpoint_validation import CheckpointError
from core_model.recipe import (
    Recipe,
    describe_trained,
    outside_trained,
    recipe_task,
    shipped_recipe,
    stored_trained_lengths,
)
from core_model.shipped import SHIPPED_MODELS
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_recipe_keeps_the_shipped_models_numbers():
    """resources/train_shipped.py trains with shipped_recipe: the numbers stored in every shipped checkpoint."""
    sort = shipped_recipe("sort", "rope")
    assert sort == Recipe(
        TaskSpec("sort", 10, 1, 16, runs=0.25, anchored=True),
        TrainConfig(batch_size=64, steps=4000, lr=3e-3, adam_beta1=0.9, seed=0, device="cpu"),
        TrainConfig(batch_size=64, steps=2000, lr=5e-4, adam_beta1=0.9, seed=1, device="cpu"),
    )
    assert shipped_recipe("recall", "rope").train.steps == 8000 and shipped_recipe("recall", "rope").train.lr == 1e-3
    for task, encodings in SHIPPED_MODELS.items():
        for pe in encodings:
            recipe = shipped_recipe(task, pe)
            extra = load_checkpoint(ROOT / "resources" / f"{task}_{pe}.pt").extra
            assert TaskSpec(**extra["task"]) == recipe.task, task
            assert TrainConfig.from_stored(extra["train_config"]) == recipe.train, task  # no beta1 stored: the paper's
            classic = task in ("copy", "reverse", "sort")  # saved before beta1 was stored
            assert set(extra["train_config"]) == set(recipe.train.to_dict()) - ({"adam_beta1"} if classic else set())
            polish = extra.get("polish_config")
            assert (TrainConfig.from_stored(polish) if polish else None) == recipe.polish


def test_train_shipped_saves_what_the_shipped_checkpoint_stores(tmp_path):
    from resources import train_shipped

    made = load_checkpoint(train_shipped.train_one("copy_rope", tmp_path, steps=10)).extra
    shipped = load_checkpoint(ROOT / "resources" / "copy_rope.pt").extra
    assert made["task"] == shipped["task"]
    assert made["train_config"] == {**shipped["train_config"], "adam_beta1": 0.9, "steps": 10}


@pytest.mark.parametrize(("positional", "anchored"), [("rope", True), ("sinusoidal", False)])
def test_recipe_task_anchors_rope_sources_and_fits_the_model(positional, anchored):
    assert recipe_task("reverse", positional) == TaskSpec("reverse", 10, 1, 16, runs=0.25, anchored=anchored)
    small = recipe_task("copy", positional, n_symbols=5, model_max_len=12)  # 12 positions take 10 symbols
    assert (small.n_symbols, small.min_len, small.max_len) == (5, 1, 10)
    assert recipe_task("copy", positional, anchored=not anchored).anchored is not anchored


@pytest.mark.parametrize(
    ("extra", "history", "expected"),
    [
        ({"task": {"task": "copy", "min_len": 3, "max_len": 9}}, [{"step": 1}], (3, 9)),
        ({}, [{"step": 1}], None),  # no task stored: TaskSpec's defaults would be a guess
        ({"task": {"task": "copy", "min_len": 3, "max_len": 9}}, [], None),  # no training recorded
    ],
)
def test_trained_lengths_come_only_from_what_a_checkpoint_says(extra, history, expected):
    assert stored_trained_lengths(CheckpointExtra.from_plain(extra), history) == expected


@pytest.mark.parametrize("task", [{"task": "copy", "min_len": 0}, "copy"])
def test_a_stored_task_that_is_not_valid_is_refused_when_the_record_is_read(task):
    with pytest.raises(CheckpointError):
        CheckpointExtra.from_plain({"task": task})


def test_outside_and_the_words_for_unknown_ranges():
    assert [outside_trained((2, 5), n) for n in (1, 2, 5, 6)] == [True, False, False, True]
    assert outside_trained(None, 3) is None
    assert [
        describe_trained((1, 16)),
        describe_trained((10, 10)),
        describe_trained(None, untrained=True),
        describe_trained(None),
    ] == ["1-16", "10", "untrained", "unknown"]


def test_a_stored_recipe_without_adam_beta1_reads_as_the_papers_and_a_bad_one_is_refused():
    """Models saved before the recipe named beta1 were trained with the paper's 0.9; Continue training keeps it."""
    assert TrainConfig.from_stored({"lr": 1e-3}) == TrainConfig(lr=1e-3, adam_beta1=0.9)
    assert TrainConfig.from_stored({"adam_beta1": 0.7, "no_such_field": 1}).adam_beta1 == 0.7
    assert TrainConfig().adam_beta1 == 0.8
    for bad in (1.0, -0.1, float("nan"), "0.9", True):
        with pytest.raises(ValueError, match="adam_beta1"):
            TrainConfig.from_stored({"adam_beta1": bad})
    shipped = load_checkpoint(ROOT / "resources" / "copy_sinusoidal.pt").extra
    assert "adam_beta1" not in shipped["train_config"]
    assert TrainConfig.from_stored(shipped["train_config"]).adam_beta1 == 0.9


def test_train_shipped_names_every_task_of_the_registry_and_every_shipped_file():
    from core_model.shipped import SHIPPED_CHECKPOINTS
    from core_model.tasks import TASK_NAMES
    from resources import train_shipped

    assert train_shipped.TASKS == TASK_NAMES  # written out so its --help needs no torch
    assert sorted(f"{name}.pt" for name in train_shipped.NAMES) == sorted(SHIPPED_CHECKPOINTS)
