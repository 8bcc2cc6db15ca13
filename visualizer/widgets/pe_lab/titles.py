"""What the PE tab says about its plots: titles, legend entries with each curve's period, and a note under each
plot naming exactly which dimensions or pairs are drawn (and which are not) and how many positions share one pixel
when the plot is narrower than its positions (the curves then draw each pixel column's min–max)."""

from __future__ import annotations

import math

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from core_model.pe_analysis import PELabData

HIGHLIGHT = "#e69f00"
TITLES = {
    "waveforms": "Sinusoidal PE, {k} of {d} dimensions",
    "matrix": "Sinusoidal PE matrix (base {base:g})",
    "rope_angles": "RoPE angle m·θ<sub>i</sub>, θ<sub>i</sub> = base<sup>−2i/{hd}</sup>: {k} of {r} pairs",
    "similarity": "Similarity vs relative offset",
}
SIN_PLOTS, ROPE_PLOTS = ("waveforms", "matrix"), ("rope_angles",)
LINE_PLOTS = ("waveforms", "rope_angles", "similarity")
BAND_PIXELS = 6  # a 2 px line whose period is shorter than this many pixels fills its range: a solid band


def plot_title(name: str, data: PELabData) -> str:
    """The rich-text title of one plot (short: a pyqtgraph title never wraps, it widens the plot)."""
    p = data.params
    title = TITLES[name].format(
        base=p.base,
        hd=p.head_dim,
        k=len(p.dims) if name == "waveforms" else len(data.rope_pairs),
        d=p.d_model,
        r=p.head_dim // 2,
    )
    used = SIN_PLOTS if data.pe_kind == "sinusoidal" else ROPE_PLOTS if data.pe_kind == "rope" else ()
    return title + (f" <span style='color:{HIGHLIGHT}'>● loaded model</span>" if name in used else "")


def _numbers(values: tuple[int, ...]) -> str:
    """'0, 1, 3' as they are; a run of three or more as its ends ('8–31'): a 256-pair head hides 250 pairs."""
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][-1] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)


def drawn_note(name: str, data: PELabData) -> str:
    """Exactly which dimensions or pairs the curves are, and which are left out."""
    p = data.params
    if name == "waveforms":
        return f"Drawn: dimensions {_numbers(p.dims)} of 0–{p.d_model - 1} (the Dimensions box picks them)."
    if name == "rope_angles":
        pairs, n_pairs = data.rope_pairs, p.head_dim // 2
        hidden = tuple(i for i in range(n_pairs) if i not in pairs)
        left_out = f"; pair{'s' * (len(hidden) > 1)} {_numbers(hidden)} hidden" if hidden else ""
        return f"Drawn: pairs {_numbers(pairs)} of 0–{n_pairs - 1}{left_out} (the RoPE pairs box picks them)."
    return ""


def density_note(name: str, n_positions: int, pixels: float) -> str:
    """When a plot has fewer pixels than positions: what one pixel shows."""
    if pixels <= 0 or n_positions <= pixels:
        return ""
    per_pixel = n_positions / pixels
    if name == "matrix":
        return f"{n_positions} positions in {pixels:.0f} px rows: each pixel row averages ~{per_pixel:.0f}."
    if name == "similarity":
        return (
            f"{n_positions} offsets in {pixels:.0f} px: each pixel column shows the min–max of ~{per_pixel:.0f} "
            "offsets (the band is the curve's range there; zoom in with the mouse wheel to see each offset)."
        )
    return (
        f"{n_positions} positions in {pixels:.0f} px: each pixel column shows the min–max of ~{per_pixel:.0f}, "
        f"so a curve with a period under ~{BAND_PIXELS * per_pixel:.0f} positions ({BAND_PIXELS} px) draws as a "
        "solid band (zoom in with the mouse wheel to see it)."
    )


def plot_note(name: str, data: PELabData, pixels: float) -> str:
    """The line under a plot: what is drawn, and what a pixel stands for."""
    return " ".join(t for t in (drawn_note(name, data), density_note(name, data.params.n_positions, pixels)) if t)


def period(index: int, width: int, base: float) -> float:
    """Positions per turn of frequency base^(−2i/width): 2π base^(2i/width)."""
    return 2 * math.pi * base ** (2 * index / width)


def _positions(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def dim_label(dim: int, data: PELabData) -> str:
    p = data.params
    return f"dim {dim} ({'sin' if dim % 2 == 0 else 'cos'}, period {_positions(period(dim // 2, p.d_model, p.base))})"


def pair_label(pair: int, data: PELabData) -> str:
    p = data.params
    return f"pair {pair} (period {_positions(period(pair, p.head_dim, p.base))})"


def with_note(view: QWidget, name: str) -> tuple[QWidget, QLabel]:
    """The plot with its note below: a QLabel wraps, where a longer pyqtgraph title would widen the plot."""
    note = QLabel()
    note.setObjectName(name)
    note.setWordWrap(True)
    note.setStyleSheet("color: #444; font-size: 8pt;")
    cell = QWidget()
    box = QVBoxLayout(cell)
    box.setContentsMargins(0, 0, 0, 0)
    box.setSpacing(2)
    box.addWidget(view, 1)
    box.addWidget(note)
    return cell, note
