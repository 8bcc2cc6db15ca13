"""Token text inside rich text: `<bos>`, `<eos>` and `<pad>` are tags to Qt's HTML and vanish unless escaped."""

from __future__ import annotations

import html


def escape(text: str) -> str:
    """Text made safe for a rich-text QLabel, tooltip, title or dialog (`<pad>` -> `&lt;pad&gt;`)."""
    return html.escape(str(text), quote=False)
