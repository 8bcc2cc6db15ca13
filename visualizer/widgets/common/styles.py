"""The app's one warning look: dark amber text on a pale amber band, as the window's banner draws it."""

from __future__ import annotations

WARNING_TEXT = "#7a4b00"  # readable on white and on the band (contrast above 7:1)
WARNING_STYLE = f"color: {WARNING_TEXT}; background: #fff3cd; padding: 3px 6px;"
