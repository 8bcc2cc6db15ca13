"""The playground's view model: source text, task, masks, head gates and the decoder stepper -> one frame per pass.

It owns no widgets, and it owns the inputs: the text as typed (accepted or not), the task, the padding and the masks.
Data flows one way: a widget calls a setter, the session runs one forward pass of the hub's model and emits one
`frame_changed(PlaygroundFrame)`; views draw that frame. The fields follow `inputs_changed` and `masks_changed`, so a
value set by code (restored preferences, a paint stroke) reaches them as a typed one does; one signal per change.
Stepper actions are commands run in order on the slot's threads, each followed by one frame; the session knows the
stepper only through those frames' snapshots. FramePasses (playground_inference.py) runs them; this makes requests.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import torch
from PySide6.QtCore import QObject, Signal

from core_model import MaskSpec, Vocabulary
from core_model.attention_views import VIEW_MODES
from core_model.inputs import decoder_input, encoder_input
from core_model.model import ATTENTION_KINDS, HeadGates
from core_model.shipped import has_shipped
from core_model.tasks import TaskSpec, expected_output, max_source_len, task_named

from .inline_slot import InlineSlot
from .model_hub import ModelHub
from .origins import is_untrained
from .playground_capture import frozen
from .playground_cell_tools import CellInputs
from .playground_inference import FramePasses, PassRequest
from .playground_stepper import StepCommand, Stepper
from .playground_task import example_source, fresh_task, task_note, task_on_model
from .snapshots import DecodeSnapshot, InputError, InputValues, MapsSnapshot, PlaygroundFrame
from .source_check import DEFAULT_SOURCE, check_prefix, check_source
from .worker_api import TaskSlotApi

log = logging.getLogger(__name__)
MODES = VIEW_MODES  # post-softmax weights, pre-softmax scores, norm-weighted, rollout
MAX_EXTRA_PADS = 16  # <pad> tokens the Playground appends to source and target (the input panel's range)
WINDOW_RANGE = (1, 512)  # a sliding-window mask's width in the Playground (the mask panel's range)


class PlaygroundSession(QObject):
    """Turns user choices into forward passes of the hub's model."""

    frame_changed = Signal(object)  # PlaygroundFrame, once per forward pass
    input_error_changed = Signal(object)  # InputError, or None once the input is fine again
    gates_changed = Signal(object)  # read-only {kind: (L, H) bool enabled}
    task_changed = Signal(str)  # the task followed a new model (the one it was trained on)
    task_picked = Signal(str)  # the task now picked (by the user, or following a new model)
    task_note_changed = Signal(str)  # where the model for the picked task stands (playground_task.task_note); "": fine
    busy_changed = Signal(bool)  # True while the newest pass has run longer than BUSY_AFTER_MS
    pass_failed = Signal(str)  # the newest pass raised: a sentence for the status bar
    inputs_changed = Signal(object)  # InputValues, after any of them changed (typed or set by code)
    masks_changed = Signal(object)  # the MaskSpec now in use

    def __init__(self, hub: ModelHub, top_k: int = 5, runner: TaskSlotApi | None = None) -> None:
        """runner: a coalescing task slot (the app injects workers/inference.keystroke_slot); inline by default."""
        super().__init__()
        self.hub, self.top_k = hub, top_k
        self.runner: TaskSlotApi = runner or InlineSlot("Forward pass")
        self.passes = FramePasses(self.runner, self)
        self.passes.frame_changed.connect(self.frame_changed)
        self.passes.busy_changed.connect(self.busy_changed)
        self.passes.pass_failed.connect(self.pass_failed)
        self.source_text, self.target_prefix = DEFAULT_SOURCE, ""  # the last accepted ones
        self.typed_source, self.typed_prefix = DEFAULT_SOURCE, ""  # as typed: a new model checks them again
        self._own_source = DEFAULT_SOURCE  # the last source set (typed, restored): a later task that takes it gets it
        self.task = hub.task.task
        self.task_note = ""  # what task_note_changed last said
        self._readings: tuple[tuple, TaskSpec | None] | None = None  # (what it was worked out for, the spec)
        self.extra_pads = 2
        self.masks = MaskSpec()
        self.mode = "weights"
        self._src_ids: list[int] = []
        self._src_read_as: tuple[str, Vocabulary] | None = None  # the task and symbols _src_ids were taken for
        self._stepping = False  # whether the stepper steps once every submitted request has run
        self._epoch = 0  # bumped when stepping ends (see PassRequest.epoch)
        self._gates: dict[str, np.ndarray] = {}
        self.last_error: InputError | None = None
        self._errors: dict[str, InputError | None] = {"source": None, "prefix": None}
        hub.model_changed.connect(self._on_model_changed)
        self._reset_gates()
        self._show_note()

    # ----- derived -----
    @property
    def reading(self) -> TaskSpec | None:
        """The picked task as the hub's model reads it (its size and lengths), None when the model cannot read that
        task's sources (playground_task.task_on_model); worked out once per model and pick."""
        key = (self.hub.generation, self.hub.task, self.task, self.hub.config.vocab_size)
        if self._readings is None or self._readings[0] != key:
            self._readings = key, task_on_model(self.hub.task, self.task, self.hub.config.vocab_size)
        return self._readings[1]

    @property
    def checking(self) -> TaskSpec:
        """The task the source field is checked against: the one the model reads, else the picked task's own recipe
        (the model a Trainer run would build for it)."""
        spec = self.reading
        if spec is not None:
            return spec
        config = self.hub.config
        return fresh_task(self.task, config.positional, config.max_len) or self.hub.task

    @property
    def vocabulary(self) -> Vocabulary:
        """The symbols of the passes: the picked task's as the model reads it, else the model's own."""
        return (self.reading or self.hub.task).vocabulary

    @property
    def max_source_len(self) -> int:
        """Longest source the model can take together with the padding shown."""
        return max_source_len(self.hub.config.max_len) - self.extra_pads

    @property
    def source_length(self) -> int:
        """Symbols in the source the maps show (the last accepted one)."""
        return len(self._src_ids)

    @property
    def last_frame(self) -> PlaygroundFrame | None:
        return self.passes.last_frame

    @property
    def busy(self) -> bool:
        return self.passes.busy

    @property
    def last_snapshot(self) -> MapsSnapshot | None:
        return self.last_frame.maps if self.last_frame is not None else None

    def expected_ids(self) -> list[int]:
        """The answer of the task chosen here (which may not be the model's own) with the model's task sizes; none
        while the model cannot read the task."""
        spec = self.reading
        return expected_output(spec, self._src_ids) if spec is not None and self._runnable() else []

    def example_source(self) -> str:
        """The picked task's example at the longest length that fits the model and the padding shown."""
        return example_source(self.checking, self.max_source_len)

    def gates(self) -> dict[str, np.ndarray]:
        return {k: v.copy() for k, v in self._gates.items()}

    # ----- user actions (every restored setting goes through these too) -----
    def inputs(self) -> InputValues:
        return InputValues(self.typed_source, self.task, self.typed_prefix, self.extra_pads)

    def _publish_inputs(self) -> None:
        self.inputs_changed.emit(self.inputs())

    def set_source(self, text: str) -> bool:
        """Validate new source text against the picked task and use it; on error the last good maps stay and the
        error is reported. True when the task takes it (it runs once the model can read the task)."""
        self.typed_source = self._own_source = text
        self._publish_inputs()
        error, ids = check_source(text, self.checking, self.max_source_len)
        self._set_error("source", error)
        if error:
            return False
        if self.reading is not None:
            self._accept(text, ids)
            self.stop_stepping()
        return True

    def set_target_prefix(self, text: str) -> bool:
        """Tokens forced at the start of decoding; validated like the source."""
        self.typed_prefix = text
        self._publish_inputs()
        error, ids = check_prefix(text, self.vocabulary, self.max_source_len)
        self._set_error("prefix", error)
        if error is not None:
            return False
        self.target_prefix = text
        if ids:
            self._command("restart")
        else:
            self.stop_stepping()
        return True

    def set_task(self, task: str) -> None:
        """Pick a task: its answers, its rules for the source, and its example when the typed source breaks them."""
        task_named(task)  # an unknown name is a ValueError listing the registry's
        if task == self.task:
            self._publish_inputs()
            self.recompute()
            return
        self.task = task
        self._take_task()

    def _take_task(self) -> None:
        """The typed source and prefix checked against the task now picked: the last source set stays when the task
        takes it, else the task's example takes its place; a prefix the model cannot read is dropped."""
        self._show_note()
        self.task_picked.emit(self.task)
        for text in (self._own_source, self.typed_source):
            if check_source(text, self.checking, self.max_source_len)[0] is None:
                self.typed_source = text
                break
        else:
            self.typed_source = self.example_source() or self.typed_source
        if check_prefix(self.typed_prefix, self.vocabulary, self.max_source_len)[0] is not None:
            self.typed_prefix = self.target_prefix = ""
            self._set_error("prefix", None)
        self._publish_inputs()
        error, ids = check_source(self.typed_source, self.checking, self.max_source_len)
        if error is None and self.reading is not None:
            self._accept(self.typed_source, ids)
        self._set_error("source", error)
        self.stop_stepping()

    def _show_note(self) -> None:
        """Say where the model for the picked task stands, when that changed."""
        hub = self.hub
        untrained = not hub.history and is_untrained(hub.origin)
        note = task_note(self.task, hub.task.task, self.reading is not None, untrained, has_shipped(self.task))
        if note != self.task_note:
            self.task_note = note
            self.task_note_changed.emit(note)

    def set_masks(self, spec: MaskSpec) -> None:
        self.masks = spec
        self.masks_changed.emit(spec)
        self._command("replay")

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
        self.mode = mode
        self.recompute()

    def set_extra_pads(self, n: int) -> None:
        self.extra_pads = min(MAX_EXTRA_PADS, max(0, int(n)))
        self._publish_inputs()
        self.recompute()

    def set_head_enabled(self, kind: str, layer: int, head: int, enabled: bool) -> None:
        self._gates[kind][layer, head] = enabled
        self._publish_gates()
        self._command("replay")

    def restore_all_heads(self) -> None:
        self._reset_gates()
        self._command("replay")

    # ----- decoder stepper: each action is one command, run in order, each followed by one frame -----
    def step(self) -> None:
        self._command("step")

    def force(self, token: int) -> None:
        self._command("force", int(token))

    def back(self) -> None:
        self._command("back", len(self.vocabulary.encode(self.target_prefix)))

    def run_to_end(self) -> None:
        self._command("run")

    def reset_decoding(self) -> None:
        """Back to <bos> (plus the target prefix), in stepping mode."""
        self._command("restart")

    def stop_stepping(self) -> None:
        """Return to the teacher-forced view."""
        self._stepping, self._epoch = False, self._epoch + 1
        self.recompute()

    def _command(self, name: str, arg: int = 0) -> None:
        """Queue a stepper command with a pass after it (a replay while not stepping is a plain pass)."""
        self.recompute(StepCommand(name, arg) if name != "replay" or self._stepping else None)

    # ----- internals -----
    def _set_error(self, field: str, error: InputError | None) -> None:
        """A field's error (None: accepted); the source's shows, else the prefix's: one field's fix hides no other."""
        if error is not None:  # the views keep the last valid input's frame: say which
            error = replace(error, showing=self.source_text if field == "source" else self.target_prefix)
        self._errors[field] = error
        shown = self._errors["source"] or self._errors["prefix"]
        if shown != self.last_error:
            self.last_error = shown
            self.input_error_changed.emit(shown)

    def _reset_gates(self) -> None:
        c = self.hub.config
        layers = {"encoder_self": c.n_encoder_layers, "decoder_self": c.n_decoder_layers, "cross": c.n_decoder_layers}
        self._gates = {k: np.ones((layers[k], c.n_heads), dtype=bool) for k in ATTENTION_KINDS}
        self._publish_gates()

    def _publish_gates(self) -> None:
        self.gates_changed.emit(MappingProxyType({kind: frozen(g.copy()) for kind, g in self._gates.items()}))

    def head_gates(self) -> HeadGates | None:
        if all(g.all() for g in self._gates.values()):
            return None
        return HeadGates.from_numpy(self._gates, self.hub.device)

    def _src_tensor(self) -> torch.Tensor:
        ids = encoder_input(self._src_ids, self.extra_pads, anchored=self.hub.task.anchored)
        return torch.tensor([ids], dtype=torch.long, device=self.hub.device)

    def _on_model_changed(self) -> None:
        self._reset_gates()
        if self.hub.task.task != self.task:  # the task follows the model: its rules, and its example if need be
            self.task = self.hub.task.task
            self.task_changed.emit(self.task)
            self._take_task()
            return
        # a new vocabulary or max_len may accept or refuse the text as typed
        error, ids = check_source(self.typed_source, self.checking, self.max_source_len)
        if error is not None and not self._runnable():  # other symbols: the last source means nothing to it
            self._take_task()
            return
        self._show_note()
        if error is None and self.reading is not None:
            self._accept(self.typed_source, ids)
        self._set_error("source", error)
        self.stop_stepping()

    def _accept(self, text: str, ids: list[int]) -> None:
        """The source the passes run on, and what its ids were read as."""
        self.source_text, self._src_ids = text, ids
        self._src_read_as = (self.task, self.vocabulary)

    def _runnable(self) -> bool:
        """The accepted source's ids mean what the model now reads: same task, same symbols."""
        spec = self.reading
        return bool(self._src_ids) and spec is not None and self._src_read_as == (self.task, spec.vocabulary)

    @property
    def idle(self) -> bool:
        """Every request has been answered (tests and benchmarks wait for this)."""
        return self.passes.idle

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        return self.passes.wait_idle(timeout_s)  # False on timeout

    def recompute(self, command: StepCommand | None = None) -> PlaygroundFrame | None:
        """Request one forward pass with capture (after `command`, queued in order); its frame is emitted when it
        arrives, unless a newer plain request replaced it.

        Returns the new frame when the slot answered at once (the inline slot), else None.
        """
        if not self._runnable():
            return None
        if command is not None:
            self._stepping = command.stepping_after(self._stepping)
        expected = tuple(self.expected_ids())
        tgt = torch.tensor([decoder_input(expected, self.extra_pads)], dtype=torch.long, device=self.hub.device)
        request = PassRequest(
            self.hub.generation,
            self.hub.model,
            self.vocabulary,
            self._src_tensor(),
            tgt,
            self.masks,
            self.head_gates(),
            self.mode,
            self._epoch,
            command,
            expected,
            self.top_k,
            max_source_len(self.hub.config.max_len),
            tuple(self.vocabulary.encode(self.target_prefix)),
        )
        return self.passes.submit(request)

    def _target_tensor(self) -> torch.Tensor:
        """The drawn frame's decoder input: <bos> + the stepped tokens, or <bos> + expected output (+ pads)."""
        snap = self.decode_snapshot()
        ids = decoder_input(snap.output_ids) if snap.stepping else decoder_input(self.expected_ids(), self.extra_pads)
        return torch.tensor([ids], dtype=torch.long, device=self.hub.device)

    def cell_inputs(self) -> CellInputs | None:
        """The inputs of the current pass, for the cell inspector (None before a valid source)."""
        if not self._runnable():
            return None
        return CellInputs(self.hub.model, self._src_tensor(), self._target_tensor(), self.masks, self.head_gates())

    def decode_snapshot(self) -> DecodeSnapshot:
        """Plain description of the stepper for the decoder panel, as the newest drawn frame left it."""
        if self.last_frame is not None:
            return self.last_frame.decoder
        return Stepper().snapshot(self.vocabulary, self.expected_ids(), self.top_k, None)
