"""Shared test setup: headless Qt, isolated QSettings, one torch thread (the app's own setting)."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # without a display Qt would abort the run

import pytest
import torch

torch.set_num_threads(1)  # the app runs one thread; two starve each other on a busy 2-core machine


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, request):
    """Point QSettings at a temporary folder so tests never read or write the user's preferences."""
    if "qtbot" not in request.fixturenames and "qapp" not in request.fixturenames:
        yield
        return
    from PySide6.QtCore import QCoreApplication, QSettings

    QCoreApplication.setOrganizationName("AttentionPlaygroundTests")
    QCoreApplication.setApplicationName("AttentionPlaygroundTests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    yield
