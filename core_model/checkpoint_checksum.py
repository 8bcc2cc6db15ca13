"""A SHA-256 of the weights, written into a checkpoint when it is saved and compared when it is loaded.

torch.load does not check the CRC-32 of the zip records it reads, so a flipped byte in a weight would load
silently. The checksum covers what the model receives (each weight's name, dtype, shape and bytes, in name order),
so any change to the weights after saving is found, however the file was rewritten. Files saved before checksums
were stored have none and load as before (the zip CRCs still guard them: checkpoint_files.check_archive).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

import torch

CHECKSUM_KEY = "weights_sha256"  # the payload field that holds the hex digest
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def weights_digest(state: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 over names, dtypes, shapes and raw bytes of CPU tensors, in sorted name order (hex)."""
    digest = hashlib.sha256()
    for key in sorted(state):
        tensor = state[key].detach()
        digest.update(f"{key}\0{tensor.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(tensor.reshape(-1).contiguous().view(torch.uint8).numpy().data)  # numel * element_size bytes
    return digest.hexdigest()


def digest_problem(stored: object, state: Mapping[str, torch.Tensor], name: str) -> str | None:
    """Why `stored` is not the digest of `state`, in words; None when it is, or when the file has none (older)."""
    if stored is None:
        return None
    if not isinstance(stored, str) or not _HEX_DIGEST.fullmatch(stored):
        return f"{name} has an invalid weights checksum (a {type(stored).__name__}, not 64 hexadecimal digits)"
    if weights_digest(state) != stored:
        return f"{name} is corrupt: its weights do not match the checksum stored when it was saved"
    return None
