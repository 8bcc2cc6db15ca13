"""How many CPU threads torch may use on each thread of the app that runs the model, chosen in this one place.

torch keeps its intra-op thread count per thread (OpenMP's setting belongs to the calling thread; a new thread
starts from the process-wide default, which is whatever thread set it last), so every worker sets its own when it
starts. One thread each: on a 2-core machine a second OpenMP thread for the forward pass or for training competes
with the GUI thread for the other core and spins against it, and the model is too small to gain from it
(tests/benchmarks/threads_bench.py measures 1 against 2; docs/BENCHMARKS.md has the numbers).
"""

from __future__ import annotations

import sys

INFERENCE_THREADS = 1  # the Playground's forward passes and the decoder stepper
TRAINING_THREADS = 1  # the Trainer's optimisation steps
BACKGROUND_THREADS = 1  # everything else on a pool or job thread: loading, beam search, head analysis, Length lab


def use_torch_threads(count: int) -> None:
    """Set torch's intra-op thread count for the calling thread (imports torch)."""
    import torch

    if torch.get_num_threads() != count:
        torch.set_num_threads(count)


def use_background_threads() -> None:
    """BACKGROUND_THREADS for the calling pool thread, when torch is loaded (a job that runs before it needs none)."""
    if "torch" in sys.modules:
        use_torch_threads(BACKGROUND_THREADS)


def use_inference_threads() -> None:
    """INFERENCE_THREADS for the calling pool thread, read when the pass starts (a benchmark may change it)."""
    use_torch_threads(INFERENCE_THREADS)
