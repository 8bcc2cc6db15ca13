"""File › Export › Interactive page…: the Playground's input and view written as the shared HTML page.

The page holds what `attention-playground page` writes for the same model, source, view and pads. It cannot hold
every state of the Playground (switched-off heads, changed masks, a stepped decoder), so those are named in the
status line when the page is written instead of being silently dropped. The page is built off the GUI thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from core_model import Seq2SeqTransformer
from core_model.masks import MaskSpec
from core_model.tasks import TaskSpec
from visualizer.state.playground import PlaygroundSession
from visualizer.widgets.common.plain_message import show_plain_message
from visualizer.workers.tasks import TaskSlot, run_task

log = logging.getLogger(__name__)
DIALOG = QFileDialog.Option.DontUseNativeDialog


@dataclass(frozen=True)
class PageInput:
    """What the page is built from, read on the GUI thread; `left_out` names what the Playground shows beyond it."""

    model: Seq2SeqTransformer
    task: TaskSpec
    source: str
    view: str
    pads: int
    left_out: tuple[str, ...]


def page_input(session: PlaygroundSession) -> PageInput | None:
    """The input the Playground's maps show (its last accepted source), or None when there is none."""
    if not session.source_text:
        return None
    left_out = []
    if session.head_gates() is not None:
        left_out.append("the switched-off heads")
    if session.masks != MaskSpec():
        left_out.append("the changed masks")
    if session.decode_snapshot().stepping or session.target_prefix:
        left_out.append("the stepped decoder (the page feeds the expected output)")
    return PageInput(
        session.hub.model, session.hub.task, session.source_text, session.mode, session.extra_pads, tuple(left_out)
    )


def write_page(inp: PageInput, path: Path) -> int:
    """Build and write the page (slow: a forward pass and the HTML); returns its size in bytes."""
    from core_model.page import build_page, save_page

    return save_page(build_page(inp.model, inp.task, inp.source, inp.view, inp.pads), path)


def status_text(inp: PageInput, path: Path, size: int) -> str:
    """The status line after writing: the file, what it shows, and what it leaves out."""
    amount = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{max(1, round(size / 1e3))} kB"
    text = f"Exported {path} ({amount}): source {inp.source!r}, {inp.view} view, {inp.pads} pads"
    if inp.left_out:
        text += "; the page shows every head and mask on, so it leaves out " + ", ".join(inp.left_out)
    return text


class PageExport(QObject):
    """Asks where to write, writes in the background, reports in the status line (a warning when it failed)."""

    def __init__(self, current: Callable[[], PageInput | None], status: Callable[[str], None], parent: QWidget) -> None:
        super().__init__(parent)
        self._current, self._status, self._parent = current, status, parent
        self.job: TaskSlot | None = None  # the write in progress, if any

    def export(self, path: Path | None = None) -> None:
        """Write the page for the Playground's input (asks for a path when none is given)."""
        inp = self._current()
        if inp is None:
            self._status("Nothing to export: type a valid source in the Playground first.")
            return
        if path is None:
            chosen, _ = QFileDialog.getSaveFileName(
                self._parent,
                "Export the interactive page",
                f"attention-{inp.view}.html",
                "HTML page (*.html)",
                options=DIALOG,
            )
            if not chosen:
                return
            path = Path(chosen)
        if path.suffix.lower() not in (".html", ".htm"):
            path = path.with_name(path.name + ".html")
        self._status(f"Writing the interactive page {path.name}…")
        self.job = run_task(
            "Writing the interactive page",
            lambda: write_page(inp, path),
            lambda size: self._done(inp, path, size),
            lambda line: self._failed(path, line),
        )

    def _done(self, inp: PageInput, path: Path, size: int) -> None:
        self.job = None
        self._status(status_text(inp, path, size))

    def _failed(self, path: Path, line: str) -> None:
        self.job = None
        log.warning("could not write %s: %s", path, line)
        show_plain_message(self._parent, QMessageBox.Icon.Warning, "Export failed", f"Could not write {path}: {line}")
