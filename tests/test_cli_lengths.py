"""`eval --lengths A-B`: one JSON object with exact match per length, equal to core_model's evaluate_lengths."""
from __future__ import annotations

import json

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from core_model.length_eval import evaluate_lengths
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig, Trainer
from visualizer.cli import main


@pytest.fixture(scope="module")
def ckpt_path(tmp_path_factory):
    """A briefly trained reverse model (figures between 0 and 1), max_len 16: sources of at most 14 symbols."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    task = TaskSpec("reverse", n_symbols=5, min_len=1, max_len=5)
    model = build_model(ModelConfig(d_model=32, n_heads=2, d_ff=64, max_len=16), seed=0)
    for _ in Trainer(model, task, TrainConfig(steps=120, batch_size=32, lr=5e-3, device="cpu")).train_steps():
        pass
    torch.set_num_threads(before)
    path = tmp_path_factory.mktemp("lengths") / "reverse.pt"
    return save_checkpoint(path, model, extra={"task": {"task": "reverse", "n_symbols": 5, "min_len": 1,
                                                        "max_len": 5}})


def test_eval_lengths_prints_one_object_equal_to_the_core_function(ckpt_path, capsys):
    assert main(["eval", str(ckpt_path), "--lengths", "2-7", "--n", "30", "--seed", "4", "--json",
                 "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1
    result = json.loads(out)
    assert result["lengths"] == [2, 3, 4, 5, 6, 7] and result["n"] == 30 and result["seed"] == 4
    assert result["task"] == "reverse" and list(result["per_length"]) == ["2", "3", "4", "5", "6", "7"]
    ckpt = load_checkpoint(ckpt_path)
    sweep = evaluate_lengths(ckpt.build(), ckpt.task, range(2, 8), n=30, seed=4)
    assert result["per_length"] == {str(k): r.exact_match for k, r in sweep.per_length.items()}
    assert result["token_accuracy_per_length"] == {str(k): r.token_accuracy for k, r in sweep.per_length.items()}
    assert 0 < sum(result["per_length"].values()) < 6  # neither all wrong nor all right: a real comparison


def test_one_length_is_a_range_of_one(ckpt_path, capsys):
    assert main(["eval", str(ckpt_path), "--lengths", "3", "--n", "10", "--device", "cpu"]) == 0
    assert list(json.loads(capsys.readouterr().out)["per_length"]) == ["3"]


@pytest.mark.parametrize(("lengths", "message"), [
    ("5-2", "1 <= A <= B"), ("x", "must look like A-B"), ("0-3", "1 <= A <= B"), ("1-", "must look like A-B"),
    ("2-15", "at most 14 symbols"), ("-3", "must look like A-B"),
])
def test_bad_ranges_are_one_line_exit_2(ckpt_path, capsys, lengths, message):
    assert main(["eval", str(ckpt_path), f"--lengths={lengths}", "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 1 and message in err[0] and err[0].startswith("attention-playground: error:")


def test_length_and_lengths_together_are_refused(ckpt_path, capsys):
    assert main(["eval", str(ckpt_path), "--lengths", "1-3", "--length", "2", "--device", "cpu"]) == 2
    assert "not both" in capsys.readouterr().err
