"""`train` defaults to the shipped models' recipe (lengths 1-16, runs, anchors for RoPE) and reports every length."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core_model.checkpoint import load_checkpoint
from visualizer.cli import main

ROOT = Path(__file__).resolve().parents[2]
FAST = ["--steps", "1", "--symbols", "2", "--eval-n", "2", "--device", "cpu"]  # the recipe's data, little work
README_TRAIN = ["train", "--task", "copy", "--steps", "300", "--seed", "0"]  # README.md's example, with its defaults

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _train(tmp_path: Path, capsys, *args: str) -> tuple[dict, dict]:
    """Run `train` in this process: (its one JSON line, the task stored in the checkpoint)."""
    out = tmp_path / "model.pt"
    assert main(["train", "--task", "copy", *FAST, *args, "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    return json.loads(lines[0]), load_checkpoint(out).extra["task"]


@pytest.mark.parametrize(("positional", "anchored"), [("rope", True), ("sinusoidal", False)])
def test_train_without_data_options_trains_the_shipped_recipe(tmp_path, capsys, positional, anchored):
    result, stored = _train(tmp_path, capsys, "--positional", positional)
    assert stored == {"task": "copy", "n_symbols": 2, "min_len": 1, "max_len": 16, "runs": 0.25, "anchored": anchored}
    assert result["task"] == stored
    assert list(result["per_length"]) == [str(n) for n in range(1, 17)]  # every trained length, in order
    assert result["exact_match"] == pytest.approx(sum(result["per_length"].values()) / 16)
    assert result["worst_length"] in range(1, 17) and result["eval_n"] == 2
    repeated = result["repeated"]  # every one-symbol source ("00", "111", ...) of every trained length
    assert repeated["sources"] == 2 * 16 and 0.0 <= repeated["exact_match"] <= 1.0
    assert len(repeated["wrong_examples"]) <= 5 and all(" -> " in text for text in repeated["wrong_examples"])


def test_anchored_and_runs_options_replace_the_recipes_choices(tmp_path, capsys):
    _, stored = _train(tmp_path, capsys, "--no-anchored", "--runs", "0")
    assert (stored["anchored"], stored["runs"]) == (False, 0.0)
    _, stored = _train(tmp_path, capsys, "--positional", "sinusoidal", "--anchored", "--runs", "1", "--max-len", "5")
    assert (stored["anchored"], stored["runs"], stored["min_len"], stored["max_len"]) == (True, 1.0, 1, 5)


@pytest.mark.parametrize("value", ["-0.1", "1.5", "nan", "half"])
def test_runs_outside_0_to_1_is_one_line_exit_2(tmp_path, capsys, value):
    assert main(["train", "--task", "copy", "--runs", value, "--out", str(tmp_path / "x.pt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument --runs: must be a number from 0 to 1" in err
    assert not (tmp_path / "x.pt").exists()


def test_help_states_the_recipes_defaults(capsys):
    assert main(["train", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for phrase in (
        "shortest source sequence (default 1)",
        "longest source sequence (default 16)",
        "(default 0.25)",
        "--anchored, --no-anchored",
        "default: anchored for rope",
    ):
        assert phrase in text


def _cli(*args: str, cwd: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "visualizer", *args, "--threads", "1"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_readme_example_is_right_on_every_length_and_every_repeated_symbol(tmp_path):
    """README's `train` example with default settings, then fresh sources it never saw (eval's own seed)."""
    trained = _cli(*README_TRAIN, "--out", "c.pt", cwd=tmp_path)
    assert trained["per_length"] == {str(n): 1.0 for n in range(1, 17)} and trained["repeated"]["exact_match"] == 1.0
    ev = _cli("eval", "c.pt", "--lengths", "1-16", "--repeated", "--exhaustive", "3", "--n", "300", cwd=tmp_path)
    assert ev["per_length"] == {str(n): 1.0 for n in range(1, 17)}
    assert ev["repeated_per_length"] == {str(n): 1.0 for n in range(1, 17)}
    assert ev["exhaustive"]["sources"] == 1110 and ev["exhaustive"]["exact_match"] == 1.0


SMALL = ["--symbols", "3", "--max-len", "3", "--eval-n", "50", "--device", "cpu"]  # right within a few hundred steps


def test_train_without_steps_trains_until_every_length_is_right_and_stops_there(tmp_path, capsys):
    """No --steps: the model is checked every 100 steps and training stops at the first check it passes, long
    before the cap; the final evaluation on other sources agrees, so no note follows."""
    assert main(["train", "--task", "copy", *SMALL, "--out", str(tmp_path / "m.pt")]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["until"], result["max_steps"]) == (0.99, 4000)
    assert result["step"] % 100 == 0 and result["step"] < 4000
    assert min(result["per_length"].values()) >= 0.99
    assert "note:" not in captured.err and "ETA at most " in captured.err  # the cap is an upper bound
    history = load_checkpoint(tmp_path / "m.pt").history
    assert history[-1]["step"] == result["step"]


def test_a_run_that_ends_short_says_so_in_one_line_and_what_to_change(tmp_path, capsys):
    assert main(["train", "--task", "copy", *SMALL, "--steps", "2", "--out", str(tmp_path / "m.pt")]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["step"] == 2 and result["until"] is None  # --steps alone: that many steps, no early stop
    notes = [line for line in captured.err.splitlines() if "note:" in line]
    below = sum(em < 0.99 for em in result["per_length"].values())
    assert notes == [
        f"attention-playground: note: exact match is below 0.99 at {below} of 3 trained lengths (worst "
        f"{result['per_length'][str(result['worst_length'])]:.3f} at length {result['worst_length']}) after 2 steps: "
        "leave --steps out to train until every length reaches 0.99 (at most 4000 steps)"
    ]


def test_until_with_steps_caps_the_run_and_zero_never_stops_early(tmp_path, capsys):
    assert (
        main(["train", "--task", "copy", *SMALL, "--steps", "150", "--until", "0", "--out", str(tmp_path / "a.pt")])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["step"] == 150
    assert main(["train", "--task", "copy", *SMALL, "--until", "1.5", "--out", str(tmp_path / "b.pt")]) == 2
    assert "argument --until: must be a number from 0 to 1" in capsys.readouterr().err
