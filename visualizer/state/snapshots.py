"""Every immutable message that crosses a thread or a signal: maps, decoder state, training progress and outcome.

Widgets never see torch tensors; the one exception is TrainingOutcome.state_dict, which goes to the model hub.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from core_model.config import ModelConfig
from core_model.tasks import TaskSpec
from core_model.training_loop import Cadence, EndReason, Progress
from core_model.vocab import PAD, SPECIALS

OutcomeReason = Literal[EndReason, "paused", "running", "error"]  # "error": an unexpected exception ended the run
KIND_TITLES = {
    "encoder_self": "Encoder self-attention",
    "decoder_self": "Decoder self-attention",
    "cross": "Cross-attention",
}
KIND_SHORT_TITLES = {"encoder_self": "Encoder self", "decoder_self": "Decoder self", "cross": "Cross"}  # grid tabs
KIND_SHORT = {"encoder_self": "encoder self", "decoder_self": "decoder self", "cross": "cross"}


def head_name(kind: str, layer: int, head: int) -> str:
    """One head as menus and messages name it, 1-based as on the maps: "L2 H2 (cross)"."""
    return f"L{layer + 1} H{head + 1} ({KIND_SHORT.get(kind, kind)})"


@dataclass(frozen=True)
class ModelInfo:
    """A plain description of the hub's current model for labels and the status bar."""

    config: ModelConfig
    task: TaskSpec
    origin: str  # e.g. "trained checkpoint copy_rope.pt", "untrained (new architecture)"
    parameters: int
    device: str
    path: Path | None = None
    dirty: bool = False
    untrained: bool = False  # freshly initialised weights (state.origins.is_untrained): their maps mean nothing yet

    @property
    def summary(self) -> str:
        c = self.config
        return (
            f"{c.positional} PE, {c.norm_position}-{c.norm}, {c.activation}, d_model {c.d_model}, "
            f"{c.n_heads} heads, {c.n_encoder_layers}+{c.n_decoder_layers} layers"
        )


PAD_LABEL = SPECIALS[PAD]  # "<pad>", as KindMaps' labels write it


@dataclass(frozen=True)
class KindMaps:
    """All layers and heads of one attention kind for one input.

    values: (L, H, Tq, Tk) float32, post-softmax weights or pre-softmax scores.
    valid: (Tq, Tk) bool, True where the mask let the query see the key; invalid cells are drawn blank.
    """

    kind: str
    values: np.ndarray
    valid: np.ndarray
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    highlight_row: int | None = None  # the newest decoder query, when stepping

    @property
    def n_layers(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.values.shape[1])


@dataclass(frozen=True)
class MapsSnapshot:
    """Everything the heatmaps show for one forward pass."""

    maps: Mapping[str, KindMaps]  # read-only when made by the session
    mode: str = "weights"  # "weights" (post-softmax) or "scores" (pre-softmax)
    forward_ms: float = 0.0
    output_tokens: tuple[str, ...] = ()
    extra: Mapping[str, object] = field(default_factory=dict)


InputField = Literal["source", "prefix"]


@dataclass(frozen=True)
class InputError:
    """Why typed text was refused, and where: the input panel marks the field and the character."""

    field: InputField
    message: str
    position: int | None = None  # 0-based index of the offending character in the field's text
    showing: str = ""  # the field's last valid text: what the maps, prediction and expected output still show

    @property
    def showing_briefly(self) -> str:
        """`showing` cut to 40 characters with "…", "(empty)" for none: a source has no spaces to wrap at."""
        return (self.showing if len(self.showing) <= 40 else self.showing[:39] + "…") or "(empty)"


@dataclass(frozen=True)
class InputValues:
    """What the input fields show: the source and prefix as typed (accepted or not), the task, the extra pads."""

    source: str
    task: str
    prefix: str
    pads: int


@dataclass(frozen=True)
class PlaygroundFrame:
    """Everything one forward pass of the playground shows: maps, decoder state, mask previews, expected output."""

    maps: MapsSnapshot
    decoder: DecodeSnapshot
    previews: Mapping[str, np.ndarray]  # kind -> (Tq, Tk) bool, True where the masks let a query see a key; read-only
    expected: tuple[str, ...]  # the task's expected output for this source


@dataclass(frozen=True)
class DecodeSnapshot:
    """What the decoder stepper shows; plain data."""

    stepping: bool  # False: the decoder sees the expected output (teacher forcing)
    output_ids: tuple[int, ...]
    output_labels: tuple[str, ...]
    forced: tuple[bool, ...]
    correct: tuple[bool | None, ...]
    expected_labels: tuple[str, ...]
    top_k: tuple[tuple[int, str, float], ...]
    finished: bool
    position: int


ProgressSnapshot = Progress  # the loop's own report is already immutable plain data: sent as it is


@dataclass(frozen=True)
class EvalSnapshot:
    """Held-out metrics under the current weights: teacher-forced loss/accuracy and greedy exact match."""

    step: int
    loss: float
    token_accuracy: float
    exact_match: float
    n: int


@dataclass(frozen=True)
class ProbeSnapshot:
    """Attention of the fixed probe source at one step: kind -> KindMaps with values (L, H, Tq, Tk)."""

    step: int
    source: str
    maps: dict[str, KindMaps]


@dataclass(frozen=True)
class TrainingOutcome:
    """Weights (detached CPU clones) and history handed back when the run pauses or ends, or copied while it runs."""

    step: int
    total: int
    reason: OutcomeReason
    state_dict: dict[str, torch.Tensor]
    history: tuple[dict, ...]
    message: str = ""


@dataclass(frozen=True)
class WorkerOptions:
    """How often the worker evaluates and probes, and what it probes."""

    probe_text: str = field(default_factory=lambda: TaskSpec().default_source())  # "": no probe snapshots
    cadence: Cadence = field(default_factory=Cadence)
    eval_n: int = 200
    eval_seed: int = 4321  # held-out sequences, drawn apart from the training stream
    start_step: int = 0  # continue a run (e.g. on the CPU after running out of GPU memory)
    history_prefix: tuple[dict, ...] = field(default_factory=tuple)
