"""`attention-playground attribute`: one JSON line holding core_model's attributions and their agreement with
attention, for the model's own greedy output."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core_model.attribution import attribute
from core_model.attribution_agreement import agreement, attention_views, top1_agreement
from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.cli import main

COPY = str(resource_path("copy_rope.pt"))


def run_cli(capsys, *args: str) -> dict:
    assert main(["attribute", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_the_json_holds_the_core_numbers(capsys):
    data = run_cli(capsys, COPY, "--source", "31415", "--ig-steps", "8", "--json")
    ckpt = load_checkpoint(COPY)
    model, vocab = ckpt.build().eval(), ckpt.task.vocabulary
    src = ckpt.task.source_ids(vocab.encode("31415"))
    output = vocab.encode("31415") + [2]
    expected = attribute(model, src, output, vocab.symbol_ids, ig_steps=8)
    assert data["output_tokens"] == ["3", "1", "4", "1", "5", "<eos>"] and data["ig_steps"] == 8
    assert data["source_tokens"] == ["<bos>", "3", "1", "4", "1", "5", "<eos>"]
    for method in ("gradient_x_delta", "integrated_gradients", "occlusion"):
        np.testing.assert_allclose(data["methods"][method], getattr(expected, method), atol=1e-5)
    np.testing.assert_allclose(data["completeness_gap"], expected.completeness_gap, atol=1e-5)
    views = attention_views(model, src, output)
    table = agreement(expected, views, [1, 2, 3, 4, 5])
    assert data["agreement"]["occlusion"]["rollout"] == pytest.approx(table["occlusion"]["rollout"], abs=1e-6)
    assert set(data["agreement"]["integrated_gradients"]) == {
        "cross L1",
        "cross L2",
        "norm-weighted L1",
        "norm-weighted L2",
        "rollout",
    }
    assert data["top1_agreement"] == top1_agreement(expected, views, [1, 2, 3, 4, 5])


def test_top1_agreement_says_what_the_copy_models_diagonal_maps_show(capsys):
    """Occlusion and attention both peak on the symbol being copied: top-1 agrees at every symbol output position."""
    data = run_cli(capsys, COPY, "--source", "31415926", "--ig-steps", "8")
    top1 = data["top1_agreement"]
    assert list(top1) == ["gradient_x_delta", "integrated_gradients", "occlusion"]
    for view in ("cross L1", "cross L2", "norm-weighted L1", "norm-weighted L2", "rollout"):
        assert top1["occlusion"][view][:8] == [True] * 8, view
        assert len(top1["occlusion"][view]) == len(data["output_tokens"])
        assert all(value in (True, False, None) for value in top1["integrated_gradients"][view])


def test_a_confident_model_saturates_gradient_x_delta_but_not_occlusion(capsys):
    """The lesson the view spells out: the copy model is sure of its answer, so its gradients at x vanish."""
    data = run_cli(capsys, COPY, "--source", "31415926", "--ig-steps", "8")
    gxd, occlusion = np.abs(data["methods"]["gradient_x_delta"]), np.abs(data["methods"]["occlusion"])
    assert gxd.max() < 0.05 and occlusion.max() > 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "31x"], "--source: unknown symbol 'x' at position 3"),
        (["--source", "31", "--ig-steps", "0"], "argument --ig-steps: must be an integer from 1 to 512, got 0"),
        (["--source", "31", "--ig-steps", "513"], "from 1 to 512, got 513"),
    ],
)
def test_bad_arguments_are_one_usage_line(capsys, args, message):
    assert main(["attribute", COPY, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
