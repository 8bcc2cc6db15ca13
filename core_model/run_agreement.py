"""How many of a run's choices of key a head's direct path reproduces, query position by query position.

core_model.position_circuits reads a head's score over (query position, key position) on the embeddings alone; a
run's map (post-softmax weights or pre-softmax scores, the same argmax) comes from the whole stream. For each query
position i that both cover, with at least one key the run's mask lets it see among the table's positions, the run's
key is the argmax of its row over those keys and the direct path's the argmax of the table's row over the same keys
(the first on a tie, as numpy's argmax). The count of positions where the two agree says which of the run's choices
the direct path explains; the rest come from what the direct path leaves out (earlier layers, the norms, biases).
`run_agreements` makes the run itself, as the Playground and the `views` verb do: one teacher-forced pass, every
mask on (keys that are <pad> hidden, and later keys for decoder self-attention), its post-softmax weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .attention_views import view_maps
from .model import Seq2SeqTransformer
from .position_circuits import PositionCircuit
from .vocab import PAD


@dataclass(frozen=True)
class PathAgreement:
    """Per query position the run's key and the direct path's (None where no key counts), and how many agree."""

    run_keys: tuple[int | None, ...]
    direct_keys: tuple[int | None, ...]

    @property
    def queries(self) -> int:
        """Query positions with a key to choose."""
        return sum(key is not None for key in self.run_keys)

    @property
    def matched(self) -> int:
        return sum(r is not None and r == d for r, d in zip(self.run_keys, self.direct_keys, strict=True))

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_keys": list(self.run_keys),
            "direct_keys": list(self.direct_keys),
            "matched": self.matched,
            "queries": self.queries,
        }


def path_agreement(direct: np.ndarray, run: np.ndarray, valid: np.ndarray) -> PathAgreement:
    """direct (n, n) position table, run (Tq, Tk) one head's map, valid (Tq, Tk) the run's mask (True: seen)."""
    rows, columns = min(direct.shape[0], run.shape[0]), min(direct.shape[1], run.shape[1])
    run_keys: list[int | None] = []
    direct_keys: list[int | None] = []
    for i in range(rows):
        seen = valid[i, :columns]  # (columns,): keys the run may attend that the table covers
        if not seen.any():
            run_keys.append(None)
            direct_keys.append(None)
            continue
        run_keys.append(int(np.argmax(np.where(seen, run[i, :columns], -np.inf))))
        direct_keys.append(int(np.argmax(np.where(seen, direct[i, :columns], -np.inf))))
    return PathAgreement(tuple(run_keys), tuple(direct_keys))


def run_agreements(
    model: Seq2SeqTransformer, src: Tensor, tgt: Tensor, positions: Sequence[PositionCircuit]
) -> list[PathAgreement]:
    """Each head's agreement on one input: src (1, S) and tgt (1, T) token ids, `positions` in head_refs order."""
    with torch.inference_mode():
        _out, maps = view_maps(model, src, tgt, "weights")
    key_src, key_tgt = (src[0] != PAD).cpu().numpy(), (tgt[0] != PAD).cpu().numpy()  # (S,), (T,)
    t = key_tgt.shape[0]
    valid = {
        "encoder_self": np.broadcast_to(key_src, (key_src.shape[0], key_src.shape[0])),
        "decoder_self": np.tril(np.ones((t, t), dtype=bool)) & key_tgt[None, :],
        "cross": np.broadcast_to(key_src, (t, key_src.shape[0])),
    }
    out = []
    for circuit in positions:
        ref = circuit.ref
        run = maps.kind(ref.kind)[ref.layer][0, ref.head].detach().cpu().double().numpy()  # (Tq, Tk)
        out.append(path_agreement(circuit.scores, run, valid[ref.kind]))
    return out
