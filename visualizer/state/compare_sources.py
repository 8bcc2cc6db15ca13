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
from core_model.inputs import encoder_input
from core_model.model import HeadGates
from core_model.shipped import DEFAULT_CHECKPOINT, find_shipped_checkpoint, resource_path
from core_model.tasks import TaskSpec

from .playground_capture import capture_maps
from .playground_task import task_on_model
from .snapshots import PAD_LABEL, KindMaps, MapsSnapshot

SOURCES = {
    "file": "Checkpoint file…",
    "previous": "Previous model",
    "shipped": "Shipped model",
    "ablated": "This model with the current ablations",
}
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
    ckpt = load_checkpoint(path)  # checks the stored task against the model
    return ModelB(ckpt.build("cpu").eval(), ckpt.task, None, f"checkpoint {path.name}")


def shipped_for(model: Seq2SeqTransformer, task: TaskSpec | None = None) -> ModelB:
    """The shipped model with A's architecture and task, else any with that architecture that reads A's task's
    sources, else the default one; a task no shipped model can read is a ValueError saying so."""
    found = find_shipped_checkpoint(model.config, task.task if task is not None else None)
    if found is None and task is not None:
        found = find_shipped_checkpoint(model.config)
        if found is None:
            path = resource_path(DEFAULT_CHECKPOINT)
            found = path, load_checkpoint(path)
        ckpt = found[1]
        if task_on_model(ckpt.task, task.task, ckpt.config.vocab_size) is None:
            raise ValueError(
                f"no trained model ships for {task.task} yet, and the shipped {ckpt.task.task} model cannot read "
                f"its symbols: compare with the previous model or a checkpoint file"
            )
    if found is None:
        path = resource_path(DEFAULT_CHECKPOINT)
        found = path, load_checkpoint(path)
    path, ckpt = found
    return ModelB(ckpt.build("cpu").eval(), ckpt.task, None, f"shipped model {path.name}")


def copy_of(
    model: Seq2SeqTransformer, task: TaskSpec, label: str, gates: Mapping[str, np.ndarray] | None = None
) -> ModelB:
    """A deep copy on the CPU (A may go on training in place), with the ablations given as {kind: (L, H) on}."""
    twin = copy.deepcopy(model).to("cpu").eval()
    off = {k: ~np.asarray(g, bool) for k, g in (gates or {}).items()}
    if not any(o.any() for o in off.values()):
        return ModelB(twin, task, None, label)
    heads = ", ".join(
        f"{SHORT_KINDS[k]} L{layer + 1} H{head + 1}" for k, o in off.items() for layer, head in zip(*np.nonzero(o))
    )
    return ModelB(twin, task, HeadGates.from_numpy(dict(gates or {})), f"{label} (ablated: {heads})", off)


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    """True when both models hold the same tensors: B differs from A by its gates, input or masks, not its training."""
    sa, sb = a.state_dict(), b.state_dict()
    if sa.keys() != sb.keys():
        return False
    return all(x.shape == sb[k].shape and torch.equal(x.detach().cpu(), sb[k].detach().cpu()) for k, x in sa.items())


def token_ids(vocab: Vocabulary, labels: tuple[str, ...]) -> list[int]:
    """Token labels as drawn (e.g. "<bos>", "3") back to ids of B's vocabulary; ValueError names a missing one."""
    table = {token: i for i, token in enumerate(vocab.tokens(range(len(vocab))))}
    missing = [label for label in labels if label not in table]
    if missing:
        raise ValueError(f"model B does not know the symbol {missing[0]!r} (its symbols: {vocab.symbols})")
    return [table[label] for label in labels]


ANCHORS = ("<bos>", "<eos>")  # wrap an anchored task's source; never typed as symbols


def source_symbols(labels: tuple[str, ...]) -> tuple[list[str], int]:
    """A's source labels -> its symbols and its count of trailing pads (the anchors of an anchored task dropped)."""
    symbols = [label for label in labels if label not in ANCHORS and label != PAD_LABEL]
    return symbols, sum(label == PAD_LABEL for label in labels)


