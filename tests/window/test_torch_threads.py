"""Each thread that runs the model uses the torch thread count chosen in visualizer/workers/torch_threads.py.

The process-wide default is raised to two threads first: a worker that inherited the default instead of choosing
its own would run two and fail these checks.
"""

from __future__ import annotations

import threading

import pytest
import torch
from PySide6.QtCore import QThreadPool

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig
from visualizer.workers import torch_threads
from visualizer.workers.inference import keystroke_slot
from visualizer.workers.tasks import run_task
from visualizer.workers.training_worker import TrainingWorker


@pytest.fixture
def two_threads_by_default():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_the_inference_thread_runs_the_chosen_count(qtbot, two_threads_by_default):
    pool = QThreadPool()  # fresh threads: a pool thread reused from another test may already have chosen its count
    runner = keystroke_slot(pool=pool)  # the app's keystroke slot, on threads that start from the default of 2
    seen: list[int] = []
    runner.finished.connect(seen.append)
    runner.failed.connect(lambda message: seen.append(-1))
    try:
        runner.submit(lambda _state: torch.get_num_threads())
        qtbot.waitUntil(lambda: bool(seen), timeout=10_000)
    finally:
        runner.shutdown()
        pool.waitForDone(10_000)
    assert seen == [torch_threads.INFERENCE_THREADS]


def test_the_training_thread_runs_the_chosen_count(two_threads_by_default):
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1), seed=0)
    worker = TrainingWorker(
        model, TaskSpec(min_len=2, max_len=4), TrainConfig(steps=1, batch_size=4, device="cpu"), torch.device("cpu")
    )
    seen: list[int] = []

    def train_then_look() -> None:  # a fresh thread, as the app's QThread is: it starts from the default of 2
        seen.append(torch.get_num_threads())
        worker.run()
        seen.append(torch.get_num_threads())

    thread = threading.Thread(target=train_then_look)
    thread.start()
    thread.join(60)
    assert worker.outcome is not None and worker.outcome.reason != "error"
    assert seen == [2, torch_threads.TRAINING_THREADS]


def test_a_background_job_runs_the_chosen_count(qtbot, two_threads_by_default):
    seen: list[int] = []
    pool = QThreadPool()  # fresh threads: a pool thread reused from another test may already have chosen its count
    run_task("Counting threads", torch.get_num_threads, seen.append, lambda message: seen.append(-1), pool)
    qtbot.waitUntil(lambda: bool(seen), timeout=10_000)
    pool.waitForDone(10_000)
    assert seen == [torch_threads.BACKGROUND_THREADS]
