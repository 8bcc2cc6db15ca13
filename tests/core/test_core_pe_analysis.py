"""core_model.pe_analysis alone: the PE lab's numbers without Qt (what a notebook would call)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core_model.pe_analysis import PELabParams, compute_pe_lab

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_data_is_read_only_float64():
    data = compute_pe_lab(PELabParams())
    for array in (data.waveforms, data.matrix, data.rope_angles, data.similarity_sin, data.similarity_rope):
        assert array.dtype == np.float64 and not array.flags.writeable
    assert data.waveforms.shape == (100, 4) and data.rope_angles.shape == (100, 8)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("d_model", 7, "d_model must be even"),
        ("n_positions", 0, "n_positions must be between"),
        ("base", 1.0, "base must be a finite number > 1"),
        ("dims", (64,), "dimension must be between"),
        ("rope_vectors", "zeros", "rope_vectors must be one of"),
        ("pairs", (8,), "pair must be between 0 and 7"),
        ("pairs", (1, 1), "each pair may appear once"),
        ("pairs", tuple(range(13)), "at most 12 pairs"),
    ],
)
def test_invalid_params_name_the_field(field, value, message):
    with pytest.raises(ValueError, match=message):
        PELabParams(**{field: value})


def test_pe_analysis_loads_no_qt():
    code = "import core_model.pe_analysis, sys; print(any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules))"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "False"


def test_chosen_pairs_are_drawn_and_none_chosen_spreads_six_from_fastest_to_slowest():
    assert compute_pe_lab(PELabParams(head_dim=16, pairs=(5, 2))).rope_pairs == (5, 2)
    assert compute_pe_lab(PELabParams(head_dim=16)).rope_pairs == (0, 1, 3, 4, 6, 7)
    assert compute_pe_lab(PELabParams(head_dim=6)).rope_pairs == (0, 1, 2)
