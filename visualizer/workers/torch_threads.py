"""How many CPU threads torch may use on each thread of the app that runs the model, chosen in this one place.

torch keeps its intra-op thread count per thread (OpenMP's setting is per calling thread), so each worker sets its
own when it starts rather than relying on whichever thread set the process-wide default last. One thread each:
on a 2-core machine a second thread for the forward pass or for training competes with the GUI thread for the
other core, and the model is too small to gain from it (measured by tests/benchmarks/threads_bench.py; the
numbers are in docs/BENCHMARKS.md).
"""
from __future__ import annotations

INFERENCE_THREADS = 1  # the Playground's forward passes (keystrokes, the stepper, beam search)
TRAINING_THREADS = 1  # the Trainer's optimisation steps
LOADING_THREADS = 1  # loading and warming up a model in the background


def use_torch_threads(count: int) -> None:
    """Set torch's intra-op thread count for the calling thread."""
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)
