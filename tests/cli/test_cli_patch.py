"""`attention-playground patch`: one JSON line holding what core_model.patching computes for the same sources."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core_model.checkpoint import load_checkpoint
from core_model.patching import patch_effects
from core_model.shipped import resource_path
from visualizer.cli import main

COPY = str(resource_path("copy_rope.pt"))


def run_cli(capsys, *args: str) -> dict:
    assert main(["patch", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_the_json_holds_the_core_functions_numbers_and_names_the_tokens(capsys):
    data = run_cli(capsys, COPY, "--clean", "31415926", "--corrupt", "31475926", "--json")
    ckpt = load_checkpoint(COPY)
    model, task = ckpt.build().eval(), ckpt.task
    clean, corrupt = task.vocabulary.encode("31415926"), task.vocabulary.encode("31475926")
    expected = patch_effects(model, task.source_ids(clean), task.source_ids(corrupt), clean, corrupt)
    assert (data["position"], data["clean_token"], data["corrupt_token"]) == (3, "1", "7")
    assert data["clean_metric"] == pytest.approx(expected.clean_metric, abs=1e-6)
    assert data["corrupt_metric"] == pytest.approx(expected.corrupt_metric, abs=1e-6)
    assert [(h["kind"], h["layer"], h["head"]) for h in data["heads"]] == [
        (h.kind, h.layer, h.head) for h in expected.heads
    ]
    np.testing.assert_allclose([h["effect"] for h in data["heads"]], [h.effect for h in expected.heads], atol=1e-6)
    np.testing.assert_allclose(data["positions"], expected.positions, atol=1e-6)
    assert data["clean_tokens"][0] == "<bos>" and data["corrupt_tokens"][4] == "7"  # anchored: <bos> 3 1 4 7 ...
    assert data["task"] == "copy" and data["beyond_trained_lengths"] is False


def test_the_trained_copy_model_carries_the_answer_through_its_last_cross_attention(capsys):
    """What the view will show a learner: the changed symbol's encoder position, and the last layer's cross heads."""
    data = run_cli(capsys, COPY, "--clean", "3141592653589793", "--corrupt", "3141592653989793")
    cross_last = [h["effect"] for h in data["heads"] if h["kind"] == "cross" and h["layer"] == 1]
    first_decoder_self = [h["effect"] for h in data["heads"] if h["kind"] == "decoder_self" and h["layer"] == 0]
    assert sum(cross_last) > 0.5 and max(np.abs(first_decoder_self)) < 1e-6
    changed = 1 + 10  # <bos>, then the tenth symbol
    assert np.argmax(data["positions"][-1]) == changed and data["positions"][-1][changed] > 0.9


def test_a_chosen_position_is_used(capsys):
    assert run_cli(capsys, COPY, "--clean", "3141", "--corrupt", "3242")["position"] == 1  # the first difference
    data = run_cli(capsys, COPY, "--clean", "3141", "--corrupt", "3242", "--position", "3")
    assert (data["position"], data["clean_token"], data["corrupt_token"]) == (3, "1", "2")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--clean", "3141", "--corrupt", "314"], "--clean has 4 symbols and --corrupt 3"),
        (["--clean", "3141", "--corrupt", "3141"], "same expected output"),
        (["--clean", "3141", "--corrupt", "31x1"], "--corrupt: unknown symbol 'x' at position 3"),
        (["--clean", "", "--corrupt", "3141"], "--clean is empty"),
        (["--clean", "3141", "--corrupt", "3142", "--position", "0"], "same token at position 0"),
        (["--clean", "3141", "--corrupt", "3142", "--position", "5000"], "from 0 to 4095, got 5000"),
    ],
)
def test_bad_sources_are_one_line_usage_errors(capsys, args, message):
    assert main(["patch", COPY, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_source_longer_than_the_model_takes_is_refused_before_any_pass(capsys):
    long = "3" * 300
    assert main(["patch", COPY, "--clean", long, "--corrupt", "4" + long[1:]]) == 2
    assert "this model takes at most 254" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["copy_rope.pt", "copy_sinusoidal.pt"])
def test_the_longest_source_is_the_one_every_verb_takes(name, capsys):
    """254 symbols on 256 positions, anchored or not, as the Playground and the other verbs count (patch refused
    254 on the anchored model and took 255 on the other)."""
    from core_model.shipped import resource_path

    longest = ("0123456789" * 26)[:254]
    assert main(["patch", str(resource_path(name)), "--clean", longest + "1", "--corrupt", longest + "2"]) == 2
    assert capsys.readouterr().err.startswith("attention-playground: error: --clean has 255 symbols; this model takes")
    assert main(["patch", str(resource_path(name)), "--clean", longest, "--corrupt", longest]) == 2
    assert "no answer to carry" in capsys.readouterr().err  # past the length check: refused for another reason
