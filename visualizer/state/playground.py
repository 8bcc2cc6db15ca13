"""The playground's view model: source text, task, masks, head gates and the decoder stepper -> numpy snapshots.

It owns no widgets. Every change recomputes one forward pass of the hub's model (a toy model takes a few ms) and
emits immutable snapshots; the decoder stepper keeps a DecodeSession and replays it after option changes.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

import numpy as np
import torch
from PySide6.QtCore import QObject, Signal

from core_model import BOS, EOS, PAD, MaskSpec, Vocabulary, VocabularyError
from core_model.decoding import DecodeSession
from core_model.model import ATTENTION_KINDS, HeadGates
from core_model.tasks import TASK_NAMES, expected_output

from .model_hub import ModelHub
from .snapshots import DecodeSnapshot, KindMaps, MapsSnapshot

log = logging.getLogger(__name__)
DEFAULT_SOURCE = "0123456789"


class PlaygroundSession(QObject):
    """Turns user choices into forward passes of the hub's model."""

    maps_changed = Signal(object)  # MapsSnapshot
    decoder_changed = Signal(object)  # DecodeSnapshot
    input_error_changed = Signal(str)  # "" when the input is fine
    previews_changed = Signal(object)  # {kind: (Tq, Tk) bool}
    gates_changed = Signal(object)  # {kind: (L, H) bool enabled}
    expected_changed = Signal(str)  # expected output text for the current task
    task_synced = Signal(str)  # the task followed a new model (the one it was trained on)

    def __init__(self, hub: ModelHub, top_k: int = 5) -> None:
        super().__init__()
        self.hub, self.top_k = hub, top_k
        self.source_text, self.target_prefix = DEFAULT_SOURCE, ""
        self.task = hub.task.task
        self.extra_pads = 2
        self.masks = MaskSpec()
        self.mode = "weights"
        self._src_ids: list[int] = []
        self._session: DecodeSession | None = None
        self._stepping = False
        self._gates: dict[str, np.ndarray] = {}
        self.last_snapshot: MapsSnapshot | None = None
        self._first_log_probs: torch.Tensor | None = None
        self.last_error = ""
        hub.model_changed.connect(self._on_model_changed)
        self._reset_gates()

    # ----- derived -----
    @property
    def vocabulary(self) -> Vocabulary:
        return self.hub.task.vocabulary

    @property
    def max_source_len(self) -> int:
        """Longest source the model can take together with the padding shown."""
        return self.hub.config.max_len - 2 - self.extra_pads

    def expected_ids(self) -> list[int]:
        return expected_output(self.task, self._src_ids)

    def _publish_expected(self) -> None:
        self.expected_changed.emit(" ".join(self.vocabulary.tokens(self.expected_ids())))

    def gates(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self._gates.items()}

    # ----- user actions -----
    def set_source(self, text: str) -> bool:
        """Validate and use new source text; on error the last good maps stay and the error is reported."""
        error, ids = self._validate(text)
        if error:
            self._set_error(error)
            return False
        self.source_text, self._src_ids = text, ids
        self._set_error("")
        self._stepping, self._session = False, None
        self._publish_expected()
        self.recompute()
        return True

    def set_target_prefix(self, text: str) -> bool:
        """Tokens forced at the start of decoding; validated like the source."""
        try:
            ids = self.vocabulary.encode(text)
        except VocabularyError as exc:
            self._set_error(f"Target prefix: {exc}")
            return False
        if len(ids) > self.max_source_len:
            self._set_error(f"Target prefix is too long ({len(ids)} symbols; at most {self.max_source_len})")
            return False
        self.target_prefix = text
        self._set_error("")
        if ids:
            self.reset_decoding()
        else:
            self._stepping, self._session = False, None
            self.recompute()
        return True

    def set_task(self, task: str) -> None:
        if task not in TASK_NAMES:
            raise ValueError(f"task must be one of {list(TASK_NAMES)}, got {task!r}")
        self.task = task
        self._publish_expected()
        self._publish_all()

    def set_masks(self, spec: MaskSpec) -> None:
        self.masks = spec
        self._rebuild_session()
        self.recompute()

    def set_mode(self, mode: str) -> None:
        if mode not in ("weights", "scores"):
            raise ValueError(f"mode must be 'weights' or 'scores', got {mode!r}")
        self.mode = mode
        self.recompute()

    def set_extra_pads(self, n: int) -> None:
        self.extra_pads = max(0, int(n))
        self.recompute()

    def set_head_enabled(self, kind: str, layer: int, head: int, enabled: bool) -> None:
        self._gates[kind][layer, head] = enabled
        self.gates_changed.emit(self.gates())
        self._rebuild_session()
        self.recompute()

    def restore_all_heads(self) -> None:
        self._reset_gates()
        self._rebuild_session()
        self.recompute()

    # ----- decoder stepper -----
    def step(self) -> None:
        self._ensure_session()
        if not self._session.finished:
            self._session.step()
        self._after_decode_change()

    def force(self, token: int) -> None:
        self._ensure_session()
        if not self._session.finished:
            self._session.force(token)
        self._after_decode_change()

    def back(self) -> None:
        self._ensure_session()
        prefix = len(self.vocabulary.encode(self.target_prefix))
        if len(self._session.steps) > prefix:
            self._session.back()
        self._after_decode_change()

    def run_to_end(self) -> None:
        self._ensure_session()
        self._session.run()
        self._after_decode_change()

    def reset_decoding(self) -> None:
        """Back to <bos> (plus the target prefix), in stepping mode."""
        self._session = None
        self._ensure_session()
        self._after_decode_change()

    def stop_stepping(self) -> None:
        """Return to the teacher-forced view."""
        self._stepping, self._session = False, None
        self.recompute()

    # ----- internals -----
    def _validate(self, text: str) -> tuple[str, list[int]]:
        limit = self.max_source_len
        if len(text) > 4 * limit + 64:  # cheap refusal of pasted megabytes before looking at each symbol
            return f"Input is too long ({len(text):,} characters); at most {limit} symbols fit this model", []
        try:
            ids = self.vocabulary.encode(text)
        except VocabularyError as exc:
            return (f"Unknown symbol {exc.symbol!r} at position {exc.position + 1}. "
                    f"Allowed: {' '.join(exc.allowed)} (spaces are ignored)"), []
        if not ids:
            return "Type a source sequence, e.g. 0123456789", []
        if len(ids) > limit:
            return f"Input is too long ({len(ids)} symbols); at most {limit} fit this model", []
        return "", ids

    def _set_error(self, message: str) -> None:
        if message != self.last_error:
            self.last_error = message
            self.input_error_changed.emit(message)

    def _reset_gates(self) -> None:
        c = self.hub.config
        layers = {"encoder_self": c.n_encoder_layers, "decoder_self": c.n_decoder_layers, "cross": c.n_decoder_layers}
        self._gates = {k: np.ones((layers[k], c.n_heads), dtype=bool) for k in ATTENTION_KINDS}
        self.gates_changed.emit(self.gates())

    def head_gates(self) -> HeadGates | None:
        if all(g.all() for g in self._gates.values()):
            return None
        dev = self.hub.device
        return HeadGates(**{k: torch.as_tensor(g, dtype=torch.float32, device=dev) for k, g in self._gates.items()})

    def _src_tensor(self) -> torch.Tensor:
        ids = self._src_ids + [PAD] * self.extra_pads
        return torch.tensor([ids], dtype=torch.long, device=self.hub.device)

    def _ensure_session(self) -> None:
        if self._session is None:
            self._stepping = True
            self._session = DecodeSession(self.hub.model, self._src_tensor(), self.masks,
                                          self.head_gates(), max_new_tokens=self.hub.config.max_len - 2)
            for token in self.vocabulary.encode(self.target_prefix):
                if not self._session.finished:
                    self._session.force(token)

    def _rebuild_session(self) -> None:
        """Options changed: replay the same tokens under the new options."""
        if self._session is None:
            return
        old = [(s.token, s.forced) for s in self._session.steps]
        self._session = None
        self._ensure_session()
        for token, forced in old[len(self._session.steps):]:
            if self._session.finished:
                break
            self._session.step(token if forced else None)

    def _on_model_changed(self) -> None:
        if self.hub.task.task != self.task:
            self.task = self.hub.task.task
            self.task_synced.emit(self.task)
        self._reset_gates()
        error, ids = self._validate(self.source_text)
        self._src_ids = ids if not error else self._src_ids
        self._set_error(error)
        self._session, self._stepping = None, False
        if not error:
            self._publish_expected()
        self.recompute()

    def _after_decode_change(self) -> None:
        self.recompute()

    def _publish_all(self) -> None:
        self.recompute()

    def _target_tensor(self) -> tuple[torch.Tensor, list[str]]:
        """Decoder input: the stepped tokens, or <bos> + expected output (+ pads) when teacher forcing."""
        vocab = self.vocabulary
        if self._stepping and self._session is not None:
            ids = list(self._session.tokens)
        else:
            ids = [BOS] + self.expected_ids() + [PAD] * self.extra_pads
        return torch.tensor([ids], dtype=torch.long, device=self.hub.device), vocab.tokens(ids)

    def recompute(self) -> MapsSnapshot | None:
        """One forward pass with capture; emits maps, previews and the decoder state."""
        if not self._src_ids:
            return None
        src = self._src_tensor()
        tgt, tgt_labels = self._target_tensor()
        src_labels = self.vocabulary.tokens(src[0].tolist())
        model = self.hub.model
        start = time.perf_counter()
        with torch.inference_mode():  # ~0.3 ms cheaper than no_grad per keystroke; nothing here needs autograd
            out = model(src, tgt, self.masks, self.head_gates(), return_attention=self.mode == "weights",
                        return_scores=self.mode == "scores")
        maps_source = out.attention if self.mode == "weights" else out.scores
        numpy_maps = maps_source.to_numpy()  # the session boundary: numpy from here on
        predicted = out.logits[0].argmax(-1).tolist()
        self._first_log_probs = out.logits[0, 0].float().cpu()
        forward_ms = (time.perf_counter() - start) * 1000.0
        valid = self._valid_masks(src, tgt)
        labels = {"encoder_self": (src_labels, src_labels), "decoder_self": (tgt_labels, tgt_labels),
                  "cross": (tgt_labels, src_labels)}
        highlight = tgt.shape[1] - 1 if self._stepping else None
        maps = {}
        for kind in ATTENTION_KINDS:
            values = np.stack([layer[0] for layer in numpy_maps.kind(kind)])  # L x (H, Tq, Tk) -> (L, H, Tq, Tk)
            q, k = labels[kind]
            maps[kind] = KindMaps(kind, values, valid[kind], tuple(q), tuple(k),
                                  None if kind == "encoder_self" else highlight)
        snap = MapsSnapshot(maps, self.mode, forward_ms, tuple(self.vocabulary.tokens(predicted)),
                            {"stepping": self._stepping})
        self.last_snapshot = snap
        self.previews_changed.emit({k: v.copy() for k, v in valid.items()})
        self.maps_changed.emit(snap)
        self.decoder_changed.emit(self.decode_snapshot())
        return snap

    def _valid_masks(self, src: torch.Tensor, tgt: torch.Tensor) -> dict[str, np.ndarray]:
        """(Tq, Tk) bool per kind: where the current MaskSpec lets a query see a key."""
        s, t = src.shape[1], tgt.shape[1]

        def dense(mask: torch.Tensor | None, tq: int, tk: int) -> np.ndarray:
            full = torch.ones(tq, tk, dtype=torch.bool, device=src.device)
            if mask is not None:
                full = (full & mask).reshape(-1, tq, tk)[0]
            return full.cpu().numpy().copy()

        return {"encoder_self": dense(self.masks.encoder_self(src), s, s),
                "decoder_self": dense(self.masks.decoder_self(tgt), t, t),
                "cross": dense(self.masks.cross(src), t, s)}

    def decode_snapshot(self) -> DecodeSnapshot:
        """Plain description of the stepper for the decoder panel."""
        vocab = self.vocabulary
        expected = self.expected_ids() + [EOS]
        if not (self._stepping and self._session is not None):
            top: tuple[tuple[int, str, float], ...] = ()
            if self._first_log_probs is not None:  # the forward pass's row 0: what Step would see first
                probs, ids = self._first_log_probs.exp().topk(min(self.top_k, self._first_log_probs.numel()))
                top = tuple((int(i), vocab.token(int(i)), float(p)) for i, p in zip(ids, probs))
            return DecodeSnapshot(False, (), (), (), (), tuple(vocab.tokens(expected)), top, False, 0)
        sess = self._session
        out = sess.output
        correct = tuple((expected[i] == tok) if i < len(expected) else False for i, tok in enumerate(out))
        top: tuple[tuple[int, str, float], ...] = ()
        if not sess.finished:
            top = tuple((i, vocab.token(i), p) for i, p in sess.peek().top_k(self.top_k))
        return DecodeSnapshot(True, tuple(out), tuple(vocab.tokens(out)), tuple(s.forced for s in sess.steps),
                              correct, tuple(vocab.tokens(expected)), top, sess.finished, len(sess.tokens) - 1)
