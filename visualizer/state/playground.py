"""The playground's view model: source text, task, masks, head gates and the decoder stepper -> one frame per pass.

It owns no widgets. Data flows one way: a widget calls a setter, the session runs one forward pass of the hub's
model and emits one `frame_changed(PlaygroundFrame)`; views draw that frame. Each kind of change has one signal.
"""
from __future__ import annotations

import logging
from types import MappingProxyType

import numpy as np
import torch
from PySide6.QtCore import QObject, Signal

from core_model import BOS, PAD, MaskSpec, Vocabulary, VocabularyError
from core_model.model import ATTENTION_KINDS, HeadGates
from core_model.tasks import TASK_NAMES, TaskSpec, expected_output, max_source_len

from .capture import capture_maps
from .model_hub import ModelHub
from .snapshots import DecodeSnapshot, InputError, MapsSnapshot, PlaygroundFrame
from .stepper import Stepper, StepperInputs

log = logging.getLogger(__name__)
DEFAULT_SOURCE = TaskSpec().default_source()  # "0123456789"
MODES = ("weights", "scores")


class PlaygroundSession(QObject):
    """Turns user choices into forward passes of the hub's model."""

    frame_changed = Signal(object)  # PlaygroundFrame, once per forward pass
    input_error_changed = Signal(object)  # InputError, or None once the input is fine again
    gates_changed = Signal(object)  # read-only {kind: (L, H) bool enabled}
    task_changed = Signal(str)  # the task followed a new model (the one it was trained on)

    def __init__(self, hub: ModelHub, top_k: int = 5) -> None:
        super().__init__()
        self.hub, self.top_k = hub, top_k
        self.source_text, self.target_prefix = DEFAULT_SOURCE, ""
        self._typed_source = DEFAULT_SOURCE
        self.task = hub.task.task
        self.extra_pads = 2
        self.masks = MaskSpec()
        self.mode = "weights"
        self._src_ids: list[int] = []
        self._stepper = Stepper(self._stepper_inputs)
        self._gates: dict[str, np.ndarray] = {}
        self.last_frame: PlaygroundFrame | None = None
        self._first_log_probs: torch.Tensor | None = None
        self.last_error: InputError | None = None
        hub.model_changed.connect(self._on_model_changed)
        self._reset_gates()

    # ----- derived -----
    @property
    def vocabulary(self) -> Vocabulary:
        return self.hub.task.vocabulary

    @property
    def max_source_len(self) -> int:
        """Longest source the model can take together with the padding shown."""
        return max_source_len(self.hub.config.max_len) - self.extra_pads

    @property
    def last_snapshot(self) -> MapsSnapshot | None:
        return self.last_frame.maps if self.last_frame is not None else None

    def expected_ids(self) -> list[int]:
        return expected_output(self.task, self._src_ids)

    def gates(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self._gates.items()}

    # ----- user actions (every restored setting goes through these too) -----
    def set_source(self, text: str) -> bool:
        """Validate and use new source text; on error the last good maps stay and the error is reported."""
        self._typed_source = text  # what the field shows, accepted or not: a new model checks this again
        error, ids = self._check_source(text)
        self._set_error(error)
        if error:
            return False
        self.source_text, self._src_ids = text, ids
        self._stepper.stop()
        self.recompute()
        return True

    def set_target_prefix(self, text: str) -> bool:
        """Tokens forced at the start of decoding; validated like the source."""
        try:
            ids = self.vocabulary.encode(text)
        except VocabularyError as exc:
            self._set_error(InputError("prefix", f"Target prefix: unknown symbol {exc.symbol!r} at position "
                                       f"{exc.position + 1}. Allowed: {' '.join(exc.allowed)}", exc.position))
            return False
        if len(ids) > self.max_source_len:
            self._set_error(InputError("prefix", f"Target prefix is too long ({len(ids)} symbols; at most "
                                       f"{self.max_source_len})"))
            return False
        self.target_prefix = text
        self._set_error(None)
        if ids:
            self._stepper.restart()
        else:
            self._stepper.stop()
        self.recompute()
        return True

    def set_task(self, task: str) -> None:
        if task not in TASK_NAMES:
            raise ValueError(f"task must be one of {list(TASK_NAMES)}, got {task!r}")
        self.task = task
        self.recompute()

    def set_masks(self, spec: MaskSpec) -> None:
        self.masks = spec
        self._stepper.replay()
        self.recompute()

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be 'weights' or 'scores', got {mode!r}")
        self.mode = mode
        self.recompute()

    def set_extra_pads(self, n: int) -> None:
        self.extra_pads = max(0, int(n))
        self.recompute()

    def set_head_enabled(self, kind: str, layer: int, head: int, enabled: bool) -> None:
        self._gates[kind][layer, head] = enabled
        self._publish_gates()
        self._stepper.replay()
        self.recompute()

    def restore_all_heads(self) -> None:
        self._reset_gates()
        self._stepper.replay()
        self.recompute()

    # ----- decoder stepper -----
    def step(self) -> None:
        self._stepper.step()
        self.recompute()

    def force(self, token: int) -> None:
        self._stepper.force(token)
        self.recompute()

    def back(self) -> None:
        self._stepper.back(keep=len(self.vocabulary.encode(self.target_prefix)))
        self.recompute()

    def run_to_end(self) -> None:
        self._stepper.run()
        self.recompute()

    def reset_decoding(self) -> None:
        """Back to <bos> (plus the target prefix), in stepping mode."""
        self._stepper.restart()
        self.recompute()

    def stop_stepping(self) -> None:
        """Return to the teacher-forced view."""
        self._stepper.stop()
        self.recompute()

    # ----- internals -----
    def _check_source(self, text: str) -> tuple[InputError | None, list[int]]:
        limit = self.max_source_len
        if len(text) > 4 * limit + 64:  # cheap refusal of pasted megabytes before looking at each symbol
            return InputError("source", f"Input is too long ({len(text):,} characters); at most {limit} symbols "
                              "fit this model"), []
        try:
            ids = self.vocabulary.encode(text)
        except VocabularyError as exc:
            return InputError("source", f"Unknown symbol {exc.symbol!r} at position {exc.position + 1}. "
                              f"Allowed: {' '.join(exc.allowed)} (spaces are ignored)", exc.position), []
        if not ids:
            return InputError("source", f"Type a source sequence, e.g. {DEFAULT_SOURCE}"), []
        if len(ids) > limit:
            return InputError("source", f"Input is too long ({len(ids)} symbols); at most {limit} fit this model"), []
        return None, ids

    def _set_error(self, error: InputError | None) -> None:
        if error != self.last_error:
            self.last_error = error
            self.input_error_changed.emit(error)

    def _reset_gates(self) -> None:
        c = self.hub.config
        layers = {"encoder_self": c.n_encoder_layers, "decoder_self": c.n_decoder_layers, "cross": c.n_decoder_layers}
        self._gates = {k: np.ones((layers[k], c.n_heads), dtype=bool) for k in ATTENTION_KINDS}
        self._publish_gates()

    def _publish_gates(self) -> None:
        frozen = {}
        for kind, gates in self._gates.items():
            copy = gates.copy()
            copy.flags.writeable = False
            frozen[kind] = copy
        self.gates_changed.emit(MappingProxyType(frozen))

    def head_gates(self) -> HeadGates | None:
        if all(g.all() for g in self._gates.values()):
            return None
        return HeadGates.from_numpy(self._gates, self.hub.device)

    def _src_tensor(self) -> torch.Tensor:
        ids = self.hub.task.source_ids(self._src_ids) + [PAD] * self.extra_pads  # anchored: <bos> ... <eos>
        return torch.tensor([ids], dtype=torch.long, device=self.hub.device)

    def _stepper_inputs(self) -> StepperInputs:
        return StepperInputs(self.hub.model, self._src_tensor(), self.masks, self.head_gates(),
                             max_source_len(self.hub.config.max_len), tuple(self.vocabulary.encode(self.target_prefix)))

    def _on_model_changed(self) -> None:
        if self.hub.task.task != self.task:
            self.task = self.hub.task.task
            self.task_changed.emit(self.task)
        self._reset_gates()
        error, ids = self._check_source(self._typed_source)  # a new vocabulary or max_len may accept or refuse it
        if error is None:
            self.source_text, self._src_ids = self._typed_source, ids
        self._set_error(error)
        self._stepper.stop()
        self.recompute()

    def _target_tensor(self) -> torch.Tensor:
        """Decoder input: the stepped tokens, or <bos> + expected output (+ pads) when teacher forcing."""
        if self._stepper.stepping:
            ids = self._stepper.tokens
        else:
            ids = [BOS] + self.expected_ids() + [PAD] * self.extra_pads
        return torch.tensor([ids], dtype=torch.long, device=self.hub.device)

    def recompute(self) -> PlaygroundFrame | None:
        """One forward pass with capture; emits one frame (maps, previews, decoder state, expected output)."""
        if not self._src_ids:
            return None
        tgt = self._target_tensor()
        highlight = tgt.shape[1] - 1 if self._stepper.stepping else None
        cap = capture_maps(self.hub.model, self.vocabulary, self._src_tensor(), tgt, self.masks, self.head_gates(),
                           self.mode, highlight)
        self._first_log_probs = cap.first_log_probs
        frame = PlaygroundFrame(cap.maps, self.decode_snapshot(), cap.previews,
                                tuple(self.vocabulary.tokens(self.expected_ids())))
        self.last_frame = frame
        self.frame_changed.emit(frame)
        return frame

    def decode_snapshot(self) -> DecodeSnapshot:
        """Plain description of the stepper for the decoder panel."""
        return self._stepper.snapshot(self.vocabulary, self.expected_ids(), self.top_k, self._first_log_probs)
