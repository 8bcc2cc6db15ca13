"""The window app's log on stderr: a file name with escape codes or a newline is written escaped, on one line."""

from __future__ import annotations

import logging

import pytest

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from visualizer.app import log_escaped


@pytest.fixture
def root_logger():
    """The root logger, given back as it was (pytest hangs its own capture handlers there)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield root
    root.handlers, root.level = handlers, level


def test_a_saved_file_whose_name_holds_escape_codes_is_logged_escaped(root_logger, tmp_path, capfd):
    root_logger.handlers = []  # as a fresh process has it
    log_escaped()
    name = "a\x1b[31mRED\nINFO forged: line.pt"
    save_checkpoint(tmp_path / name, build_model(ModelConfig(vocab_size=13, d_model=16, n_heads=2), seed=0))
    lines = capfd.readouterr().err.splitlines()
    saved = [line for line in lines if "saved checkpoint" in line]
    assert len(saved) == 1 and saved[0].endswith("a\\x1b[31mRED\\nINFO forged: line.pt")
    assert not any("\x1b" in line or line.startswith("INFO forged") for line in lines)
