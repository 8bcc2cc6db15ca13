"""Attention forming: every head's role scores at each training probe snapshot, from the maps already recorded.

A probe snapshot holds the teacher-forced maps of one fixed source (decoder fed <bos> + the right answer), so the
roles of core_model.head_roles apply to it as to one sequence of N. No extra forward pass: the curves cost nothing
while training runs, and a checkpoint's restored snapshots give the same curves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core_model.head_roles import HeadRole, roles_from_maps
from core_model.vocab import EOS, N_SPECIALS, SPECIALS

from .snapshots import ProbeSnapshot

FORMED_AT = 0.9  # the alignment a cross head must reach to count as "formed"


@dataclass(frozen=True)
class FormingSeries:
    """steps (S,) and, per (kind, layer, head), every role's score at each step: scores[key][role] (S,)."""

    steps: np.ndarray
    scores: dict[tuple[str, int, int], dict[str, np.ndarray]]
    final_roles: dict[tuple[str, int, int], str]  # each head's role at the last snapshot

    def formed_step(self, threshold: float = FORMED_AT) -> int | None:
        """The first step at which some cross head's alignment reached `threshold` (None: not yet)."""
        best = [s["alignment"] for (kind, _, _), s in self.scores.items() if kind == "cross"]
        if not best or not len(self.steps):
            return None
        hits = np.flatnonzero(np.max(np.stack(best), axis=0) >= threshold)
        return int(self.steps[hits[0]]) if hits.size else None

    def formed_head(self, threshold: float = FORMED_AT) -> tuple[int, int] | None:
        """(layer, head), 0-based, of the cross head with the highest alignment at the formed step (None: not yet)."""
        step = self.formed_step(threshold)
        if step is None:
            return None
        at = int(np.flatnonzero(self.steps == step)[0])
        cross = [(s["alignment"][at], layer, head) for (kind, layer, head), s in self.scores.items() if kind == "cross"]
        _, layer, head = max(cross)
        return layer, head


def probe_tokens(snap: ProbeSnapshot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, tgt_in, tgt_out) ids, each (1, T), rebuilt from the snapshot's labels (equal labels, equal ids)."""
    ids = {name: i for i, name in enumerate(SPECIALS)}
    encode = lambda labels: [ids.setdefault(t, N_SPECIALS + len(ids) - len(SPECIALS)) for t in labels]  # noqa: E731
    src = encode(snap.maps["encoder_self"].key_labels)
    tgt_in = encode(snap.maps["decoder_self"].query_labels)
    return np.array([src]), np.array([tgt_in]), np.array([tgt_in[1:] + [EOS]])


def snapshot_roles(snap: ProbeSnapshot) -> tuple[HeadRole, ...]:
    """Every head's roles on the probe source at that step."""
    maps = {kind: km.values[:, None] for kind, km in snap.maps.items()}  # (L, H, Tq, Tk) -> (L, 1, H, Tq, Tk)
    return roles_from_maps(maps, *probe_tokens(snap))


class FormingRecorder:
    """Turns the growing tuple of snapshots into a FormingSeries, scoring each snapshot once."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[ProbeSnapshot, tuple[HeadRole, ...]]] = {}

    def series(self, snapshots: tuple[ProbeSnapshot, ...]) -> FormingSeries:
        cache = {}
        for snap in snapshots:
            hit = self._cache.get(id(snap))
            cache[id(snap)] = hit if hit is not None and hit[0] is snap else (snap, snapshot_roles(snap))
        self._cache = cache
        per_step = [cache[id(s)][1] for s in snapshots]
        scores: dict[tuple[str, int, int], dict[str, list[float]]] = {}
        for roles in per_step:
            for r in roles:
                row = scores.setdefault((r.kind, r.layer, r.head), {})
                for name, value in r.scores:
                    row.setdefault(name, []).append(value)
        complete = {
            k: {n: np.asarray(v) for n, v in row.items()}
            for k, row in scores.items()
            if all(len(v) == len(per_step) for v in row.values())
        }  # a head missing at some step: skip it
        final: dict[tuple[str, int, int], str] = (
            {(r.kind, r.layer, r.head): r.role for r in per_step[-1]} if per_step else {}
        )
        return FormingSeries(np.asarray([s.step for s in snapshots], float), complete, final)
