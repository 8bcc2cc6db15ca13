"""A grid's maps as shown, copied for the matrix exports, and the tasks that write them (numpy and files, no Qt).

The copy is taken on the GUI thread, so File › Export can write it on a pool thread while new maps arrive: a folder
of CSV files for a large model at a long input is thousands of maps, seconds of formatting text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from visualizer.widgets.common.image_export import save_matrices_npy, save_matrix_csv

if TYPE_CHECKING:
    from visualizer.state.worker_api import TaskStateApi


@dataclass(frozen=True)
class ShownMatrices:
    """Every map of one grid as shown: NaN where blank, each layer's head average after its heads."""

    kind: str  # "encoder_self", "decoder_self" or "cross": the files' names start with it
    shown: np.ndarray  # (L, H + 1, Tq, Tk) float32, a copy nobody else writes
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]

    @property
    def heads(self) -> np.ndarray:
        """(L, H, Tq, Tk): the heads alone (the average is a mean of them, left out of the NPY file)."""
        return self.shown[:, :-1]

    def csv_files(self) -> list[tuple[str, np.ndarray]]:
        """(file name, one (Tq, Tk) map) for every map, layer by layer, each layer's average after its heads."""
        n_layers, columns = self.shown.shape[:2]
        files = []
        for layer in range(n_layers):
            for column in range(columns):
                head = "avg" if column == columns - 1 else f"H{column + 1}"
                files.append((f"{self.kind}_L{layer + 1}_{head}.csv", self.shown[layer, column]))
        return files


@dataclass(frozen=True)
class ExportProgress:
    """How far a matrix export is: `done` of `total` files written."""

    done: int
    total: int


def write_npy(state: TaskStateApi, path: Path, matrices: ShownMatrices) -> list[Path]:
    """Every head as one (L, H, Tq, Tk) float32 array in one NPY file."""
    state.check()
    return [save_matrices_npy(path, matrices.heads)]


def write_csv_folder(state: TaskStateApi, folder: Path, matrices: ShownMatrices) -> list[Path]:
    """One CSV file per map in `folder`, each written whole or not at all; stops between files when cancelled."""
    files = matrices.csv_files()
    written: list[Path] = []
    for name, matrix in files:
        state.step(ExportProgress(len(written), len(files)))
        written.append(save_matrix_csv(folder / name, matrix, matrices.query_labels, matrices.key_labels))
    return written
