"""Files written by earlier versions open: a history of a row per step (a million rows) is thinned quickly as it is
read, and a stored training recipe this version would not write is left out while the weights load."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.checkpoint import MAX_HISTORY_ROWS, CheckpointError, load_checkpoint
from core_model.checkpoint_files import MAX_LONG_PICKLE_BYTES
from core_model.training import TrainConfig, default_recipe
from visualizer.cli import main
from visualizer.state.training_record import stored_train_config

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CONFIG = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, max_len=32)
TASK = {"task": "copy", "n_symbols": 10, "min_len": 2, "max_len": 5}
METRICS = ("step", "loss", "token_accuracy", "lr", "tokens_per_s", "grad_norm", "elapsed_s", "tokens")
VERBS = {
    "eval": ["--n", "4", "--device", "cpu"],
    "views": ["--source", "0123"],
    "decode": ["0123", "--device", "cpu"],
    "heads": ["--n", "4"],
    "cell": ["0123", "--kind", "cross", "--query", "0", "--key", "0", "--device", "cpu"],
}
# Opening the million-row file may cost at most what plainly unpickling a quarter of its rows would (five times a
# 50,000-row file, timed on the same machine in the same run, so a loaded machine slows both): reading every row, as
# earlier versions did, took over ten times longer than the thinned read measured here.
REFERENCE_ROWS, LOAD_RATIO = 50_000, 5


def _row(i: int, metrics: tuple[str, ...] = METRICS) -> dict:
    """Row i as the trainer recorded it for step i + 1 (asdict of StepMetrics: a fresh plain dict per step)."""
    values = {
        "step": i + 1,
        "loss": 1.0 / (i + 1),
        "token_accuracy": (i % 97) / 97,
        "lr": 1e-3 * (1 + i % 7),
        "tokens_per_s": 12000.5 + i,
        "grad_norm": 0.5 + (i % 13) / 13,
        "elapsed_s": i * 0.01,
        "tokens": 300,
    }
    return {key: values[key] for key in metrics}


def _old_file(path: Path, history: list[dict], **extra) -> Path:
    """What the earlier save_checkpoint wrote: torch.save of plain data, every history row, no weights checksum."""
    state = {k: v.detach().clone() for k, v in build_model(CONFIG, seed=0).state_dict().items()}
    extra = {
        "task": dict(TASK),
        "train_config": TrainConfig(steps=max(len(history), 1)).to_dict(),
        "final_metrics": {"step": len(history), "loss": 0.01, "token_accuracy": 0.99},
        **extra,
    }
    torch.save(
        {
            "format": "attention-playground-checkpoint",
            "version": 1,
            "config": CONFIG.to_dict(),
            "state_dict": state,
            "history": history,
            "extra": extra,
        },
        path,
    )
    return path


def _same_weights(state: dict) -> bool:
    return all(torch.equal(v, state[k]) for k, v in build_model(CONFIG, seed=0).state_dict().items())


@pytest.fixture(scope="module")
def unpickle_s(tmp_path_factory) -> float:
    """Seconds torch's weights-only loader takes to unpickle an earlier version's file of REFERENCE_ROWS rows."""
    path = _old_file(tmp_path_factory.mktemp("ref") / "ref.pt", [_row(i) for i in range(REFERENCE_ROWS)])
    start = time.perf_counter()
    torch.load(path, weights_only=True)
    return time.perf_counter() - start


@pytest.fixture(scope="module")
def million(tmp_path_factory) -> Path:
    """A 10**6-step run saved by the earlier version (about 105 MiB of history rows)."""
    return _old_file(tmp_path_factory.mktemp("old") / "million.pt", [_row(i) for i in range(10**6)])


def test_a_million_row_history_opens_in_seconds_thinned_evenly_with_its_rows_intact(million, unpickle_s):
    start = time.perf_counter()
    ckpt = load_checkpoint(million)
    assert time.perf_counter() - start < LOAD_RATIO * unpickle_s
    kept = [i * (10**6 - 1) // (MAX_HISTORY_ROWS - 1) for i in range(MAX_HISTORY_ROWS)]
    assert ckpt.history == [_row(i) for i in kept]  # first and last included, every value as it was written
    assert ckpt.extra["final_metrics"] == {"step": 10**6, "loss": 0.01, "token_accuracy": 0.99}  # names shared
    assert (
        ckpt.extra["task"] == TASK and ckpt.extra["train_config"]["steps"] == 10**6 and _same_weights(ckpt.state_dict)
    )


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_reads_the_million_row_file_in_seconds(million, unpickle_s, verb, capsys):
    start = time.perf_counter()
    code = main([verb, str(million), *VERBS[verb]])
    out, err = capsys.readouterr()
    assert code == 0 and out and "Traceback" not in err, err
    assert time.perf_counter() - start < 2 * LOAD_RATIO * unpickle_s  # the verb's own work on a tiny model besides


def test_rows_that_name_a_metric_midway_are_kept_with_the_name(tmp_path):
    """A run continued from an older file: rows before 30,000 have no `tokens`; the first row that names it is
    kept, since every later row refers back to that name."""
    rows = [_row(i, METRICS[:-1]) for i in range(30_000)] + [_row(i) for i in range(30_000, 60_000)]
    ckpt = load_checkpoint(_old_file(tmp_path / "continued.pt", rows))
    steps = [row["step"] for row in ckpt.history]
    assert len(steps) == MAX_HISTORY_ROWS and steps[0] == 1 and steps[-1] == 60_000 and steps == sorted(set(steps))
    assert all(row == rows[row["step"] - 1] for row in ckpt.history)
    assert {"tokens" in row for row in ckpt.history if row["step"] > 30_000} == {True}


def test_extra_data_too_large_for_a_checkpoint_are_not_thinned_away(tmp_path):
    path = _old_file(tmp_path / "notes.pt", [_row(0)], notes="x" * 5 * 2**20)
    with pytest.raises(
        CheckpointError,
        match=r"^notes\.pt: its training history and extra data take 5\.0 MiB, more "
        r"than the 4 MiB a checkpoint may hold, even with its history thinned "
        r"to 10,000 rows; refusing to read it$",
    ):
        load_checkpoint(path)


def test_a_pickle_beyond_the_hard_cap_is_refused_before_it_is_read(tmp_path):
    path = _old_file(tmp_path / "huge.pt", [_row(0)], notes="x" * (MAX_LONG_PICKLE_BYTES + 2**20))
    start = time.perf_counter()
    with pytest.raises(
        CheckpointError,
        match=r"^huge\.pt: its training history and extra data take 129\.0 MiB, more "
        r"than the 128 MiB a checkpoint may hold \(a history of about "
        r"1,220,161 rows\); refusing to read it$",
    ):
        load_checkpoint(path)
    assert time.perf_counter() - start < 5  # judged from the archive's directory


@pytest.mark.parametrize(
    ("recipe", "kept"),
    [
        ({"seed": 2**40}, True),
        ({"seed": 2**63 - 1}, True),
        ({"seed": 2**64 - 1}, False),
        ({"seed": 2**63}, False),
        ({"lr": 0.0}, False),
        ({"schedule": "linear"}, False),
    ],
    ids=["seed_2_40", "seed_2_63_less_1", "seed_2_64_less_1", "seed_2_63", "lr_0", "schedule"],
)
def test_a_stored_recipe_loads_when_valid_and_is_left_out_when_not(tmp_path, recipe, kept, caplog, capsys):
    """The earlier CLI took any seed torch takes (up to 2**64 - 1): the weights always load; the Trainer starts from
    the stored recipe when it is valid and from its defaults when it is not."""
    stored = {**TrainConfig(steps=40).to_dict(), **recipe}
    path = _old_file(tmp_path / "recipe.pt", [_row(i) for i in range(3)], train_config=stored)
    with caplog.at_level(logging.WARNING, logger="core_model.checkpoint_records"):
        ckpt = load_checkpoint(path)
    assert _same_weights(ckpt.state_dict) and ckpt.extra["task"] == TASK and len(ckpt.history) == 3
    if kept:
        assert ckpt.extra["train_config"] == stored and stored_train_config(ckpt.extra) == TrainConfig(**stored)
        assert caplog.records == []
    else:
        assert "train_config" not in ckpt.extra and stored_train_config(ckpt.extra) == default_recipe("rope")
        assert [r.getMessage() for r in caplog.records] == [
            f"recipe.pt: its stored training recipe is not used ({_why(recipe)}); the Trainer starts from its defaults"
        ]
    assert main(["eval", str(path), *VERBS["eval"]]) == 0 and capsys.readouterr().err == ""


def _why(recipe: dict) -> str:
    key = next(iter(recipe))
    if key == "seed":
        return "it holds an integer too large at train_config['seed'] (at most 2**63 in size)"
    if key == "lr":
        return "lr must be a number in [1e-08, 10.0], got 0.0"
    return "schedule must be one of ['noam', 'constant', 'warmup_cosine'], got 'linear'"
