"""Token text inside rich text: `<bos>`, `<eos>` and `<pad>` are tags to Qt's HTML and vanish unless escaped."""

from __future__ import annotations

import html
from collections.abc import Iterable


def escape(text: str) -> str:
    """Text made safe for a rich-text QLabel, tooltip, title or dialog (`<pad>` -> `&lt;pad&gt;`)."""
    return html.escape(str(text), quote=False)


def tokens_html(tokens: Iterable[str], sep: str = " ") -> str:
    """Tokens joined and escaped for rich text."""
    return escape(sep.join(str(t) for t in tokens))
