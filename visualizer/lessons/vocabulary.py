"""What a lesson file may name: set-up actions, completing events, highlight targets and placeholders.

Qt-free, so a lesson file is checked without starting the app; the runtime registries (actions.py, events.py,
targets.py) implement exactly these names, and a test holds the two together.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

KINDS = ("encoder_self", "decoder_self", "cross")
ATTRIBUTION_METHODS = ("gradient_x_delta", "integrated_gradients", "occlusion")  # attribution_agreement.METHODS
TABS = (
    "Playground",
    "Positional encoding",
    "Trainer",
    "Heads",
    "Length lab",
    "Causal",
    "Circuits",
)  # show_tab may name
VIEWS = ("weights", "scores", "norms", "rollout")  # the Playground's "Show" choice


def _text(value: object) -> str | None:
    return None if isinstance(value, str) and value.strip() else "must be a non-empty string"


def _choice(*allowed: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        return None if value in allowed else f"unknown value {value!r}; known: {', '.join(allowed)}"

    return check


def _whole(value: object) -> str | None:
    return None if isinstance(value, int) and not isinstance(value, bool) else "must be a whole number"


def _counted(value: object) -> str | None:
    """A 1-based layer or head as the app labels it ("L2 H1"), or "last"."""
    ok = value == "last" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)
    return None if ok else 'must be a number from 1 (as the app labels it) or "last"'


def _positive(value: object, maximum: int) -> str | None:
    """A count for a spin box, within the box's range: a larger one would overflow Qt or be cut short unseen."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= maximum
    return None if ok else f"must be a whole number from 1 to {maximum:,}"


def _sequences(value: object) -> str | None:
    from core_model.head_importance import MAX_SEQUENCES  # the Heads tab's Sequences box goes this far

    return _positive(value, MAX_SEQUENCES)


def _training_steps(value: object) -> str | None:
    from core_model.train_config import MAX_STEPS  # the Trainer's Steps field goes this far

    return _positive(value, MAX_STEPS)


def _shipped_model(value: object) -> str | None:
    from core_model.shipped import LESSON_CHECKPOINTS, SHIPPED_CHECKPOINTS

    return _choice(*SHIPPED_CHECKPOINTS, *LESSON_CHECKPOINTS)(value)


@dataclass(frozen=True)
class Param:
    """One parameter of an action or event: how to check its value, and whether a file must give it."""

    check: Callable[[object], str | None]  # None when fine, else what is wrong
    required: bool = False


@dataclass(frozen=True)
class EventSpec:
    """An event that completes a step: its parameters (which occurrences count) and the payload it provides."""

    params: dict[str, Param]
    payload: dict[str, type]  # placeholder name -> type of its value
    doc: str = ""


@dataclass(frozen=True)
class ActionSpec:
    params: dict[str, Param] = field(default_factory=dict)
    doc: str = ""


ACTIONS: dict[str, ActionSpec] = {
    "open_model": ActionSpec({"model": Param(_shipped_model, True)}, "open a shipped checkpoint (waits until loaded)"),
    "set_source": ActionSpec({"text": Param(_text, True)}, "type a source into the Playground (waits for its maps)"),
    "show_tab": ActionSpec({"tab": Param(_choice(*TABS), True)}, "bring a tab of the window to the front"),
    "show_grid": ActionSpec({"kind": Param(_choice(*KINDS), True)}, "show one of the Playground's three grids"),
    "set_view": ActionSpec({"view": Param(_choice(*VIEWS), True)}, "pick what the maps show (waits for its maps)"),
    "reset_masks": ActionSpec({}, "press Reset masks (default masks, no painted cell; waits for its maps)"),
    "restore_heads": ActionSpec({}, "press Restore all heads (waits for its maps)"),
    "set_heads_sequences": ActionSpec(
        {"n": Param(_sequences, True)}, "set the Heads tab's Sequences (how many each head is scored on)"
    ),
    "set_training_steps": ActionSpec({"steps": Param(_training_steps, True)}, "set the Trainer's Steps field"),
    "open_large": ActionSpec(
        {"kind": Param(_choice(*KINDS), True), "layer": Param(_counted, True), "head": Param(_counted, True)},
        "open one map of a Playground grid large, as a click on it does (cells big enough to rest the mouse on)",
    ),
}

_MAP_FILTER = {"kind": Param(_choice(*KINDS), True), "layer": Param(_counted), "head": Param(_counted)}
_MAP_PAYLOAD = {"map": str, "layer": int, "head": str}  # "L2 H2" (or "L2 avg"), 2, "2" (or "avg")
# the Prediction line above the grids, the expected output under Input, and how many of its positions differ
_OUTPUT_PAYLOAD = {"prediction": str, "expected": str, "wrong": int}
MASK_BOXES = ("encoder_padding", "decoder_causal", "decoder_padding", "cross_padding")  # the Masks checkboxes

