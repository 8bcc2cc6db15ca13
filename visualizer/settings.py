"""User preferences through QSettings: what to restore at start and how to store it."""
from __future__ import annotations

import json
import logging
from dataclasses import asdict

from PySide6.QtCore import QSettings

log = logging.getLogger(__name__)


def load_json(settings: QSettings, key: str, default):
    """A JSON value stored under key, or default when absent or unreadable."""
    raw = settings.value(key)
    if raw is None:
        return default
    try:
        return json.loads(str(raw))
    except (TypeError, ValueError):
        log.warning("ignoring unreadable setting %s", key)
        return default


def save_json(settings: QSettings, key: str, value) -> None:
    settings.setValue(key, json.dumps(value))


def mask_spec_from_dict(data: dict):
    """A MaskSpec from stored settings; a bad entry falls back to the defaults."""
    from core_model import MaskSpec

    try:
        return MaskSpec(**data)
    except (TypeError, ValueError):
        return MaskSpec()


def mask_spec_to_dict(spec) -> dict:
    return asdict(spec)
