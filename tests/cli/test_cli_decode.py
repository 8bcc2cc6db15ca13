"""`decode`: beam search and sampling of one source, as a user runs it, against core_model and a recomputation."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core_model.checkpoint import load_checkpoint
from core_model.decoding import greedy_decode
from visualizer.cli import main

ROOT = Path(__file__).resolve().parents[2]
CKPT = ROOT / "resources" / "copy_rope.pt"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-m", "visualizer", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def decode(capsys, *args: str) -> dict:
    assert main(["decode", str(CKPT), *args, "--device", "cpu", "--json"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1
    return json.loads(out)


def model_and_vocab():
    ckpt = load_checkpoint(CKPT)
    return ckpt.build("cpu").eval(), ckpt.task.vocabulary


def recomputed(model, vocab, source: str, tokens: list[str]) -> float:
    """The model's log-probabilities of the printed tokens, from one teacher-forced pass (float32 model)."""
    ids = [vocab.encode(t)[0] if len(t) == 1 else ["<pad>", "<bos>", "<eos>"].index(t) for t in tokens]
    src = torch.tensor([load_checkpoint(CKPT).task.source_ids(vocab.encode(source))])  # anchored: <bos> .. <eos>
    with torch.no_grad():
        lp = model(src, torch.tensor([[1, *ids[:-1]]])).log_probs[0].double()
    return math.fsum(float(lp[i, t]) for i, t in enumerate(ids))


def test_a_subprocess_prints_one_json_line_sorted_beams():
    proc = _run("decode", str(CKPT), "3141", "--beam", "4", "--device", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    beams = result["beams"]
    assert len(beams) == 4 and result["mode"] == "beam" and result["beam"] == 4
    assert [b["log_prob"] for b in beams] == sorted((b["log_prob"] for b in beams), reverse=True)
    assert beams[0]["tokens"] == ["3", "1", "4", "1", "<eos>"] == result["expected"]
    model, vocab = model_and_vocab()
    for beam in beams:
        assert "<bos>" not in beam["tokens"] and beam["tokens"][-1] == "<eos>"
        assert beam["log_prob"] == pytest.approx(recomputed(model, vocab, "3141", beam["tokens"]), abs=1e-5, rel=1e-5)


def test_the_tree_lists_every_node_with_cumulative_scores(capsys):
    result = decode(capsys, "52", "--beam", "3", "--tree")
    tree = result["tree"]
    for node in tree:
        before = 0.0 if node["parent"] == -1 else tree[node["parent"]]["score"]
        assert node["score"] == pytest.approx(before + node["log_prob"], abs=1e-12)
    assert sum(n["kept"] for n in tree if n["step"] == 0) == 3
    assert "tree" not in decode(capsys, "52", "--beam", "3")


def test_beam_one_is_greedy(capsys):
    result = decode(capsys, "97", "--beam", "1")
    model, vocab = model_and_vocab()
    greedy = greedy_decode(model, torch.tensor([load_checkpoint(CKPT).task.source_ids(vocab.encode("97"))]), 30)
    greedy = greedy[0].tolist()
    assert [b["tokens"] for b in result["beams"]] == [vocab.tokens(greedy)]


def test_sampling_with_a_seed_repeats(capsys):
    args = ("0246", "--temperature", "10", "--top-p", "0.9", "--samples", "5", "--max-new", "6")
    first, again = decode(capsys, *args, "--seed", "2"), decode(capsys, *args, "--seed", "2")
    assert first["beams"] == again["beams"] and len(first["beams"]) == 5
    assert first["mode"] == "sample" and first["top_p"] == 0.9
    model, vocab = model_and_vocab()
    for beam in first["beams"]:
        assert len(beam["tokens"]) <= 6
        assert beam["log_prob"] == pytest.approx(recomputed(model, vocab, "0246", beam["tokens"]), abs=1e-5, rel=1e-5)
    assert any(decode(capsys, *args, "--seed", str(s))["beams"] != first["beams"] for s in range(3, 8))


@pytest.mark.parametrize(
    "args, message",
    [
        (["01x3"], "unknown symbol 'x' at position 3"),
        ([""], "SOURCE is empty"),
        (["0" * 300], "at most"),
        (["01", "--beam", "0"], "argument --beam: must be an integer from 1 to 64, got 0"),
        (["01", "--beam", "2", "--seed", "1"], "choose one"),
        (["01", "--top-p", "1.5"], "argument --top-p: must be a number above 0 and at most 1, got 1.5"),
        (["01", "--temperature", "0"], "argument --temperature: must be a number from"),
        (["01", "--samples", "0"], "argument --samples: must be an integer from 1 to"),
    ],
)
def test_bad_source_or_options_exit_2_with_one_line(args, message, capsys):
    assert main(["decode", str(CKPT), *args, "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and message in captured.err and "Traceback" not in captured.err


def test_a_missing_checkpoint_exits_1(tmp_path, capsys):
    assert main(["decode", str(tmp_path / "none.pt"), "01", "--json"]) == 1
    assert len(capsys.readouterr().err.splitlines()) == 1