EVENTS: dict[str, EventSpec] = {
    "cell_hovered": EventSpec(
        {**_MAP_FILTER, "key_minus_query": Param(_whole), "query_token": Param(_choice("symbol"))},
        {
            **_MAP_PAYLOAD,
            "query": int,
            "key": int,
            "query_token": str,
            "key_token": str,
            "weight": float,
            "row_sum": float,
            "readout": str,
        },
        "the mouse rests on an unmasked cell of a Playground grid; the numbers are the ones shown",
    ),
    "map_clicked": EventSpec(dict(_MAP_FILTER), dict(_MAP_PAYLOAD), "a map of a Playground grid was clicked"),
    "source_typed": EventSpec(
        {"text": Param(_text)},
        {"typed": str, **_OUTPUT_PAYLOAD},
        "the learner typed into the Source field and its maps were drawn",
    ),
    "head_ablated": EventSpec(
        dict(_MAP_FILTER),
        {**_MAP_PAYLOAD, **_OUTPUT_PAYLOAD},
        "a head was switched off (a map's right-click menu: Ablate L2 H2 (cross) …) and the maps were drawn again",
    ),
    "heads_analysed": EventSpec(
        {"kind": Param(_choice(*KINDS), True), "layer": Param(_counted, True), "head": Param(_counted, True)},
        {
            **_MAP_PAYLOAD,
            "delta_exact_match": float,
            "delta_loss": float,
            "baseline_exact_match": float,
            "top_map": str,  # the head of the kind whose removal costs the most exact match ("L2 H2")
            "top_delta_exact_match": float,
        },
        "the Heads tab's analysis finished; the numbers of one head's cell as its table shows them, and the head of "
        "that kind that matters most",
    ),
    "mask_toggled": EventSpec(
        {"mask": Param(_choice(*MASK_BOXES), True)},
        {"state": str, "hidden": int, **_OUTPUT_PAYLOAD},
        "a mask checkbox of the Masks section was switched and the maps were drawn again",
    ),
    "cell_painted": EventSpec(
        {"kind": Param(_choice(*KINDS), True)},
        {"painted": int, **_OUTPUT_PAYLOAD},
        "cells were painted (masked) in a large view and the maps were drawn again",
    ),
    "cell_opened": EventSpec(
        {"kind": Param(_choice(*KINDS), True), "cell": Param(_choice("visible"))},  # "visible": not a masked one
        {
            **_MAP_PAYLOAD,
            "query": int,
            "key": int,
            "dot": float,
            "sqrt_d": float,
            "scaled": float,
            "hidden": int,
            "row_keys": int,
            "weight": float,
        },
        "a cell was clicked in a large view and its panel took it apart",
    ),
    "tab_shown": EventSpec(
        {"tab": Param(_choice(*TABS), True)}, {"tab": str}, "the learner brought a tab to the front"
    ),
    "length_probe_shown": EventSpec(
        {}, {"length": int, "caption": str}, "the Length lab drew both models' maps for one length"
    ),
    "training_finished": EventSpec(
        {},
        {"steps": int, "formed": str, "state": str},
        "a training run ended (its steps done, or Stop); what the Trainer shows then",
    ),
    "patching_done": EventSpec(
        {"kind": Param(_choice(*KINDS), True), "layer": Param(_counted, True), "head": Param(_counted, True)},
        {**_MAP_PAYLOAD, "effect": float, "clean": str, "corrupt": str},
        "the Causal tab's patching finished; one head's effect as its table shows it",
    ),
    "attribution_done": EventSpec(
        {"method": Param(_choice(*ATTRIBUTION_METHODS), True), "view": Param(_text, True)},
        {"agreement": str, "method_title": str, "view_title": str, "analysed": str},
        "the Lens and attribution page finished; one cell of its agreement table (a method against an attention "
        'view such as "cross L2" or "rollout") as drawn',
    ),
}

LIVE_VALUES: dict[str, type] = {"model": str, "source": str}  # every explanation may use these
HIGHLIGHTS = (
    "playground.encoder_self",
    "playground.decoder_self",
    "playground.cross",
    "playground.grid_tabs",
    "playground.source",
    "playground.view",
    "playground.prediction",
    "playground.masks",
    "playground.model",
    "playground.restore_heads",
    "heads.analyse",
    "heads.importance",
    "trainer.scratch",
    "trainer.forming",
    "lengthlab.repeat",
    "causal.patch",
    "causal.heads",
    "causal.attribute",
)
SAMPLES: dict[type, object] = {str: "x", int: 1, float: 0.5}  # a format spec is tried on these at load time
