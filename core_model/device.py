"""Device choice: CUDA, else MPS, else CPU, unless the caller names one."""

from __future__ import annotations

import torch


def pick_device(preferred: str | None = None) -> torch.device:
    """The named device ("cpu", "cuda", "cuda:1", "mps"), or the best available one when None/"auto"."""
    if preferred not in (None, "", "auto"):
        try:
            device = torch.device(preferred)
        except (RuntimeError, TypeError):  # torch's message for "banana" is a long list of device types
            raise ValueError(
                f"unknown device {str(preferred)[:40]!r}; available devices: {', '.join(available_devices())}"
            ) from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(
                "device 'cuda' was requested but CUDA is not available on this machine; "
                f"available devices: {', '.join(available_devices())}"
            )
        if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"device {preferred!r} does not exist; available devices: {', '.join(available_devices())}"
            )
        if device.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
            raise ValueError(
                "device 'mps' was requested but MPS is not available on this machine; "
                f"available devices: {', '.join(available_devices())}"
            )
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if hasattr(torch.backends, "mps") and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def available_devices() -> list[str]:
    """Names a front end can offer."""
    names = ["cpu"]
    if torch.cuda.is_available():
        names += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if hasattr(torch.backends, "mps") and torch.backends.mps.is_available():
        names.append("mps")
    return names
