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

ROOT = Path(__file__).resolve().parents[1]
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
