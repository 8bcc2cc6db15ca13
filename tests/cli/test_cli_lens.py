"""`attention-playground lens`: one JSON line holding core_model.logit_lens's numbers for the model's own output."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core_model.checkpoint import load_checkpoint
from core_model.logit_lens import logit_lens
from core_model.shipped import resource_path
from visualizer.cli import main

REVERSE = str(resource_path("reverse_rope.pt"))


def run_cli(capsys, *args: str) -> dict:
    assert main(["lens", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_the_json_holds_the_lens_of_the_greedy_output(capsys):
    data = run_cli(capsys, REVERSE, "--source", "31415926", "--json")
    assert data["output_tokens"] == data["expected"] == ["6", "2", "9", "5", "1", "4", "1", "3", "<eos>"]
    ckpt = load_checkpoint(REVERSE)
    model, vocab = ckpt.build().eval(), ckpt.task.vocabulary
    src = ckpt.task.source_ids(vocab.encode("31415926"))
    with torch.no_grad():
        lens = logit_lens(model, src, vocab.encode("62951413") + [2], n_tokens=len(vocab))
    assert data["source_tokens"] == vocab.tokens(src)
    assert [row["layer"] for row in data["layers"]] == [0, 1]
    for layer, row in enumerate(data["layers"]):
        assert row["top_tokens"] == vocab.tokens(lens.top_tokens[layer].tolist())
        np.testing.assert_allclose(row["top_log_probs"], lens.top_log_probs[layer], atol=1e-6)
        np.testing.assert_allclose(row["output_log_probs"], lens.output_log_probs[layer], atol=1e-6)
    assert data["layers"][-1]["top_tokens"] == data["output_tokens"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "31x"], "--source: unknown symbol 'x' at position 3"),
        (["--source", ""], "--source is empty"),
        (["--source", "3" * 300], "--source has 300 symbols and 0 pads; this model takes at most"),
        (["--source", "31", "--pads", "-1"], "argument --pads: must be an integer from 0"),
    ],
)
def test_a_bad_source_is_one_usage_line(capsys, args, message):
    assert main(["lens", REVERSE, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
