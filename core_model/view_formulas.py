"""Each attention view's menu name, equation, meaning, citation and colour scale: the app's and the page's words.

Plain data (rich text with <sub>/<sup>), shared by the Qt view bar and the exported page so both say the same.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModeInfo:
    """What the bar says about one view: the menu entry, the equation, what it means, where it comes from."""

    label: str
    equation: str  # rich text
    meaning: str
    citation: str
    scale: str


MODE_INFO: dict[str, ModeInfo] = {
    "weights": ModeInfo(
        "Post-softmax weights",
        "a<sub>ij</sub> = softmax<sub>j</sub>(q<sub>i</sub>·k<sub>j</sub> / √d<sub>k</sub>)",
        "How much query i attends to key j; each row sums to 1.",
        "Vaswani et al. 2017, Attention Is All You Need, eq. 1",
        "colour scale 0 to 1",
    ),
    "scores": ModeInfo(
        "Pre-softmax scores",
        "s<sub>ij</sub> = q<sub>i</sub>·k<sub>j</sub> / √d<sub>k</sub>",
        "The raw similarity before softmax; only differences within a row matter. Masked cells (−∞) stay grey.",
        "Vaswani et al. 2017, §3.2.1",
        "diverging scale centred on 0",
    ),
    "norms": ModeInfo(
        "Norm-weighted ‖a·f(x)‖",
        "‖a<sub>ij</sub> f<sub>h</sub>(x<sub>j</sub>)‖, f<sub>h</sub>(x) = W<sub>O</sub><sup>h</sup>"
        "(W<sub>V</sub><sup>h</sup> x + b<sub>V</sub><sup>h</sup>)",
        "The length of what key j actually adds to query i through head h: a large weight on a short value vector "
        "moves little. The value bias is part of f; an ablated head adds nothing.",
        "Kobayashi et al. 2020, Attention is Not Only a Weight (EMNLP)",
        "colour scale 0 to the largest value",
    ),
    "rollout": ModeInfo(
        "Rollout across layers",
        "R<sup>l</sup> = Ã<sup>l</sup> R<sup>l−1</sup>, Ã = rownorm(0.5 Ā + 0.5 I), Ā = mean of the heads on",
        "Which input tokens flow into each position up to layer l, counting the residual path. The avg column is "
        "the rollout; a head column is the same step through that head alone. Decoder: one share per position "
        "over target tokens (Decoder self grid) and source tokens (Cross grid), which add up to 1; cross "
        "attention is routed through the encoder's rollout.",
        "Abnar & Zuidema 2020, Quantifying Attention Flow in Transformers (ACL); decoder: see "
        "core_model/attention_views.py",
        "colour scale 0 to the largest value",
    ),
}
