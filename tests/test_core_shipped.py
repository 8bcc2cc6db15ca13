"""The shipped checkpoints: found, loadable, and recognised as read-only (only they, not their copies)."""
from __future__ import annotations

import shutil

from core_model.checkpoint import load_checkpoint
from core_model.shipped import SHIPPED_CHECKPOINTS, find_shipped_checkpoint, is_shipped, resource_path


def test_every_shipped_checkpoint_is_read_only_and_loads():
    for name in SHIPPED_CHECKPOINTS:
        path = resource_path(name)
        assert path.is_file() and is_shipped(path)
        found = find_shipped_checkpoint(load_checkpoint(path).config)
        assert found is not None and found[0] == path


def test_copies_and_neighbours_of_a_shipped_checkpoint_are_not_shipped(tmp_path):
    shipped = resource_path(SHIPPED_CHECKPOINTS[0])
    copy = tmp_path / shipped.name
    shutil.copy(shipped, copy)
    assert not is_shipped(copy)
    assert not is_shipped(shipped.parent / "my-own-model.pt")
    assert is_shipped(shipped.parent / "." / shipped.name)  # the same file, spelled differently
