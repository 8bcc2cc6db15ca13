"""A float64 copy of a model, for the analyses that explain it.

An attribution ranks source symbols by values that can differ by less than float32 resolves (occlusion at an
output the model is sure of moves log p by ~1e-7): run in float32, which symbol ranks first there depends on the
CPU's rounding, and the same source reads differently on two machines. In float64 those values are the model's own.
"""

from __future__ import annotations

import copy

import torch

from .model import Seq2SeqTransformer


def in_float64(model: Seq2SeqTransformer) -> Seq2SeqTransformer:
    """A float64 copy of `model` in eval mode, on its device (the CPU for a device without float64, such as MPS);
    the model itself is left as it is."""
    device = next(model.parameters()).device
    twin = copy.deepcopy(model)
    if device.type == "mps":
        twin = twin.to("cpu")
    return twin.to(torch.float64).eval()