def run_b(b: ModelB, a: MapsSnapshot, masks: MaskSpec) -> MapsSnapshot:
    """B's maps in A's view mode for A's input: the same symbols, pads and decoder tokens, with the source encoded
    the way B's own task reads it (<bos> symbols <eos> when B's task is anchored, the bare symbols otherwise)."""
    cross = a.maps["cross"]
    vocab = b.task.vocabulary
    symbols, n_pads = source_symbols(cross.key_labels)
    src_ids = encoder_input(token_ids(vocab, tuple(symbols)), n_pads, anchored=b.task.anchored)
    src = torch.tensor([src_ids], dtype=torch.long)
    tgt = torch.tensor([token_ids(vocab, cross.query_labels)], dtype=torch.long)
    if max(src.shape[1], tgt.shape[1]) > b.model.config.max_len:
        raise ValueError(f"the input is longer than model B's max_len {b.model.config.max_len}")
    masks = painted_for_b(masks, cross.key_labels, tuple(vocab.tokens(src_ids)))
    return capture_maps(b.model, vocab, src, tgt, masks, b.gates, a.mode, cross.highlight_row).maps


def painted_for_b(masks: MaskSpec, a_labels: tuple[str, ...], b_labels: tuple[str, ...]) -> MaskSpec:
    """A's painted source cells moved to the same symbols in B's source (cells on A's anchors are dropped)."""
    if a_labels == b_labels:
        return masks
    to_b = dict(zip(shared_positions(a_labels).tolist(), shared_positions(b_labels).tolist()))
    enc = [(to_b[q], to_b[k]) for q, k in masks.painted("encoder_self") if q in to_b and k in to_b]
    cross = [(q, to_b[k]) for q, k in masks.painted("cross") if k in to_b]
    return masks.with_painted("encoder_self", enc).with_painted("cross", cross)


def shared_positions(labels: tuple[str, ...]) -> np.ndarray:
    """Indices of a source's symbols and pads, anchors left out: the i-th one is the same position for A and B."""
    return np.array([i for i, label in enumerate(labels) if label not in ANCHORS], dtype=np.intp)


def difference(a: KindMaps, b: KindMaps) -> KindMaps | None:
    """A − B cell by cell where both show a value, on the positions both read.

    When one model reads its source as <bos> symbols <eos> and the other does not, the source axes (keys of
    encoder self and cross, queries of encoder self) are matched by symbol index and the anchors are left out.
    None when the layers or heads differ: nothing to subtract.
    """
    if a.values.shape[:2] != b.values.shape[:2]:
        return None
    a_values, b_values, a_valid, b_valid = a.values, b.values, a.valid, b.valid
    q_labels, k_labels = a.query_labels, a.key_labels
    if a.values.shape != b.values.shape:
        source_queries = a.kind == "encoder_self"
        ka, kb = shared_positions(a.key_labels), shared_positions(b.key_labels)
        qa = ka if source_queries else np.arange(len(a.query_labels))
        qb = kb if source_queries else np.arange(len(b.query_labels))
        if len(ka) != len(kb) or len(qa) != len(qb):
            return None
        a_values, b_values = a.values[:, :, qa][:, :, :, ka], b.values[:, :, qb][:, :, :, kb]
        a_valid, b_valid = a.valid[np.ix_(qa, ka)], b.valid[np.ix_(qb, kb)]
        q_labels = tuple(a.query_labels[i] for i in qa)
        k_labels = tuple(a.key_labels[i] for i in ka)
    with np.errstate(invalid="ignore"):
        values = a_values.astype(np.float32) - b_values.astype(np.float32)
    valid = a_valid & b_valid & np.isfinite(values).all(axis=(0, 1))
    values.flags.writeable = False
    valid.flags.writeable = False
    return KindMaps(a.kind, values, valid, q_labels, k_labels, a.highlight_row)


def anchors_differ(a: MapsSnapshot, b: MapsSnapshot) -> bool:
    """True when exactly one of the two reads its source with <bos> … <eos> anchors."""

    def anchored(snap: MapsSnapshot) -> bool:
        return any(label in ANCHORS for label in snap.maps["cross"].key_labels)

    return anchored(a) != anchored(b)
