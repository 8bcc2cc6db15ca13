"""Start-up imports core_model on the loader thread while the preload thread imports the tabs: when Python breaks an
import deadlock between them by raising in the loader, the loader imports again instead of failing the start."""

from __future__ import annotations

import importlib

import pytest

from visualizer.workers import loader


def test_an_import_deadlock_is_tried_again_and_the_module_arrives(monkeypatch):
    real, calls = importlib.import_module, []

    def import_module(name: str):
        calls.append(name)
        if calls.count(name) == 1 and name == "core_model.checkpoint":  # what importlib raises in the losing thread
            raise RuntimeError("deadlock detected by _ModuleLock('core_model.model') at 140201311677008")
        return real(name)

    monkeypatch.setattr(importlib, "import_module", import_module)
    loader.import_beside_preload(loader.CORE_MODULES)
    assert calls.count("core_model.checkpoint") == 2 and calls.count("core_model") == 1


def test_any_other_failure_or_a_deadlock_every_time_is_raised(monkeypatch):
    def always(message: str):
        def import_module(_name: str):
            raise RuntimeError(message)

        return import_module

    monkeypatch.setattr(importlib, "import_module", always("CUDA driver too old"))
    with pytest.raises(RuntimeError, match="CUDA"):
        loader.import_beside_preload(["core_model"])
    monkeypatch.setattr(importlib, "import_module", always("deadlock detected by _ModuleLock('x')"))
    with pytest.raises(RuntimeError, match="deadlock"):
        loader.import_beside_preload(["core_model"], attempts=3)
