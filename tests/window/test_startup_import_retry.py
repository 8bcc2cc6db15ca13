"""Start-up imports core_model on the loader thread while the preload thread imports the tabs: when Python breaks an
import deadlock between them by raising in the loader, the loader imports again instead of failing the start."""

from __future__ import annotations

import importlib
from importlib._bootstrap import _DeadlockError  # type: ignore[attr-defined]

import pytest

from visualizer.workers import loader


def test_an_import_deadlock_is_tried_again_and_the_module_arrives(monkeypatch):
    real, calls = importlib.import_module, []

    def import_module(name: str):
        calls.append(name)
        if calls.count(name) == 1 and name == "core_model.checkpoint":  # what importlib raises in the losing thread
            raise _DeadlockError("deadlock detected by _ModuleLock('core_model.model') at 140201311677008")
        return real(name)

    monkeypatch.setattr(importlib, "import_module", import_module)
    loader.import_beside_preload(loader.CORE_MODULES)
    assert calls.count("core_model.checkpoint") == 2 and calls.count("core_model") == 1


def test_any_other_failure_or_a_deadlock_every_time_is_raised(monkeypatch):
    calls: list[str] = []

    def always(error: RuntimeError):
        def import_module(name: str):
            calls.append(name)
            raise error

        return import_module

    monkeypatch.setattr(importlib, "import_module", always(RuntimeError("CUDA driver too old: deadlock ahead")))
    with pytest.raises(RuntimeError, match="CUDA"):
        loader.import_beside_preload(["core_model"])
    assert calls == ["core_model"]  # tried once: an error whose text says "deadlock" is not importlib's deadlock
    monkeypatch.setattr(importlib, "import_module", always(_DeadlockError("deadlock detected by _ModuleLock('x')")))
    with pytest.raises(RuntimeError, match="deadlock"):
        loader.import_beside_preload(["core_model"], attempts=3)
