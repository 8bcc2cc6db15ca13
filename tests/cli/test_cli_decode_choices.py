"""`decode` prints only task symbols and <eos>, says how it scores, and refuses --tree with sampling."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from core_model.tasks import TaskSpec
from visualizer.cli import main

CKPT = Path(__file__).resolve().parents[2] / "resources" / "copy_rope.pt"
SPECIALS = ("<pad>", "<bos>", "<eos>")
FLOAT32 = {"abs": 1e-5, "rel": 5e-5}  # the CLI runs float32: its cached pass and an uncached one round differently


def decode(capsys, path: Path, *args: str) -> dict:
    assert main(["decode", str(path), *args, "--device", "cpu", "--json"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == 1
    return json.loads(out)


def teacher_forced(path: Path, source: str, tokens: list[str]) -> float:
    """The sum of the printed tokens' log-probabilities from one uncached pass of the checkpoint's model."""
    ckpt, model = loaded(path)
    vocab = ckpt.task.vocabulary
    ids = [SPECIALS.index(t) if t in SPECIALS else vocab.encode(t)[0] for t in tokens]
    src = torch.tensor([ckpt.task.source_ids(vocab.encode(source))])
    with torch.no_grad():
        lp = model(src, torch.tensor([[1, *ids[:-1]]])).log_probs[0].double()
    return math.fsum(float(lp[i, t]) for i, t in enumerate(ids))


@functools.cache
def loaded(path: Path):
    ckpt = load_checkpoint(path)
    return ckpt, ckpt.build("cpu").eval()


def leaning_checkpoint(tmp_path: Path, favoured: list[int], vocab_size: int, n_symbols: int) -> Path:
    """An untrained model whose generator bias favours `favoured` ids, saved with a copy task of n_symbols."""
    model = build_model(ModelConfig(vocab_size=vocab_size, d_model=16, n_heads=2, d_ff=32, max_len=12), seed=0)
    with torch.no_grad():
        model.generator.bias[favoured] += 4.0
    task = TaskSpec("copy", n_symbols=n_symbols, min_len=1, max_len=5)
    return save_checkpoint(tmp_path / "leaning.pt", model, extra={"task": dataclasses.asdict(task)})


def test_hot_samples_hold_no_pad_or_bos_and_print_the_teacher_forced_score(capsys):
    result = decode(capsys, CKPT, "3141", "--temperature", "5", "--samples", "200", "--seed", "6", "--max-new", "3")
    printed = [b["tokens"] for b in result["beams"]]
    assert len({tuple(t) for t in printed}) > 5
    assert [t for t in printed if {"<pad>", "<bos>"} & set(t)] == []
    assert result["choices"] == [*"0123456789", "<eos>"]
    assert "teacher-forced" in result["scoring"] and "whole vocabulary" in result["scoring"]
    for beam in result["beams"]:
        assert beam["log_prob"] == pytest.approx(teacher_forced(CKPT, "3141", beam["tokens"]), **FLOAT32)


def test_beam_search_and_its_tree_skip_pad_and_bos_even_when_the_model_prefers_them(capsys, tmp_path):
    path = leaning_checkpoint(tmp_path, [0, 1], 8, 5)
    result = decode(capsys, path, "0123", "--beam", "4", "--tree")
    assert {n["token"] for n in result["tree"]} & {"<pad>", "<bos>"} == set()
    assert {n["token"] for n in result["tree"]} <= set(result["choices"]) == {*"01234", "<eos>"}
    for beam in result["beams"]:
        assert beam["log_prob"] == pytest.approx(teacher_forced(path, "0123", beam["tokens"]), **FLOAT32)


def test_a_model_with_more_ids_than_its_task_prints_only_the_tasks_tokens(capsys, tmp_path):
    path = leaning_checkpoint(tmp_path, list(range(8, 13)), 13, 5)  # as `train --symbols 5` makes: vocab_size 13
    for args in (["--beam", "6", "--tree"], ["--temperature", "3", "--samples", "30"]):
        result = decode(capsys, path, "012", *args)
        assert result["choices"] == [*"01234", "<eos>"]
        assert {t for b in result["beams"] for t in b["tokens"]} <= set(result["choices"])


def test_tree_with_sampling_is_a_one_line_argument_error(capsys):
    assert main(["decode", str(CKPT), "3141", "--temperature", "2", "--tree", "--device", "cpu", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert "--tree" in captured.err and "Traceback" not in captured.err
