"""Every field of a loaded checkpoint payload checked before anything is built from it, the weights' checksum among
them.

A file is untrusted input: its numbers ask for memory, its types may be anything `torch.load(weights_only=True)`
can rebuild. Each check raises CheckpointError naming the file and what is wrong in words, and none of them
allocates more than the file already holds (weight shapes are compared against a model built on the meta device).

torch.load does not check the CRC-32 of the zip records it reads, so a flipped byte in a weight would load
silently: a SHA-256 of the weights is written when a checkpoint is saved and compared when it is loaded. It covers
what the model receives (each weight's name, dtype, shape and bytes, in name order), so any change to the weights
after saving is found, however the file was rewritten. Files saved before checksums were stored have none and load
as before (the zip CRCs still guard them: checkpoint_files.check_archive).
"""

from __future__ import annotations

import functools
import hashlib
import re
import reprlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import torch

from .config import ModelConfig
from .model import Seq2SeqTransformer

CHECKSUM_KEY = "weights_sha256"  # the payload field that holds the hex digest
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")
FORMAT = "attention-playground-checkpoint"
VERSION = 1
PAYLOAD_KEYS = frozenset({"format", "version", "config", "state_dict", "history", "extra", CHECKSUM_KEY})
WEIGHT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)  # what load_state_dict can copy
# tensors in `extra` (the attention movie's maps and masks): numbers numpy and the widgets can take as they are
PLAIN_DTYPES = (*WEIGHT_DTYPES, torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
PLAIN_SCALARS = (type(None), bool, int, float, str, bytes)
MAX_EXTRA_DEPTH = 64  # nesting of lists and dicts in `extra`; deeper only comes from a crafted file
INT_LIMIT = 2**63  # integers must fit 64 bits: numpy, torch and Qt overflow on anything larger


def fits_64_bits(value: float) -> bool:
    """Whether a number is within a signed 64-bit integer's range, -2**63 included (one bound for every check)."""
    return -INT_LIMIT <= value < INT_LIMIT


def short_repr(value: object) -> str:
    """A repr of at most a few dozen characters, whatever a hostile file put there."""
    r = reprlib.Repr()
    r.maxstring, r.maxother, r.maxlist, r.maxdict, r.maxlevel, r.maxlong = 40, 40, 3, 3, 2, 40
    return r.repr(value)


class CheckpointError(Exception):
    """A checkpoint could not be written or read: corrupt, truncated, mismatched or unsafe."""


def check_payload(payload: object, name: str) -> tuple[ModelConfig, dict[str, torch.Tensor], object, object]:
    """(config, state_dict, history, extra) of a payload read from the file `name`: the format, configuration and
    weights validated; the history (checkpoint_records) and the extra data (checkpoint_records) are checked next."""
    if not isinstance(payload, dict):
        raise CheckpointError(f"{name} is not an Attention Playground checkpoint (it holds a {type(payload).__name__})")
    if "format" not in payload:
        raise CheckpointError(f"{name} is not an Attention Playground checkpoint (it has no format marker)")
    if payload["format"] != FORMAT:
        raise CheckpointError(
            f"{name} is not an Attention Playground checkpoint (wrong format marker {short_repr(payload['format'])})"
        )
    version = payload.get("version")
    if type(version) is not int:
        raise CheckpointError(f"{name} has an invalid checkpoint version {short_repr(version)}, expected {VERSION}")
    if version != VERSION:
        newer = "; it was written by a newer version of the app" if version > VERSION else ""
        raise CheckpointError(f"{name} has checkpoint version {short_repr(version)}, expected {VERSION}{newer}")
    unknown = sorted(str(k)[:40] for k in set(payload) - PAYLOAD_KEYS)
    if unknown:
        raise CheckpointError(f"{name} has unknown fields {unknown[:5]}")
    config = check_config(payload.get("config"), name)
    state = check_weights(payload.get("state_dict"), config, name)
    problem = digest_problem(payload.get(CHECKSUM_KEY), state, name)  # before the values: damage is named as such
    if problem:
        raise CheckpointError(problem)
    check_finite(state, name)
    return config, state, payload.get("history", []), payload.get("extra", {})


def stored_config(payload: object, name: str) -> ModelConfig:
    """The model configuration a read payload states, checked alone (cheap: nothing is built); check_payload checks
    the rest. Raises CheckpointError for a payload that holds none."""
    if not isinstance(payload, dict):
        raise CheckpointError(f"{name} is not an Attention Playground checkpoint (it holds a {type(payload).__name__})")
    return check_config(payload.get("config"), name)


def check_config(data: object, name: str) -> ModelConfig:
    """A ModelConfig within the size limits (ModelConfig refuses oversized ones before anything is built)."""
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise CheckpointError(f"{name} has an invalid model configuration: not a dict of named fields")
    try:
        return ModelConfig.from_dict(dict(data))
    except (TypeError, ValueError, OverflowError) as exc:
        raise CheckpointError(f"{name} has an invalid model configuration: {str(exc)[:300]}") from exc


SMALL_MODEL_BYTES = 16 * 2**20  # up to this size the shape check builds a real model (see expected_shapes)


@functools.lru_cache(maxsize=32)
def expected_shapes(config: ModelConfig) -> Mapping[str, torch.Size]:
    """The weight shapes a model of `config` has, from a model built on the meta device (no memory used).

    A small model is built on the CPU instead: on meta, the embeddings' normal_ init imports torch._dynamo, which
    cost more than `import torch` itself at start-up; a few MiB of CPU weights cost milliseconds. Building one is
    pure Python in long stretches that hold the GIL, so the answer is kept per configuration: the shipped files a
    model build reads again each time share a few configurations, and a worker checking them must not keep the GUI
    thread waiting.
    """
    with (
        torch.random.fork_rng(devices=[]),
        torch.device("cpu" if config.estimated_bytes <= SMALL_MODEL_BYTES else "meta"),
    ):  # the caller's RNG stream stays as it was
        model = Seq2SeqTransformer(config)
    return MappingProxyType({key: value.shape for key, value in model.state_dict().items()})


def check_weights(state: object, config: ModelConfig, name: str) -> dict[str, torch.Tensor]:
    """Names, shapes and dtypes of the weights: plain tensors that fit `config` exactly."""
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise CheckpointError(f"{name} has no valid weights (expected a dict of named tensors)")
    expected = expected_shapes(config)
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(k[:80] for k in set(state) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{name}: weights do not match its configuration (missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    for key, shape in expected.items():
        tensor = state[key]
        check_plain_tensor(tensor, f"{name}: weight {key}")
        if tensor.shape != shape:
            raise CheckpointError(
                f"{name}: weight {key} has shape {_shape(tensor)}, configuration needs {tuple(shape)}"
            )
        if tensor.dtype not in WEIGHT_DTYPES:
            raise CheckpointError(f"{name}: weight {key} has type {tensor.dtype}, expected a floating-point type")
    return dict(state)


def check_finite(state: dict[str, torch.Tensor], name: str) -> None:
    """Every weight finite: a model saved after training diverged cannot be shown."""
    for key, tensor in state.items():
        bad = int((~torch.isfinite(tensor)).sum())
        if bad:
            raise CheckpointError(
                f"{name}: weight {key} has {bad} non-finite values (NaN or infinity) "
                f"out of {tensor.numel()}; the model was saved after training diverged"
            )


def check_plain_tensor(tensor: torch.Tensor, what: str) -> None:
    """A dense CPU tensor whose data is really in the file (no sparse, meta or overlapping views).

    Only torch.Tensor itself, with no Python attributes: the weights-only loader also rebuilds a Parameter or a
    tensor carrying attributes, and an attribute can hide a method (`numel = 5`) that every later step calls.
    """
    if type(tensor) is not torch.Tensor:  # a subclass (Parameter) is exactly what is refused
        raise CheckpointError(f"{what} is a {type(tensor).__name__[:40]}, not a plain tensor")
    if tensor.__dict__:
        raise CheckpointError(
            f"{what} carries Python attributes {sorted(map(str, tensor.__dict__))[:3]}; only plain tensors are accepted"
        )
    if tensor.requires_grad:
        raise CheckpointError(f"{what} requires gradients; stored data never does")
    if tensor.layout != torch.strided or tensor.is_quantized or tensor.is_nested:
        raise CheckpointError(f"{what} is a {tensor.layout} tensor; only dense tensors are accepted")
    if tensor.device.type != "cpu":
        raise CheckpointError(f"{what} is on device {tensor.device.type}, not stored data")
    if tensor.numel() and tensor.numel() * tensor.element_size() > tensor.untyped_storage().nbytes():
        raise CheckpointError(f"{what} claims {tensor.numel()} values but stores fewer (a crafted view)")


def check_extra(extra: object, name: str) -> dict[str, Any]:
    """Plain data only: numbers, strings, lists, tuples, dicts with string keys and dense tensors."""
    if not isinstance(extra, dict):
        raise CheckpointError(f"{name}: its extra data must be a dict, got {type(extra).__name__}")
    problem = find_non_plain(extra)
    if problem:
        raise CheckpointError(f"{name}: its extra data {problem}")
    return dict(extra)


def find_non_plain(root: object, label: str = "extra") -> str | None:
    """What is wrong with `root` (called `label` in messages) as plain data, or None. Iterative; each container is
    visited once."""
    seen: set[int] = set()
    stack: list[tuple[object, str, int]] = [(root, label, 0)]
    while stack:
        value, where, depth = stack.pop()
        if type(value) is int and not fits_64_bits(value):  # not bool: True is plain data
            return f"holds an integer too large at {where[:200]} (at most 2**63 in size)"
        if isinstance(value, PLAIN_SCALARS):
            continue
        if isinstance(value, torch.Tensor):
            try:
                check_plain_tensor(value, where)
            except CheckpointError as exc:
                return f"holds an unusable tensor: {exc}"
            if value.dtype not in PLAIN_DTYPES:
                return f"holds a tensor of type {value.dtype} at {where[:200]}; only numbers and booleans are accepted"
            continue
        if not isinstance(value, (list, tuple, dict)):
            return f"holds a {type(value).__name__} at {where}; only plain data is accepted"
        if depth >= MAX_EXTRA_DEPTH:
            return f"is nested deeper than {MAX_EXTRA_DEPTH} levels at {where[:200]}"
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"has a key of type {type(key).__name__} at {where[:200]}; keys must be strings"
                stack.append((item, f"{where}[{key[:40]!r}]", depth + 1))
        else:
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
    return None


def _shape(tensor: torch.Tensor) -> tuple[int, ...]:
    return tuple(tensor.shape)


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
