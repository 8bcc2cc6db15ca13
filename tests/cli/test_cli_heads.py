"""`attention-playground heads`: its JSON against loops written here, and the claims it makes on shipped copy models."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from core_model.checkpoint import load_checkpoint
from core_model.head_roles import probe_sequences
from core_model.model import HeadGates
from core_model.vocab import BOS, EOS, PAD
from visualizer.cli import main

ROOT = Path(__file__).resolve().parents[2]
ROPE, SINUSOIDAL = ROOT / "resources" / "copy_rope.pt", ROOT / "resources" / "copy_sinusoidal.pt"


def _heads_json(path: Path, *args: str) -> dict:
    """Run the verb as a user does (a subprocess, one thread) and parse its one JSON line."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    done = subprocess.run(
        [sys.executable, "-m", "visualizer", "heads", str(path), *args, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def shipped_default():
    """Both shipped copy models at the verb's defaults (n=200, seed=1234)."""
    return {"rope": _heads_json(ROPE), "sinusoidal": _heads_json(SINUSOIDAL)}


def test_json_shape_and_numbers_against_loops():
    out = _heads_json(ROPE, "--n", "12", "--seed", "5")
    assert set(out) == {"baseline", "sequences", "heads", "trained_lengths", "beyond_trained_lengths"}
    assert set(out["baseline"]) == {"loss", "exact_match"}
    ckpt = load_checkpoint(ROPE)
    cfg = ckpt.config
    expected = [
        (k, layer, h)
        for k in ("encoder_self", "decoder_self", "cross")
        for layer in range(2)
        for h in range(cfg.n_heads)
    ]
    assert [(h["kind"], h["layer"], h["head"]) for h in out["heads"]] == expected
    model = ckpt.build("cpu").eval()
    batch = probe_sequences(ckpt.task, 12, 5)
    with torch.no_grad():
        cross = model(batch.src, batch.tgt_in, return_attention=True).attention.cross
        base = model(batch.src, batch.tgt_in).log_probs.double()
    for row in out["heads"]:
        assert set(row) == {
            "kind",
            "layer",
            "head",
            "role",
            "role_score",
            "alignment",
            "delta_loss",
            "delta_exact_match",
        }
        if row["kind"] != "cross":
            assert row["alignment"] is None
            continue
        w = cross[row["layer"]][:, row["head"]].double()
        total, count = 0.0, 0
        for b in range(12):
            for t, y in enumerate(batch.tgt_out[b].tolist()):
                if y in (PAD, EOS, BOS):
                    continue
                total += sum(float(w[b, t, s]) for s, x in enumerate(batch.src[b].tolist()) if x == y)
                count += 1
        assert row["alignment"] == pytest.approx(total / count, abs=1e-12)
    # the loss delta of the most harmful cross head, from a gated forward pass written out here
    worst = max((r for r in out["heads"] if r["kind"] == "cross"), key=lambda r: r["delta_loss"])
    gate = np.ones((2, cfg.n_heads))
    gate[worst["layer"], worst["head"]] = 0
    with torch.no_grad():
        gated = model(batch.src, batch.tgt_in, head_gates=HeadGates.from_numpy({"cross": gate})).log_probs.double()
    keep = batch.tgt_out != PAD
    nll = lambda lp: float(-lp.gather(-1, batch.tgt_out[..., None])[..., 0][keep].mean())  # noqa: E731
    assert out["baseline"]["loss"] == pytest.approx(nll(base), rel=1e-5)
    assert worst["delta_loss"] == pytest.approx(nll(gated) - nll(base), rel=1e-4)
    assert worst["delta_loss"] > 0.01


def test_rope_copy_model_has_an_alignment_head(shipped_default):
    cross = [h for h in shipped_default["rope"]["heads"] if h["kind"] == "cross"]
    assert max(h["alignment"] for h in cross) >= 0.9
    assert any(h["role"] == "alignment" and h["role_score"] >= 0.9 for h in cross)


def test_sinusoidal_copy_model_has_an_alignment_head(shipped_default):
    cross = [h for h in shipped_default["sinusoidal"]["heads"] if h["kind"] == "cross"]
    assert max(h["alignment"] for h in cross) >= 0.9


@pytest.mark.parametrize("name", ["rope", "sinusoidal"])
def test_one_head_matters_most(shipped_default, name):
    """The head whose ablation costs the most exact match costs strictly more than any other head."""
    drops = sorted((-h["delta_exact_match"] for h in shipped_default[name]["heads"]), reverse=True)
    assert drops[0] > drops[1] + 0.05
    assert shipped_default[name]["baseline"]["exact_match"] >= 0.99


def test_bad_arguments_are_one_line_errors(capsys, tmp_path):
    assert main(["heads", str(ROPE), "--n", "0", "--json"]) == 2
    assert "argument --n: must be an integer from 1 to" in capsys.readouterr().err
    missing = tmp_path / "nope.pt"
    assert main(["heads", str(missing), "--json"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
