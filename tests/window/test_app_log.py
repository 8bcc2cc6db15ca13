"""The window app's log on stderr: a file name with escape codes or a newline is written escaped, on one line."""

from __future__ import annotations

import logging

import pytest

from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from visualizer.app import log_escaped
from visualizer.workers.tasks import TaskSlot


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


def test_a_failed_open_logs_its_traceback_with_the_file_name_escaped(root_logger, tmp_path, capfd, qtbot):
    """A task that fails is logged with its traceback (the task layer's "… failed"); the error names the file."""
    root_logger.handlers = []
    log_escaped()
    damaged = tmp_path / "b\x1b[31mRED\nINFO visualizer: forged line.pt"
    damaged.write_bytes(b"not a checkpoint")
    slot = TaskSlot("Opening the checkpoint")
    with qtbot.waitSignal(slot.idle, timeout=30_000):
        slot.submit(lambda _state: load_checkpoint(damaged))
    lines = capfd.readouterr().err.splitlines()
    assert any(line.startswith("Traceback") for line in lines)  # the traceback keeps its own lines
    assert any("b\\x1b[31mRED\\nINFO visualizer: forged line.pt" in line for line in lines)
    assert not any("\x1b" in line or line.startswith("INFO visualizer: forged") for line in lines)
