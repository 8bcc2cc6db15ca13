"""`attention-playground circuits`: one JSON line holding core_model.circuits', core_model.position_circuits' and
core_model.head_composition's numbers for the checkpoint, its token labels and baseline; bad arguments and files are
one line, never a traceback."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from core_model.circuits import token_circuits
from core_model.head_composition import MAX_BASELINE_SAMPLES, composition_scores, random_baseline, unlinked_scores
from core_model.position_circuits import MAX_POSITION_TABLE, position_circuits
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.cli.limits import limit

COPY = str(resource_path("copy_rope.pt"))


def run_cli(capsys, *args: str) -> dict:
    assert main(["circuits", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_the_json_holds_every_heads_circuits_the_composition_and_the_baseline(capsys):
    data = run_cli(capsys, COPY, "--json")
    ckpt = load_checkpoint(COPY)
    model = ckpt.build().eval()
    assert data["tokens"] == ["<pad>", "<bos>", "<eos>", *"0123456789"]
    assert (data["task"], data["device"], data["path"]) == ("copy", "cpu", COPY)
    circuits = token_circuits(model)
    assert len(data["heads"]) == len(circuits) == 24
    for row, circuit in zip(data["heads"], circuits):
        assert (row["kind"], row["layer"], row["head"]) == (circuit.ref.kind, circuit.ref.layer, circuit.ref.head)
        assert row["copying_score"] == circuit.copying_score
        assert row["centred_copying_score"] == circuit.centred_copying_score
        assert (row["diagonal_wins"], row["centred_diagonal_wins"], row["symbol_rows"]) == (
            circuit.diagonal_wins,
            circuit.centred_diagonal_wins,
            10,
        )
        assert (row["query_spread"], row["key_spread"]) == (circuit.query_spread, circuit.key_spread)
        np.testing.assert_array_equal(np.array(row["qk"]), circuit.qk)
        np.testing.assert_array_equal(np.array(row["ov"]), circuit.ov)
        np.testing.assert_array_equal(np.array(row["qk_centred"]), circuit.qk_centred)
        np.testing.assert_array_equal(np.array(row["ov_centred"]), circuit.ov_centred)
        assert np.array(row["qk"]).shape == np.array(row["ov"]).shape == (13, 13)
    scores = composition_scores(model)
    assert [(c["from"], c["to"], c["type"], c["score"]) for c in data["composition"]] == [
        (s.source.to_dict(), s.target.to_dict(), s.type, s.score) for s in scores
    ]
    assert data["baseline"] == random_baseline(model.config, 100, 0).scores
    unlinked = unlinked_scores(model)
    assert data["unlinked"] == {"mean": unlinked.mean, "p95": unlinked.p95, "pairs": unlinked.pairs}
    assert (data["baseline_samples"], data["seed"]) == (100, 0)


def test_the_seed_and_sample_count_change_the_baseline_only(capsys):
    plain = run_cli(capsys, COPY)
    other = run_cli(capsys, COPY, "--seed", "9", "--baseline-samples", "20")
    assert other["baseline"] != plain["baseline"] and (other["seed"], other["baseline_samples"]) == (9, 20)
    assert other["baseline"] == random_baseline(load_checkpoint(COPY).config, 20, 9).scores
    for key in ("heads", "composition", "tokens"):
        assert other[key] == plain[key]


def test_the_sample_limit_is_core_models():
    assert limit("circuits", "--baseline-samples").high == MAX_BASELINE_SAMPLES


def test_the_positions_limit_is_core_models():
    assert limit("circuits", "--positions").high == MAX_POSITION_TABLE


def test_the_json_holds_every_heads_position_table_and_the_baselines_percentile_and_spread(capsys):
    model = load_checkpoint(COPY).build().eval()
    default, chosen = run_cli(capsys, COPY), run_cli(capsys, COPY, "--positions", "5", "--seed", "3")
    assert default["n_positions"] == 18 and chosen["n_positions"] == 5  # 16 symbols + <bos> + <eos>
    for data, n in ((default, 18), (chosen, 5)):
        circuits = position_circuits(model, n)
        assert len(data["positions"]) == len(circuits) == 24
        for row, circuit in zip(data["positions"], circuits):
            assert row == circuit.to_dict()
            assert np.array(row["scores"]).shape == (n, n) and 0 <= row["position_share"] <= 1
    baseline = random_baseline(model.config, 100, 3)
    assert chosen["baseline_p95"] == baseline.p95 and chosen["baseline_spread"] == baseline.spread
    assert all(chosen["baseline_p95"][kind] > chosen["baseline"][kind] for kind in "QKV")


def test_a_head_without_spread_has_a_null_share_and_a_note(capsys, tmp_path):
    ckpt = load_checkpoint(COPY)
    model = ckpt.build().eval()
    with torch.no_grad():
        model.encoder_layers[0].self_attn.q_proj.weight[: model.config.head_dim].zero_()
    path = save_checkpoint(tmp_path / "blind.pt", model, extra={"task": dataclasses.asdict(ckpt.task)})
    data = run_cli(capsys, str(path), "--positions", "4")
    assert data["positions"][0]["position_share"] is None and data["positions"][1]["position_share"] is not None
    assert "positions[0].position_share was nan (not a JSON number), written as null" in data["notes"]
    assert math.isnan(position_circuits(model, 4)[0].position_share)


def test_more_positions_than_the_model_has_are_one_line_naming_its_max_len(capsys, tmp_path):
    config = ModelConfig(vocab_size=13, d_model=16, n_heads=2, d_ff=32, max_len=12)
    task = {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}
    path = save_checkpoint(tmp_path / "short.pt", build_model(config, seed=0), extra={"task": task})
    assert run_cli(capsys, str(path))["n_positions"] == 12  # the default stays within the model
    assert main(["circuits", str(path), "--positions", "13"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "--positions 13 is more than this model's max_len 12" in captured.err


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        ([COPY, "--baseline-samples", "0"], 2, "argument --baseline-samples: must be an integer from 1 to 10000"),
        ([COPY, "--baseline-samples", "10001"], 2, "argument --baseline-samples: must be an integer from 1 to"),
        ([COPY, "--positions", "0"], 2, "argument --positions: must be an integer from 1 to 128, got 0"),
        ([COPY, "--positions", "129"], 2, "argument --positions: must be an integer from 1 to 128, got 129"),
        (["/nonexistent/model.pt"], 1, "attention-playground: error: "),
        ([COPY, "--device", "banana"], 2, "argument --device: unknown device"),
    ],
)
def test_bad_arguments_and_files_are_one_line(capsys, args, status, message):
    assert main(["circuits", *args]) == status
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err


def test_a_file_that_is_not_a_checkpoint_is_one_line_in_a_real_process(tmp_path):
    bad = tmp_path / "not-a-model.pt"
    bad.write_bytes(b"\x00" * 64)
    done = subprocess.run(
        [sys.executable, "-m", "visualizer", "circuits", str(bad), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_with_a_source_each_heads_run_keys_are_the_argmax_of_the_map_views_prints(capsys):
    """--source runs the input as the Playground and `views` do; each head's run keys are the argmax of that map
    over the keys that are not <pad> (and not later, for decoder self-attention), its direct keys the position
    table's over the same keys."""
    data = run_cli(capsys, COPY, "--source", "3141", "--json")
    assert main(["views", str(COPY), "--source", "3141", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    run = data["run"]
    assert (run["source_tokens"], run["target_tokens"]) == (shown["source_tokens"], shown["target_tokens"])
    for head, table, agreement in zip(data["heads"], data["positions"], run["agreement"], strict=True):
        kind, layer, index = head["kind"], head["layer"], head["head"]
        assert (agreement["kind"], agreement["layer"], agreement["head"]) == (kind, layer, index)
        weights = np.array(shown["maps"][kind][layer][index], dtype=float)
        direct = np.array(table["scores"])
        keys_side = shown["target_tokens"] if kind == "decoder_self" else shown["source_tokens"]
        run_keys, direct_keys = [], []
        for i in range(min(len(direct), len(weights))):
            keys = [j for j in range(min(len(direct), weights.shape[1])) if keys_side[j] != "<pad>"]
            keys = [j for j in keys if kind != "decoder_self" or j <= i]
            run_keys.append(max(keys, key=lambda j: (weights[i, j], -j)))
            direct_keys.append(max(keys, key=lambda j: (direct[i, j], -j)))
        assert (agreement["run_keys"], agreement["direct_keys"]) == (run_keys, direct_keys), (kind, layer, index)
        assert agreement["matched"] == sum(r == d for r, d in zip(run_keys, direct_keys))
