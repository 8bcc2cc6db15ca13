"""Where model B of an A/B comparison comes from, and its forward pass; plain functions run off the GUI thread."""
from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core_model import MaskSpec, Seq2SeqTransformer, Vocabulary
from core_model.checkpoint import load_checkpoint
from core_model.model import HeadGates
from core_model.shipped import DEFAULT_CHECKPOINT, find_shipped_checkpoint, resource_path
from core_model.tasks import TaskSpec

from .capture import capture_maps
from .snapshots import KindMaps, MapsSnapshot

SOURCES = {"file": "Checkpoint file…", "previous": "Previous model", "shipped": "Shipped model",
           "ablated": "This model with the current ablations"}
SHORT_KINDS = {"encoder_self": "enc", "decoder_self": "dec", "cross": "cross"}


@dataclass(frozen=True)
class ModelB:
    """The second model: its weights (owned: a copy), task, head gates and the sentence that names it."""

    model: Seq2SeqTransformer
    task: TaskSpec
    gates: HeadGates | None
    label: str
    ablated: Mapping[str, np.ndarray] = field(default_factory=dict)  # kind -> (L, H) bool, True = switched off


def from_file(path: Path) -> ModelB:
    """A checkpoint read and checked like File > Open does it (CheckpointError carries the sentence)."""
    ckpt = load_checkpoint(path)
    task = ckpt.task
    task.check_vocab(ckpt.config.vocab_size)
    return ModelB(ckpt.build("cpu").eval(), task, None, f"checkpoint {path.name}")


def shipped_for(model: Seq2SeqTransformer) -> ModelB:
    """The shipped model with A's architecture, else the default shipped model."""
    found = find_shipped_checkpoint(model.config)
    if found is None:
        path = resource_path(DEFAULT_CHECKPOINT)
        found = path, load_checkpoint(path)
    path, ckpt = found
    return ModelB(ckpt.build("cpu").eval(), ckpt.task, None, f"shipped model {path.name}")


def copy_of(model: Seq2SeqTransformer, task: TaskSpec, label: str,
            gates: Mapping[str, np.ndarray] | None = None) -> ModelB:
    """A deep copy on the CPU (A may go on training in place), with the ablations given as {kind: (L, H) on}."""
    twin = copy.deepcopy(model).to("cpu").eval()
    off = {k: ~np.asarray(g, bool) for k, g in (gates or {}).items()}
    if not any(o.any() for o in off.values()):
        return ModelB(twin, task, None, label)
    heads = ", ".join(f"{SHORT_KINDS[k]} L{layer + 1} H{head + 1}" for k, o in off.items()
                      for layer, head in zip(*np.nonzero(o)))
    return ModelB(twin, task, HeadGates.from_numpy(dict(gates)), f"{label} (ablated: {heads})", off)


def token_ids(vocab: Vocabulary, labels: tuple[str, ...]) -> list[int]:
    """Token labels as drawn (e.g. "<bos>", "3") back to ids of B's vocabulary; ValueError names a missing one."""
    table = {token: i for i, token in enumerate(vocab.tokens(range(len(vocab))))}
    missing = [label for label in labels if label not in table]
    if missing:
        raise ValueError(f"model B does not know the symbol {missing[0]!r} (its symbols: {vocab.symbols})")
    return [table[label] for label in labels]


def run_b(b: ModelB, a: MapsSnapshot, masks: MaskSpec) -> MapsSnapshot:
    """B's maps in A's view mode for the very input A was shown (tokens read back from A's labels)."""
    cross = a.maps["cross"]
    vocab = b.task.vocabulary
    src = torch.tensor([token_ids(vocab, cross.key_labels)], dtype=torch.long)
    tgt = torch.tensor([token_ids(vocab, cross.query_labels)], dtype=torch.long)
    if max(src.shape[1], tgt.shape[1]) > b.model.config.max_len:
        raise ValueError(f"the input is longer than model B's max_len {b.model.config.max_len}")
    return capture_maps(b.model, vocab, src, tgt, masks, b.gates, a.mode, cross.highlight_row).maps


def difference(a: KindMaps, b: KindMaps) -> KindMaps | None:
    """A − B cell by cell where both show a value (None when the shapes differ: nothing to subtract)."""
    if a.values.shape != b.values.shape:
        return None
    with np.errstate(invalid="ignore"):
        values = (a.values.astype(np.float32) - b.values.astype(np.float32))
    valid = a.valid & b.valid & np.isfinite(values).all(axis=(0, 1))
    values.flags.writeable = False
    return KindMaps(a.kind, values, valid, a.query_labels, a.key_labels, a.highlight_row)
