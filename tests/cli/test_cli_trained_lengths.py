"""Every verb that runs a source says whether it lies beyond the lengths the checkpoint was trained on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core_model.checkpoint import load_checkpoint, save_checkpoint
from visualizer.cli import main

ROOT = Path(__file__).resolve().parents[2]
CKPT = ROOT / "resources" / "copy_rope.pt"  # trained on sources of 1-16 symbols
INSIDE, BEYOND = "0123456789012345", "01234567890123456"  # 16 and 17 symbols

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _json(capsys, *args: str) -> dict:
    assert main([str(a) for a in args]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def _verbs(path: Path, source: str) -> dict[str, list[str]]:
    return {
        "decode": ["decode", path, source],
        "views": ["views", path, "--source", source],
        "cell": ["cell", path, source, "--kind", "cross", "--query", "0", "--key", "0"],
        "eval": ["eval", path, "--lengths", f"{len(source)}", "--n", "5"],
    }


@pytest.mark.parametrize("verb", ["decode", "views", "cell", "eval"])
def test_a_source_longer_than_the_trained_lengths_is_said_to_be_beyond_them(capsys, verb):
    inside = _json(capsys, *_verbs(CKPT, INSIDE)[verb])
    beyond = _json(capsys, *_verbs(CKPT, BEYOND)[verb])
    assert inside["trained_lengths"] == beyond["trained_lengths"] == [1, 16]
    assert inside["beyond_trained_lengths"] is False and beyond["beyond_trained_lengths"] is True


def test_heads_analyses_sources_of_the_trained_lengths(capsys):
    result = _json(capsys, "heads", CKPT, "--n", "4")
    assert result["trained_lengths"] == [1, 16] and result["beyond_trained_lengths"] is False


def test_a_shorter_source_than_trained_is_outside_too(tmp_path, capsys):
    ckpt = load_checkpoint(CKPT)
    path = tmp_path / "long_only.pt"
    extra = {**ckpt.extra, "task": {**ckpt.extra["task"], "min_len": 8}}
    save_checkpoint(path, ckpt.build(), history=ckpt.history, extra=extra)
    result = _json(capsys, "decode", path, "0123")
    assert result["trained_lengths"] == [8, 16] and result["beyond_trained_lengths"] is True


@pytest.mark.parametrize("drop", ["task", "history"])
def test_a_file_that_does_not_say_gives_null_never_a_guessed_range(tmp_path, capsys, drop):
    """Without a stored task the loader assumes TaskSpec's defaults (10 symbols, length 10): never report those; a
    task without any training history may be an untrained model saved as it was."""
    ckpt = load_checkpoint(CKPT)
    path = tmp_path / f"no_{drop}.pt"
    extra = {k: v for k, v in ckpt.extra.items() if k != drop}
    save_checkpoint(path, ckpt.build(), history=[] if drop == "history" else ckpt.history, extra=extra)
    for args in _verbs(path, BEYOND).values():
        result = _json(capsys, *args)
        assert result["trained_lengths"] is None and result["beyond_trained_lengths"] is None, args[0]
