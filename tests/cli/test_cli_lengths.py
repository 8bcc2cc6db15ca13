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
from core_model.vocab import BOS, EOS
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
    return save_checkpoint(path, model, extra={"task": {"task": "reverse", "n_symbols": 5, "min_len": 1, "max_len": 5}})


def test_eval_lengths_prints_one_object_equal_to_the_core_function(ckpt_path, capsys):
    assert (
        main(["eval", str(ckpt_path), "--lengths", "2-7", "--n", "30", "--seed", "4", "--json", "--device", "cpu"]) == 0
    )
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


@pytest.mark.parametrize(
    ("lengths", "message"),
    [
        ("5-2", "1 <= A <= B"),
        ("x", "must look like A-B"),
        ("0-3", "1 <= A <= B"),
        ("1-", "must look like A-B"),
        ("2-15", "at most 14 symbols"),
        ("-3", "must look like A-B"),
    ],
)
def test_bad_ranges_are_one_line_exit_2(ckpt_path, capsys, lengths, message):
    assert main(["eval", str(ckpt_path), f"--lengths={lengths}", "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert captured.out == "" and len(err) == 1 and message in err[0]
    assert err[0].startswith("attention-playground: error:")


def test_length_and_lengths_together_are_refused(ckpt_path, capsys):
    assert main(["eval", str(ckpt_path), "--lengths", "1-3", "--length", "2", "--device", "cpu"]) == 2
    assert "not both" in capsys.readouterr().err


def _own_right(model, source: list[int]) -> bool:
    """The test's own greedy loop (full recomputation): is reverse(source) + <eos> produced?"""
    tgt = [BOS]
    with torch.no_grad():
        for _ in range(len(source) + 1):
            tgt.append(int(model(torch.tensor([source]), torch.tensor([tgt])).log_probs[0, -1].argmax()))
            if tgt[-1] == EOS:
                break
    return tgt[1:] == source[::-1] + [EOS]


def test_repeated_and_exhaustive_sets_equal_an_own_loop(ckpt_path, capsys):
    assert (
        main(
            [
                "eval",
                str(ckpt_path),
                "--lengths",
                "1-4",
                "--n",
                "5",
                "--repeated",
                "--exhaustive",
                "2",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    model = load_checkpoint(ckpt_path).build().eval()
    for length in range(1, 5):
        own = sum(_own_right(model, [s] * length) for s in range(3, 8)) / 5
        assert result["repeated_per_length"][str(length)] == pytest.approx(own, abs=1e-12)
    every = [[a] for a in range(3, 8)] + [[a, b] for a in range(3, 8) for b in range(3, 8)]
    assert result["exhaustive"]["sources"] == 30
    assert result["exhaustive"]["exact_match"] == pytest.approx(sum(map(lambda s: _own_right(model, s), every)) / 30)
    assert len(result["exhaustive"]["wrong_examples"]) == min(5, round(30 * (1 - result["exhaustive"]["exact_match"])))
    assert main(["eval", str(ckpt_path), "--exhaustive", "9", "--device", "cpu"]) == 2
