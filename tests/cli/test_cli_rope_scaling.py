"""`eval --rope-scaling {none,pi,ntk} [--train-len L]`: the same numbers as core_model with the same hook."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from core_model.length_curves import length_curve
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig, Trainer
from visualizer.cli import main

TASK = TaskSpec("copy", n_symbols=5, min_len=1, max_len=4)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("scaling")
    out = {}
    for positional in ("rope", "sinusoidal"):
        model = build_model(
            ModelConfig(vocab_size=8, d_model=16, n_heads=2, d_ff=32, max_len=24, positional=positional), seed=0
        )
        for _ in Trainer(model, TASK, TrainConfig(steps=100, batch_size=32, lr=5e-3, device="cpu")).train_steps():
            pass
        out[positional] = save_checkpoint(folder / f"{positional}.pt", model, extra={"task": dataclasses.asdict(TASK)})
    return out


def _eval(capsys, *args: str) -> dict:
    assert main(["eval", *args, "--n", "30", "--seed", "5", "--json", "--device", "cpu"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("kind", "train_len"), [("pi", None), ("ntk", None), ("pi", 2), ("none", None)])
def test_rope_scaling_equals_the_core_curve(paths, capsys, kind, train_len):
    extra = ["--train-len", str(train_len)] if train_len else []
    result = _eval(capsys, str(paths["rope"]), "--lengths", "3-8", "--rope-scaling", kind, *extra)
    ckpt = load_checkpoint(paths["rope"])
    curve = length_curve(ckpt.build(), ckpt.task, range(3, 9), n=30, seed=5, scaling=kind, train_len=train_len)
    assert result["rope_scaling"] == kind
    assert result["per_length"] == {str(p.length): p.exact_match for p in curve}
    assert result["token_accuracy_per_length"] == {str(p.length): p.token_accuracy for p in curve}


def test_scaling_changes_only_lengths_past_the_training_length(paths, capsys):
    plain = _eval(capsys, str(paths["rope"]), "--lengths", "1-10")["token_accuracy_per_length"]
    pi = _eval(capsys, str(paths["rope"]), "--lengths", "1-10", "--rope-scaling", "pi")["token_accuracy_per_length"]
    assert [plain[str(n)] for n in range(1, 5)] == [pi[str(n)] for n in range(1, 5)]
    assert [plain[str(n)] for n in range(5, 11)] != [pi[str(n)] for n in range(5, 11)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rope-scaling", "pi"], "--rope-scaling pi needs a RoPE model; sinusoidal.pt uses sinusoidal"),
        (["--rope-scaling", "yarn"], "invalid choice: 'yarn'"),
    ],
)
def test_bad_scaling_is_a_one_line_error(paths, capsys, args, message):
    assert main(["eval", str(paths["sinusoidal"]), "--lengths", "2-3", "--n", "2", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_train_len_below_one_is_refused(paths, capsys):
    args = ["eval", str(paths["rope"]), "--lengths", "2-3", "--n", "2", "--rope-scaling", "ntk", "--train-len", "0"]
    assert main(args) == 2 and "argument --train-len: must be an integer from 1 to" in capsys.readouterr().err
