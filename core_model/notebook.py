"""The interactive page inline in a Jupyter notebook, and its numbers as plain data to compute with.

`show_attention(model, task, "3141")` returns an AttentionPage; as a cell's last expression Jupyter shows it as the
same page `attention-playground page` writes (core_model.page), inside an <iframe srcdoc="...">. The frame keeps the
page's script, CSS and element ids apart from the notebook's and from any other page in the same notebook, and its
sandbox lets the script run without reaching the notebook. `.data` holds page_data's numbers (exactly `views
--json`'s for the same inputs) and `.save(path)` writes the standalone page. Pure Python: no Qt, no Jupyter import.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint import load_checkpoint
from .model import Seq2SeqTransformer
from .page import render_page, save_page
from .page_data import page_data
from .tasks import TaskSpec
from .vocab import VocabularyError

FRAME_HEIGHT_PX = 860  # about one laptop screen: the page scrolls inside, so its sticky read-out stays in sight
FRAME_STYLE = "width: 100%; height: {height}px; border: 1px solid #ccc; border-radius: 4px; box-sizing: border-box;"


@dataclass(frozen=True, repr=False)
class AttentionPage:
    """One input's attention in one view: the page's numbers (`data`) and its standalone HTML (`html`).

    `height` is the inline frame's height in pixels; the page is usually taller and scrolls inside the frame, so
    the hover read-out (pinned to the frame's top) and the enlarged map (centred in the frame) stay visible while
    the pointer is on any map. Pass a larger height to see the whole page without scrolling inside it.
    """

    data: dict[str, Any]
    html: str
    height: int = FRAME_HEIGHT_PX

    def __post_init__(self) -> None:
        if isinstance(self.height, bool) or not isinstance(self.height, int) or self.height < 1:
            raise ValueError(f"height must be a whole number of pixels, at least 1, got {self.height!r}")

    @classmethod
    def from_data(cls, data: dict[str, Any], height: int = FRAME_HEIGHT_PX) -> AttentionPage:
        """A page for numbers page_data built (the HTML is rendered once, here)."""
        return cls(data=data, html=render_page(data), height=height)

    @classmethod
    def from_model(
        cls, model: Seq2SeqTransformer, task: TaskSpec, source: str, view: str = "weights", pads: int = 2
    ) -> AttentionPage:
        """The page for `source` as `attention-playground page` builds it (see show_attention for the errors)."""
        return cls.from_data(checked_page_data(model, task, source, view, pads))

    @classmethod
    def from_checkpoint(
        cls, path: str | os.PathLike, source: str, view: str = "weights", pads: int = 2
    ) -> AttentionPage:
        """The page for a checkpoint file's model and task, on the CPU (as the page verb's default)."""
        model, task = load_model(path)
        return cls.from_model(model, task, source, view, pads)

    def __repr__(self) -> str:
        """A one-line summary: the default repr would print the whole page and every number."""
        return (
            f"AttentionPage(view={self.view!r}, source={self.source!r}, task={self.data['model']['task']['task']!r}, "
            f"bytes={len(self.html.encode('utf-8'))}, height={self.height})"
        )

    @property
    def view(self) -> str:
        """The view the maps show: weights, scores, norms or rollout."""
        return str(self.data["view"])

    @property
    def source(self) -> str:
        """The source text the page was built for."""
        return str(self.data["source"])

    def _repr_html_(self) -> str:
        """Jupyter's inline display: the page isolated in a sandboxed frame, so two pages never share ids or CSS."""
        title = f"Attention: {self.data['info']['label']} on '{self.source}'"
        return (
            f'<iframe srcdoc="{html.escape(self.html, quote=True)}" title="{html.escape(title, quote=True)}" '
            f'sandbox="allow-scripts" style="{FRAME_STYLE.format(height=self.height)}"></iframe>'
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Write the standalone page to `path` through a temporary renamed over it: never a partial file.

        Returns the path written. Raises OSError (RefusedTarget for a folder or a read-only file) when it cannot.
        """
        save_page(self.html, path)
        return Path(path)


def load_model(path: str | os.PathLike, device: str = "cpu") -> tuple[Seq2SeqTransformer, TaskSpec]:
    """A checkpoint's model, ready to evaluate, and the task it was trained on: load once, show many pages."""
    checkpoint = load_checkpoint(path)
    return checkpoint.build(device).eval(), checkpoint.task


def checked_page_data(model: Seq2SeqTransformer, task: TaskSpec, source: str, view: str, pads: int) -> dict:
    """page_data with the page verb's checks, each a ValueError whose message names the bad input."""
    if isinstance(pads, bool) or not isinstance(pads, int) or pads < 0:
        raise ValueError(f"pads must be a whole number, 0 or more, got {pads!r}")
    try:
        return page_data(model, task, source, view, pads)
    except VocabularyError as exc:  # a 1-based position, as the page verb reports it
        raise ValueError(f"source: {exc.counted_from_one()}") from None


def show_attention(
    model: Seq2SeqTransformer, task: TaskSpec, source: str, view: str = "weights", pads: int = 2
) -> AttentionPage:
    """The interactive page of `model` on `source` in `view`, shown inline when it is a cell's last expression.

    The input is the page verb's: source + `pads` <pad>s, the teacher-forced expected output, every mask on.
    Raises ValueError for an unknown view, an unknown symbol, a negative `pads` or a source the model cannot take.
    """
    return AttentionPage.from_model(model, task, source, view, pads)
