"""Every event a lesson step can wait for, by the name a lesson file uses (vocabulary.EVENTS; a test holds them
together)."""

from __future__ import annotations

from visualizer.lessons.events import Connect, cell_hovered, map_clicked
from visualizer.lessons.events_labs import (
    attribution_done,
    heads_analysed,
    length_probe_shown,
    patching_done,
    tab_shown,
    training_finished,
)
from visualizer.lessons.events_play import cell_opened, cell_painted, head_ablated, mask_toggled, source_typed

EVENT_LISTENERS: dict[str, Connect] = {
    "cell_hovered": cell_hovered,
    "map_clicked": map_clicked,
    "source_typed": source_typed,
    "head_ablated": head_ablated,
    "heads_analysed": heads_analysed,
    "mask_toggled": mask_toggled,
    "cell_painted": cell_painted,
    "cell_opened": cell_opened,
    "tab_shown": tab_shown,
    "length_probe_shown": length_probe_shown,
    "training_finished": training_finished,
    "patching_done": patching_done,
    "attribution_done": attribution_done,
}
