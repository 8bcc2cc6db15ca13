"""A head analysis that ends after the window closed drops its result quietly: no traceback on the console."""

from __future__ import annotations

import threading

import shiboken6
import torch
from PySide6.QtCore import QThreadPool

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.state.heads import analyse_copy
from visualizer.workers.tasks import TaskSlot


def test_a_job_whose_window_is_gone_finishes_without_raising(qtbot, capfd):
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1), seed=0)
    gate, ended = threading.Event(), threading.Event()

    def roles(state, *inputs):
        gate.wait(10)
        try:
            return analyse_copy(state, *inputs)
        finally:
            ended.set()

    pool = QThreadPool()
    slot = TaskSlot("Scoring the head roles", pool=pool)
    slot.submit(roles, model, TaskSpec("copy", n_symbols=5, min_len=3, max_len=5), 4, 0, torch.device("cpu"), True)
    shiboken6.delete(slot)  # what closing the window does to the state's slot while the pool still runs its task
    gate.set()
    qtbot.waitUntil(ended.is_set, timeout=30_000)
    assert pool.waitForDone(
        30_000
    )  # its outcome found nobody to go to: must not raise "Signal source has been deleted"
    assert "Traceback" not in capfd.readouterr().err
