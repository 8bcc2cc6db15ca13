"""A head analysis that ends after the window closed drops its result quietly: no traceback on the console."""
from __future__ import annotations

import shiboken6
import torch

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.workers.heads_worker import HeadsJob, _Runner


def test_a_job_whose_window_is_gone_finishes_without_raising(qtbot, capfd):
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1), seed=0)
    job = HeadsJob(model, TaskSpec("copy", n_symbols=5, min_len=3, max_len=5), n=4, seed=0,
                   device=torch.device("cpu"), roles_only=True)
    runner = _Runner(job)
    shiboken6.delete(job)  # what closing the window does to the job's QObject while the pool still runs it
    runner.run()  # as the pool thread would: must not raise "Signal source has been deleted"
    assert "Traceback" not in capfd.readouterr().err
